"""The shared palette and the HTML block grid."""

import re

from pmapviz import palette, ui


def test_palette_is_distinct_and_cycles():
    colours = palette.palette(16)
    assert len(set(colours)) == 16
    assert palette.device_colour(16) == palette.device_colour(0)


def test_text_colour_has_contrast():
    assert palette.text_colour("#000000") == "#FFFFFF"
    assert palette.text_colour("#FFFFFF") == "#000000"
    assert palette.text_colour("#F0E442") == "#000000"  # yellow
    assert palette.text_colour("#332288") == "#FFFFFF"  # indigo


def test_block_grid_aligns_rows_and_labels_every_cell():
    markup = ui.block_grid(
        [("a", [("1", 0, "t1"), ("2", 1, "t2")]), ("b", [("3", 0, ""), ("4", None, "")])]
    )
    assert "repeat(2, minmax" in markup
    assert re.findall(r"title='([^']*)'", markup) == ["t1", "t2", "3", "4"]
    assert palette.device_colour(0) in markup and "#EEEEEE" in markup


def test_block_grid_escapes_tooltips():
    markup = ui.block_grid([("a", [("x", 0, "it's <b>")])])
    assert "it&#x27;s &lt;b&gt;" in markup
