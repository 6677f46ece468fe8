"""Where each block goes: the problems found are exactly what JAX refuses, and the placement
is NamedSharding's (devices_indices_map), and the planned arithmetic matches it for every mesh
this process has."""

import math

import jax
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding, PartitionSpec

from pmapviz.features.meshes import meshplacement, meshspecs
from pmapviz.features.meshes.meshspecs import Mesh
from tests.conftest import TEST_DEVICES

DATA_MODEL = Mesh((2, 4), ("data", "model"))


def _jax_refuses(mesh: Mesh, shape, spec) -> bool:
    """What JAX itself says: the constructor, the rank check and shard_shape."""
    m = meshplacement.jax_mesh(mesh, jax.devices())
    try:
        s = NamedSharding(m, PartitionSpec(*spec))
        s.check_compatible_aval(tuple(shape))
        s.shard_shape(tuple(shape))
    except Exception:  # noqa: BLE001  (any refusal counts)
        return True
    return False


MESHES = [
    Mesh(s, n)
    for s, n in (
        ((8,), ("x",)),
        ((2, 4), ("data", "model")),
        ((4, 2), ("data", "model")),
        ((2, 2, 2), ("a", "b", "c")),
        ((1, 8), ("data", "model")),
    )
]


@st.composite
def cases(draw):
    mesh = draw(st.sampled_from(MESHES))
    shape = tuple(
        draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]), min_size=0, max_size=3))
    )
    names = [*mesh.names, "other"]
    entry = st.one_of(
        st.none(),
        st.sampled_from(names),
        st.lists(st.sampled_from(names), min_size=1, max_size=3).map(tuple),
    )
    spec = tuple(draw(st.lists(entry, max_size=len(shape) + 1)))
    return mesh, shape, spec


@settings(max_examples=150, deadline=None)
@given(cases())
def test_problems_are_exactly_what_jax_refuses_and_placement_is_jaxs(case):
    mesh, shape, spec = case
    typed = meshspecs.parse_spec(meshspecs.spec_text(spec))  # as a person would type it
    found = meshspecs.problems(mesh, shape, typed)
    assert bool(found) == _jax_refuses(mesh, shape, spec), (mesh, shape, spec, found)
    if found:
        return
    placed = meshplacement.place(mesh, shape, typed)
    m = meshplacement.jax_mesh(mesh, jax.devices())
    truth = NamedSharding(m, PartitionSpec(*spec))
    assert placed.from_jax and placed.local_shape == truth.shard_shape(shape)
    where = truth.devices_indices_map(shape)
    by_id = {d.id: d for d in jax.devices()}
    for b in placed.blocks:
        want = tuple(s.indices(n)[:2] for s, n in zip(where[by_id[b.device]], shape, strict=True))
        assert b.index == want
    # the arithmetic used beyond this process's devices gives the same blocks
    full = spec + (None,) * (len(shape) - len(spec))
    assert meshplacement._blocks_planned(mesh, shape, full) == placed.blocks


def test_a_mesh_bigger_than_this_process_is_planned():
    big = Mesh((4, TEST_DEVICES), ("data", "model"))
    placed = meshplacement.place(big, (8, 16), ("data", "model"))
    assert not placed.from_jax and len(placed.blocks) == 4 * TEST_DEVICES
    assert placed.local_shape == (2, 2) and placed.replicated_over == ()
    assert {b.index for b in placed.blocks} == {
        ((2 * i, 2 * i + 2), (2 * j, 2 * j + 2)) for i in range(4) for j in range(8)
    }


def test_shard_map_hands_f_the_local_shape():
    """Per-device shapes are what shard_map really hands f."""
    seen = []
    m = meshplacement.jax_mesh(DATA_MODEL, jax.devices())
    spec = ("data", None)

    def f(x):
        seen.append(x.shape)
        return x

    # an Explicit mesh (jax.make_mesh) wants the input already sharded as in_specs says
    x = jax.device_put(jax.numpy.zeros((8, 16)), NamedSharding(m, PartitionSpec(*spec)))
    jax.shard_map(f, mesh=m, in_specs=PartitionSpec(*spec), out_specs=PartitionSpec(*spec))(x)
    assert seen[0] == meshplacement.place(DATA_MODEL, (8, 16), spec).local_shape == (4, 16)
    assert math.prod(DATA_MODEL.shape) == TEST_DEVICES


def test_the_jax_mesh_has_the_meshs_axis_types_and_a_manual_axis_is_explicit_outside():
    from jax.sharding import AxisType

    devs = jax.devices()[:8]
    m = meshplacement.jax_mesh(Mesh((2, 4), ("data", "model"), ("auto", "manual")), devs)
    assert m.axis_types == (AxisType.Auto, AxisType.Explicit)
    assert meshplacement.jax_mesh(Mesh((2, 4), ("a", "b")), devs).axis_types == (
        jax.make_mesh((2, 4), ("a", "b"), devices=devs).axis_types  # make_mesh's own default
    )
