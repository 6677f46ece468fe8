"""Collectives of compiled HLO read back as mesh axes: replica groups as the axes they run
over, device ids from the mesh's devices."""

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.features.meshes import meshcollectives, meshexamples, meshplacement
from pmapviz.features.meshes.meshspecs import Mesh

MESH = Mesh((2, 4), ("data", "model"))


def _shard_map_hlo(fn, mesh_devices, in_spec, out_spec, shape=(16, 8)):
    m = meshplacement.jax_mesh(MESH, mesh_devices)
    mapped = jax.shard_map(fn, mesh=m, in_specs=P(*in_spec), out_specs=P(*out_spec))
    x = jax.device_put(np.ones(shape, np.float32), NamedSharding(m, P(*in_spec)))
    return m, jax.jit(mapped).lower(x).compile().as_text()


def test_psum_over_model_is_two_groups_of_four():
    m, text = _shard_map_hlo(
        lambda x: jax.lax.psum(x, "model"), jax.devices(), ("data", "model"), ("data", None)
    )
    (c,) = meshcollectives.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("model",), 2, 4)
    assert c.device_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert "over model: 2 groups of 4" in c.sentence
    assert [x.key() for x in meshcollectives.collectives_on_axes(MESH, text)] == [c.key()]


def test_psum_over_data_is_four_groups_of_two():
    m, text = _shard_map_hlo(
        lambda x: jax.lax.psum(x, "data"), jax.devices(), ("data", "model"), (None, "model")
    )
    (c,) = meshcollectives.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("data",), 4, 2)
    assert c.device_groups == ((0, 4), (1, 5), (2, 6), (3, 7))


def test_all_gather_over_data():
    def gather(x):
        return jax.lax.all_gather(x, "data", axis=0, tiled=True, to="invarying")

    m, text = _shard_map_hlo(gather, jax.devices(), ("data", "model"), (None, "model"))
    found = meshcollectives.collectives_on_axes(m, text)
    assert [c.key() for c in found] == [("all-gather", ("data",), 4, 2)]


def test_psum_over_both_axes_is_all_devices():
    m, text = _shard_map_hlo(
        lambda x: jax.lax.psum(x, ("data", "model")), jax.devices(), ("data", "model"), ()
    )
    (c,) = meshcollectives.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("data", "model"), 1, 8)
    assert "over data, model" in c.sentence and "all devices" in c.sentence


def test_device_ids_come_from_the_mesh_devices_array():
    """HLO numbers devices by their place in the mesh; ids come from the mesh's devices."""
    m, text = _shard_map_hlo(
        lambda x: jax.lax.psum(x, "model"), jax.devices()[::-1], ("data", "model"), ("data", None)
    )
    (c,) = meshcollectives.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("model",), 2, 4)
    assert c.device_groups == ((7, 6, 5, 4), (3, 2, 1, 0))


def test_the_global_matmul_psum_reduces_over_model():
    e = meshexamples.EXAMPLE["matmul_psum"]
    m = meshplacement.jax_mesh(e.mesh, jax.devices())
    x, w = (
        jax.device_put(a, NamedSharding(m, P(*s)))
        for a, s in zip(e.args(), e.in_specs, strict=True)
    )
    with jax.set_mesh(m):
        text = jax.jit(e.global_fn).lower(x, w).compile().as_text()
    keys = [c.key() for c in meshcollectives.collectives_on_axes(m, text)]
    assert ("all-reduce", ("model",), 2, 4) in keys


@pytest.mark.parametrize(
    "groups, axes",
    [
        ([[0, 1, 2, 3], [4, 5, 6, 7]], ("model",)),
        ([[0, 4], [1, 5], [2, 6], [3, 7]], ("data",)),
        ([list(range(8))], ("data", "model")),
        ([[k] for k in range(8)], ()),
        ([[0, 1], [2, 3], [4, 5], [6, 7]], None),  # half of a model row: a sub-axis
        ([[0, 5], [1, 4], [2, 7], [3, 6]], None),  # diagonal
        ([[0, 1, 2, 3]], None),  # not every device
    ],
)
def test_group_axes(groups, axes):
    assert meshcollectives.group_axes(groups, MESH.names, MESH.shape) == axes
