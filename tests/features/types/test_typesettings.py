"""The Types page's link: modes, programs, and the other pages' fields under its keys."""

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.planning import scenarios
from pmapviz.features.meshes import meshsettings
from pmapviz.features.types import typesettings


def test_modes_parse_in_order_once_each():
    assert typesettings.parse_modes("manual, AUTO") == ["auto", "manual"]
    assert typesettings.parse_modes(["explicit"]) == ["explicit"]
    for bad, words in (("", "is empty"), ("auto,<b>", "`<b>` is not a mode"), ("a" * 61, "60")):
        with pytest.raises(SettingError, match=words):
            typesettings.parse_modes(bad)


def test_the_schema_reads_every_program_s_fields_without_clashes():
    schema = typesettings.schema(8)
    keys = [f.key for f in schema.fields]
    assert len(keys) == len(set(keys))
    assert {"prog", "mode", "mesh", "names", "ms0", "p0", "margs", "mout", "gf", "lf"} <= set(keys)
    assert {"fn", "s0", "a0", "d0", "out", "name", "args", "body"} <= set(keys)  # the explorer's
    assert {"model", "batch", "red"} <= set(keys) and "pod" not in keys and "t0" not in keys
    d = schema.defaults()
    meshes = meshsettings.schema(8).defaults()
    assert (d["prog"], d["mode"], d["ms0"], d["p1"]) == (
        "meshes",
        "explicit",
        meshes["s0"],
        meshes["p1"],
    )
    assert d["s0"] == scenarios.schema(8).defaults()["s0"]  # the explorer's own s0


def test_a_link_s_bad_values_fall_back_with_one_note_each():
    texts, notes = typesettings.schema(3).from_query(
        {"prog": "x", "mode": "nope", "ms0": str(10**30), "mesh": "3"}
    )
    assert (texts["prog"], texts["mode"], texts["mesh"]) == ("meshes", "explicit", "3")
    assert len(notes) == 3 and all("Using the default" in n for n in notes)


def test_the_explorer_and_meshes_texts_come_back_under_their_own_keys():
    texts = {"fn": "add", "s0": "8, 4", "ms0": "4, 2", "margs": "x", "prog": "meshes"}
    assert typesettings.explorer_texts(texts, 8) == {"fn": "add", "s0": "8, 4"}
    # another function's link keeps its own example where the texts are the defaults
    defaults = typesettings.schema(8).defaults()
    assert typesettings.explorer_texts({**defaults, "fn": "double"}, 8) == {"fn": "double"}
    assert typesettings.modes_text(["manual", "auto"]) == "auto,manual"
    assert typesettings.modes_text("as typed, <b>") == "as typed, <b>"  # never raises
    back = typesettings.mesh_texts(texts)
    assert back["s0"] == "4, 2" and back["args"] == "x"
