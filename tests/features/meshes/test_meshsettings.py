"""The Meshes page's settings: its schema round-trips and its defaults fit the devices; the
arguments are named after f's."""

import math

from pmapviz.features.meshes import meshsettings, meshspecs
from pmapviz.features.meshes.meshspecs import Mesh


def test_the_page_schema_round_trips_and_its_defaults_fit_the_devices():
    for n in (1, 2, 6, 8):
        schema = meshsettings.schema(n)
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
    assert meshsettings.argument_labels("x, w", 2) == ["x", "w"]
    assert meshsettings.argument_labels("x, w", 3) == ["argument 1", "argument 2", "argument 3"]
    assert meshsettings.argument_labels("x, 1w", 2) == ["argument 1", "argument 2"]  # not names


def test_each_axis_type_is_a_field_of_its_own_and_a_bad_one_falls_back_with_one_note():
    schema = meshsettings.schema(8)
    texts, notes = schema.from_query({"t0": "auto", "t1": "explicit"})
    assert notes == [] and (texts["t0"], texts["t1"], texts["t3"]) == (
        "auto",
        "explicit",
        "explicit",
    )
    values, errors = schema.parse(texts)
    assert not errors and meshsettings.axis_types(values, 2) == ("auto", "explicit")
    texts, notes = schema.from_query({"t0": "Bogus", "t1": "<script>x</script>"})
    assert len(notes) == 2 and texts["t0"] == texts["t1"] == "explicit"
    assert notes[0] == (
        "The link's t0= `Bogus` is not one of: explicit, auto, manual. Using the default, "
        "`explicit`."
    )
    assert schema.defaults()["t0"] == "explicit"  # an old link (no t0..) keeps make_mesh's
