"""smap's settings go through the typed, bounded settings layer: defaults, bad values (one line
each, the default kept), and the widgets' values both ways."""

from pmapviz.features.smap import smapsettings
from pmapviz.features.smap.smapsettings import AUTO, EXPLICIT, SmapSettings


def test_the_defaults_are_an_explicit_mesh_of_every_device_and_a_complete_call():
    s, errors = smapsettings.from_texts({}, 8)
    assert not errors and s == SmapSettings(8, EXPLICIT, True, True, True)
    assert s.resharded and not s.mistakes()
    assert smapsettings.describe(s, 8) == "a mesh of 8 devices, Explicit axis"


def test_bad_values_are_one_line_each_and_keep_their_defaults():
    s, errors = smapsettings.from_texts(
        {"mesh": "10**30", "mode": "<b>Manual</b>", "setmesh": "maybe", "inaxes": "0"}, 8
    )
    assert len(errors) == 3 and all("\n" not in e for e in errors)
    assert errors[0].startswith("Mesh devices `10**30` is not a whole number from 1 to 8")
    assert "`<b>Manual</b>` is not one of: Explicit, Auto" in errors[1]  # quoted: code, no markup
    assert s.mesh_devices is None and s.mode == EXPLICIT and s.set_mesh and not s.in_axes
    assert s.devices_for(5) == 5  # a bad mesh size: the plan's device count


def test_the_mesh_is_bounded_by_the_devices():
    _, errors = smapsettings.from_texts({"mesh": "9"}, 8)
    assert errors and "8" in errors[0]
    s, errors = smapsettings.from_texts({"mesh": 3}, 8)
    assert not errors and s.devices_for(8) == 3


def test_widget_values_both_ways_and_what_a_call_leaves_out():
    s = SmapSettings(4, AUTO, False, False, False)
    again, errors = smapsettings.from_texts(smapsettings.to_texts(s, 8), 8)
    assert not errors and again == s
    assert not s.resharded  # Auto axes take no PartitionSpec: nothing is resharded
    assert s.mistakes() == ("no jax.set_mesh", "in_axes left out")
    assert SmapSettings(reshard=False).mistakes() == ("inputs not resharded",)
    assert s.changed({"set_mesh": True}).set_mesh
