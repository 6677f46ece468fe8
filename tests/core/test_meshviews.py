"""pmapviz.meshviews: a function run globally (jit with shardings) and per device (shard_map)
agrees with one device; blocks land where meshspecs.place says; replica groups read as axes."""

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz import meshspecs, meshviews
from pmapviz.meshspecs import Mesh

MESH = Mesh((2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def results():
    return {e.key: meshviews.run_example(e, repeat=2) for e in meshviews.EXAMPLES}


@pytest.mark.parametrize("key", [e.key for e in meshviews.EXAMPLES])
def test_both_views_agree_with_one_device(results, key):
    example = meshviews.EXAMPLE[key]
    glob, local = results[key]
    want = meshviews.one_device(example.global_fn, example.mesh, example.args())
    for r in (glob, local):
        assert r.shape == want.shape and r.dtype == "float32"
        assert r.max_abs_diff < 1e-4, r.summary()
        assert len(r.times_s) == 2 and r.median_s > 0
    assert (glob.view, local.view) == ("global", "per-device")


@pytest.mark.parametrize("key", [e.key for e in meshviews.EXAMPLES])
def test_blocks_are_where_meshes_place_says(results, key):
    example = meshviews.EXAMPLE[key]
    placed = meshspecs.place(example.mesh, results[key][0].shape, example.out_spec)
    where = {b.device: b.index for b in placed.blocks}
    for r in results[key]:
        assert len(r.blocks) == example.mesh.devices
        assert {b.shape for b in r.blocks} == {placed.local_shape}
        assert {b.device: b.index for b in r.blocks} == where


def test_a_wrong_local_function_is_caught():
    """Forgetting the psum leaves a partial sum on each device: the check sees it."""
    e = meshviews.EXAMPLE["matmul_psum"]
    r = meshviews.run_per_device(lambda x, w: jax.lax.pmax(x @ w, "model"), e.mesh, e.args(),
                               e.in_specs, e.out_spec, repeat=1,
                               reference=e.global_fn)  # fmt: skip
    assert r.max_abs_diff > 0.1


def test_too_few_devices_is_said():
    with pytest.raises(ValueError, match="needs 16 devices"):
        meshviews.run_global(lambda x: x, Mesh((4, 4), ("a", "b")), [np.ones(4)], [()], ())


def _shard_map_hlo(fn, mesh_devices, in_spec, out_spec, shape=(16, 8)):
    m = meshspecs.jax_mesh(MESH, mesh_devices)
    mapped = jax.shard_map(fn, mesh=m, in_specs=P(*in_spec), out_specs=P(*out_spec))
    x = jax.device_put(np.ones(shape, np.float32), NamedSharding(m, P(*in_spec)))
    return m, jax.jit(mapped).lower(x).compile().as_text()


def test_psum_over_model_is_two_groups_of_four():
    m, text = _shard_map_hlo(lambda x: jax.lax.psum(x, "model"), jax.devices(),
                             ("data", "model"), ("data", None))  # fmt: skip
    (c,) = meshviews.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("model",), 2, 4)
    assert c.device_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert "over model: 2 groups of 4" in c.sentence
    assert [x.key() for x in meshviews.collectives_on_axes(MESH, text)] == [c.key()]


def test_psum_over_data_is_four_groups_of_two():
    m, text = _shard_map_hlo(lambda x: jax.lax.psum(x, "data"), jax.devices(),
                             ("data", "model"), (None, "model"))  # fmt: skip
    (c,) = meshviews.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("data",), 4, 2)
    assert c.device_groups == ((0, 4), (1, 5), (2, 6), (3, 7))


def test_all_gather_over_data():
    def gather(x):
        return jax.lax.all_gather(x, "data", axis=0, tiled=True, to="invarying")

    m, text = _shard_map_hlo(gather, jax.devices(), ("data", "model"), (None, "model"))
    found = meshviews.collectives_on_axes(m, text)
    assert [c.key() for c in found] == [("all-gather", ("data",), 4, 2)]


