"""The one device palette: distinct, cycling, readable text on every fill."""

from pmapviz.core.base import palette


def test_palette_is_distinct_and_cycles():
    colours = palette.palette(16)
    assert len(set(colours)) == 16
    assert palette.device_colour(16) == palette.device_colour(0)


def test_text_colour_has_contrast():
    assert palette.text_colour("#000000") == "#FFFFFF"
    assert palette.text_colour("#FFFFFF") == "#000000"
    assert palette.text_colour("#F0E442") == "#000000"  # yellow
    assert palette.text_colour("#332288") == "#FFFFFF"  # indigo
