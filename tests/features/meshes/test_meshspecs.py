"""Named meshes and PartitionSpecs: the text a person types, and the problems JAX would refuse
(checked against NamedSharding itself in tests/features/meshes/test_meshplacement.py)."""

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.features.meshes import meshspecs
from pmapviz.features.meshes.meshspecs import Mesh

DATA_MODEL = Mesh((2, 4), ("data", "model"))


@pytest.mark.parametrize(
    "text, spec",
    [
        ("P('data', None)", ("data", None)),
        ("P(('data', 'model'))", (("data", "model"),)),
        ("P()", ()),
        ("data, None", ("data", None)),
        ("jax.P(None, 'model')", (None, "model")),
        ('PartitionSpec("model",)', ("model",)),
        ("P(('data',), None)", (("data",), None)),
    ],
)
def test_specs_are_read_as_typed(text, spec):
    assert meshspecs.parse_spec(text) == spec
    assert meshspecs.parse_spec(meshspecs.spec_text(spec)) == spec  # JAX's own printing reads back


@pytest.mark.parametrize(
    "text, words",
    [
        ("P('data'", "write it like"),
        ("P(1)", "not part of a PartitionSpec"),
        ("P('data');__import__('os')", "not part of a PartitionSpec"),
        ("data model", "expected a comma"),
        ("P((", "write it like"),
        ("('data', 'model'", "never closed"),
        ("x" * 300, "at most 200"),
    ],
)
def test_bad_spec_text_says_what_is_wrong(text, words):
    with pytest.raises(SettingError, match=words):
        meshspecs.parse_spec(text)


def test_mesh_and_axis_names_text():
    assert meshspecs.parse_mesh("2x4") == (2, 4) == meshspecs.parse_mesh(" 2, 4 ")
    assert meshspecs.parse_axis_names("data, model", 2) == ("data", "model")
    for bad, words in (
        ("2x", "not a mesh shape"),
        ("0x4", "at least 1"),
        ("64x128", "at most 4,096"),
        ("1x1x1x1x1", "at most 4"),
    ):
        with pytest.raises(SettingError, match=words):
            meshspecs.parse_mesh(bad)
    for bad, words in (
        ("data", "names 1 axes; the mesh has 2"),
        ("data, data", "two axes"),
        ("data, 2x", "not a simple name"),
    ):
        with pytest.raises(SettingError, match=words):
            meshspecs.parse_axis_names(bad, 2)


def test_problems_speak_in_the_users_numbers():
    (p,) = meshspecs.problems(DATA_MODEL, (6, 16), ("model", None), "w")
    assert p.code == "indivisible" and "w (6, 16)" in p.message and "(4 or 8)" in p.fix
    (p,) = meshspecs.problems(DATA_MODEL, (8, 16), ("data", None, None))
    assert p.code == "spec_too_long" and p.fix.endswith("P('data', None).")
    assert meshspecs.problems(DATA_MODEL, (8, 16), ("batch",))[0].code == "unknown_axis"
    assert meshspecs.problems(DATA_MODEL, (8, 16), ("data", "data"))[0].code == "axis_twice"


@pytest.mark.parametrize("text", ["²", "2x²", "٢x٤", "2x" + "9" * 30])
def test_a_mesh_of_other_digits_or_huge_sizes_is_refused_in_words(text):
    with pytest.raises(SettingError, match="is not a mesh shape"):
        meshspecs.parse_mesh(text)


def test_axis_types_read_as_a_person_writes_them():
    assert meshspecs.parse_axis_types("explicit, auto", 2) == ("explicit", "auto")
    assert meshspecs.parse_axis_types("Explicit,AxisType.Manual", 2) == ("explicit", "manual")
    assert meshspecs.parse_axis_types("", 3) == ("explicit",) * 3  # jax.make_mesh's default
    with pytest.raises(SettingError, match="gives 1 type; the mesh has 2 axes"):
        meshspecs.parse_axis_types("auto", 2)
    with pytest.raises(SettingError) as err:
        meshspecs.parse_axis_types("auto, <b>x</b>", 2, "--axis-types")
    assert str(err.value) == (
        "--axis-types `<b>x</b>` is not an axis type: write auto, explicit or manual."
    )  # one line, the text as a code span


def test_a_mesh_without_types_is_explicit_and_says_which_axes_are_manual():
    assert Mesh((2, 4), ("data", "model")).axis_types == ("explicit", "explicit")
    m = Mesh((2, 4), ("data", "model"), ("manual", "auto"))
    assert m.manual == ("data",) and m.axis_types == ("manual", "auto")
    assert meshspecs.only_axes(("data", ("data", "model"), "model", None), {"data"}) == (
        "data",
        "data",
        None,
        None,
    )