def test_psum_over_both_axes_is_all_devices():
    m, text = _shard_map_hlo(lambda x: jax.lax.psum(x, ("data", "model")), jax.devices(),
                             ("data", "model"), ())  # fmt: skip
    (c,) = meshviews.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("data", "model"), 1, 8)
    assert "over data, model" in c.sentence and "all devices" in c.sentence


def test_device_ids_come_from_the_mesh_devices_array():
    """HLO numbers devices by their place in the mesh; ids come from the mesh's devices."""
    m, text = _shard_map_hlo(lambda x: jax.lax.psum(x, "model"), jax.devices()[::-1],
                             ("data", "model"), ("data", None))  # fmt: skip
    (c,) = meshviews.collectives_on_axes(m, text)
    assert c.key() == ("all-reduce", ("model",), 2, 4)
    assert c.device_groups == ((7, 6, 5, 4), (3, 2, 1, 0))


def test_the_global_matmul_psum_reduces_over_model():
    e = meshviews.EXAMPLE["matmul_psum"]
    m = meshspecs.jax_mesh(e.mesh, jax.devices())
    x, w = (jax.device_put(a, NamedSharding(m, P(*s)))
            for a, s in zip(e.args(), e.in_specs, strict=True))  # fmt: skip
    with jax.set_mesh(m):
        text = jax.jit(e.global_fn).lower(x, w).compile().as_text()
    keys = [c.key() for c in meshviews.collectives_on_axes(m, text)]
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
    assert meshviews.group_axes(groups, MESH.names, MESH.shape) == axes


def test_the_mesh_sweep_runs_both_views_on_every_shape_and_names_the_collectives():
    assert meshviews.sweep_shapes(8) == [(1, 8), (2, 4), (4, 2), (8, 1)]
    rows = meshviews.mesh_sweep(meshviews.EXAMPLE["matmul_psum"], repeat=2)
    assert [(r["mesh"], r["view"]) for r in rows] == [
        (m, v) for m in ("1 x 8", "2 x 4", "4 x 2", "8 x 1") for v in ("global", "per-device")
    ]
    assert all(r["agrees"] and r["median ms"] > 0 for r in rows)
    by_mesh = {r["mesh"]: r["collectives"] for r in rows if r["view"] == "per-device"}
    assert by_mesh["2 x 4"].startswith("all-reduce over model: 2 groups of 4")
    # model has one device: XLA still emits the all-reduce, over groups of one (a no-op)
    assert by_mesh["8 x 1"].startswith("all-reduce within each device alone (8 groups of 1)")


def test_a_mesh_shape_the_arrays_do_not_divide_is_listed_not_run():
    ex = meshviews.EXAMPLE["column_sums"]  # x (16, 8) as P('data', 'model')
    (row,) = meshviews.mesh_sweep(ex, shapes=[(1, 16)], repeat=1)  # model=16 splits 8 columns
    assert row["view"] == "-" and row["median ms"] is None
    assert "16 does not divide 8" in row["collectives"]


def test_device_memory_is_xla_s_plan_or_nothing_where_the_backend_has_none():
    class NoAnalysis:
        def memory_analysis(self):
            raise NotImplementedError

    class NoneAnalysis:
        def memory_analysis(self):
            return None

    assert meshviews.device_memory(NoAnalysis()) == () == meshviews.device_memory(NoneAnalysis())
    m = meshspecs.jax_mesh(MESH, jax.devices()[:8])
    x = jax.ShapeDtypeStruct((8, 16), np.float32, sharding=NamedSharding(m, P("data", "model")))
    compiled = jax.jit(lambda a: a * 2).lower(x).compile()
    parts = dict(meshviews.device_memory(compiled))
    assert parts["arguments"] == parts["output"] == 4 * 4 * 4  # each device's (4, 4) block
