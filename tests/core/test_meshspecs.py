"""Named meshes and PartitionSpecs: the text a person types, the problems JAX would refuse
(checked against NamedSharding itself), and the placement (checked against
devices_indices_map, and the planned arithmetic against it for every mesh this process has)."""

import math

import jax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding, PartitionSpec

from pmapviz import meshspecs
from pmapviz.meshspecs import Mesh
from pmapviz.settings import SettingError
from tests.conftest import TEST_DEVICES

DATA_MODEL = Mesh((2, 4), ("data", "model"))


@pytest.mark.parametrize("text, spec", [
    ("P('data', None)", ("data", None)),
    ("P(('data', 'model'))", (("data", "model"),)),
    ("P()", ()),
    ("data, None", ("data", None)),
    ("jax.P(None, 'model')", (None, "model")),
    ('PartitionSpec("model",)', ("model",)),
    ("P(('data',), None)", (("data",), None)),
])  # fmt: skip
def test_specs_are_read_as_typed(text, spec):
    assert meshspecs.parse_spec(text) == spec
    assert meshspecs.parse_spec(meshspecs.spec_text(spec)) == spec  # JAX's own printing reads back


@pytest.mark.parametrize("text, words", [
    ("P('data'", "write it like"),
    ("P(1)", "not part of a PartitionSpec"),
    ("P('data');__import__('os')", "not part of a PartitionSpec"),
    ("data model", "expected a comma"),
    ("P((", "write it like"),
    ("('data', 'model'", "never closed"),
    ("x" * 300, "at most 200"),
])  # fmt: skip
def test_bad_spec_text_says_what_is_wrong(text, words):
    with pytest.raises(SettingError, match=words):
        meshspecs.parse_spec(text)


def test_mesh_and_axis_names_text():
    assert meshspecs.parse_mesh("2x4") == (2, 4) == meshspecs.parse_mesh(" 2, 4 ")
    assert meshspecs.parse_axis_names("data, model", 2) == ("data", "model")
    for bad, words in (("2x", "not a mesh shape"), ("0x4", "at least 1"),
                       ("64x128", "at most 4,096"), ("1x1x1x1x1", "at most 4")):  # fmt: skip
        with pytest.raises(SettingError, match=words):
            meshspecs.parse_mesh(bad)
    for bad, words in (("data", "names 1 axes; the mesh has 2"), ("data, data", "two axes"),
                       ("data, 2x", "not a simple name")):  # fmt: skip
        with pytest.raises(SettingError, match=words):
            meshspecs.parse_axis_names(bad, 2)


def test_problems_speak_in_the_users_numbers():
    (p,) = meshspecs.problems(DATA_MODEL, (6, 16), ("model", None), "w")
    assert p.code == "indivisible" and "w (6, 16)" in p.message and "(4 or 8)" in p.fix
    (p,) = meshspecs.problems(DATA_MODEL, (8, 16), ("data", None, None))
    assert p.code == "spec_too_long" and p.fix.endswith("P('data', None).")
    assert meshspecs.problems(DATA_MODEL, (8, 16), ("batch",))[0].code == "unknown_axis"
    assert meshspecs.problems(DATA_MODEL, (8, 16), ("data", "data"))[0].code == "axis_twice"


def _jax_refuses(mesh: Mesh, shape, spec) -> bool:
    """What JAX itself says: the constructor, the rank check and shard_shape."""
    m = meshspecs.jax_mesh(mesh, jax.devices())
    try:
        s = NamedSharding(m, PartitionSpec(*spec))
        s.check_compatible_aval(tuple(shape))
        s.shard_shape(tuple(shape))
    except Exception:  # noqa: BLE001  (any refusal counts)
        return True
    return False


MESHES = [Mesh(s, n) for s, n in (((8,), ("x",)), ((2, 4), ("data", "model")),
                                  ((4, 2), ("data", "model")), ((2, 2, 2), ("a", "b", "c")),
                                  ((1, 8), ("data", "model")))]  # fmt: skip


@st.composite
def cases(draw):
    mesh = draw(st.sampled_from(MESHES))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]), min_size=0,
                                max_size=3)))  # fmt: skip
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
    placed = meshspecs.place(mesh, shape, typed)
    m = meshspecs.jax_mesh(mesh, jax.devices())
    truth = NamedSharding(m, PartitionSpec(*spec))
    assert placed.from_jax and placed.local_shape == truth.shard_shape(shape)
    where = truth.devices_indices_map(shape)
    by_id = {d.id: d for d in jax.devices()}
    for b in placed.blocks:
        want = tuple(s.indices(n)[:2] for s, n in zip(where[by_id[b.device]], shape, strict=True))
        assert b.index == want
    # the arithmetic used beyond this process's devices gives the same blocks
    assert meshspecs._blocks_planned(mesh, shape, spec + (None,) * (len(shape) - len(spec))) == (
        placed.blocks
    )


def test_a_mesh_bigger_than_this_process_is_planned():
    big = Mesh((4, TEST_DEVICES), ("data", "model"))
    placed = meshspecs.place(big, (8, 16), ("data", "model"))
    assert not placed.from_jax and len(placed.blocks) == 4 * TEST_DEVICES
    assert placed.local_shape == (2, 2) and placed.replicated_over == ()
    assert {b.index for b in placed.blocks} == {((2 * i, 2 * i + 2), (2 * j, 2 * j + 2))
                                                for i in range(4) for j in range(8)}  # fmt: skip


def test_shard_map_hands_f_the_local_shape():
    """Per-device shapes are what shard_map really hands f."""
    seen = []
    m = meshspecs.jax_mesh(DATA_MODEL, jax.devices())
    spec = ("data", None)

    def f(x):
        seen.append(x.shape)
        return x

    # an Explicit mesh (jax.make_mesh) wants the input already sharded as in_specs says
    x = jax.device_put(jax.numpy.zeros((8, 16)), NamedSharding(m, PartitionSpec(*spec)))
    jax.shard_map(f, mesh=m, in_specs=PartitionSpec(*spec), out_specs=PartitionSpec(*spec))(x)
    assert seen[0] == meshspecs.place(DATA_MODEL, (8, 16), spec).local_shape == (4, 16)
    assert math.prod(DATA_MODEL.shape) == TEST_DEVICES


def test_the_page_schema_round_trips_and_its_defaults_fit_the_devices():
    for n in (1, 2, 6, 8):
        schema = meshspecs.schema(n)
        values, errors = schema.parse(schema.defaults())
        assert not errors and math.prod(values["mesh"]) == n
        mesh = Mesh(
            values["mesh"], meshspecs.parse_axis_names(values["names"], len(values["mesh"]))
        )
        for k in range(2):
            assert meshspecs.problems(mesh, values[f"s{k}"], values[f"p{k}"]) == [], (n, k)
        texts, notes = schema.from_query(schema.to_query(values))
        assert notes == [] and schema.parse(texts)[0] == values


def test_argument_labels_are_fs_names_only_when_they_fit():
    assert meshspecs.argument_labels("x, w", 2) == ["x", "w"]
    assert meshspecs.argument_labels("x, w", 3) == ["argument 1", "argument 2", "argument 3"]
    assert meshspecs.argument_labels("x, 1w", 2) == ["argument 1", "argument 2"]  # not names


@pytest.mark.parametrize("text", ["²", "2x²", "٢x٤", "2x" + "9" * 30])
def test_a_mesh_of_other_digits_or_huge_sizes_is_refused_in_words(text):
    with pytest.raises(SettingError, match="is not a mesh shape"):
        meshspecs.parse_mesh(text)
