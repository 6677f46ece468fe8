"""Device-aligned grids as HTML: a labelled picture, every cell labelled and escaped."""

import re

from pmapviz.core.base import palette
from pmapviz.core.drawing import gridhtml


def test_block_grid_aligns_rows_and_labels_every_cell():
    markup = gridhtml.block_grid(
        [("a", [("1", 0, "t1"), ("2", 1, "t2")]), ("b", [("3", 0, ""), ("4", None, "")])],
        "two rows 'a' and 'b' <over> two devices",
    )
    assert markup.startswith(
        "<div role='img' aria-label='two rows &#x27;a&#x27; and "
        "&#x27;b&#x27; &lt;over&gt; two devices'"
    )  # a picture, escaped
    assert "repeat(2, minmax" in markup
    assert re.findall(r"title='([^']*)'", markup) == ["t1", "t2", "3", "4"]
    assert palette.device_colour(0) in markup and "#EEEEEE" in markup


def test_block_grid_escapes_tooltips():
    markup = gridhtml.block_grid([("a", [("x", 0, "it's <b>")])], "one cell")
    assert "it&#x27;s &lt;b&gt;" in markup


def test_chips_and_titled_cells_escape_and_label():
    chips = gridhtml.chips([0, None, 3])
    assert chips.count("<span") == 3 and ">0<" in chips and ">3<" in chips and ">·<" in chips
    assert palette.device_colour(3) in chips
    cell = gridhtml.titled("<img src=x>", "id 1 & 2")
    assert "<img" not in cell and "&lt;img src=x&gt;" in cell and "&amp;" in cell


def test_a_misfit_deals_entry_i_to_device_i_and_names_the_ones_left_over():
    labels = tuple(f"cpu:{i}" for i in range(8))
    rows, label = gridhtml.misfit_rows(labels, 10)
    (_, entries), (_, devices) = rows
    assert [e[1] for e in entries] == [*range(8), None, None]
    assert [d[0] for d in devices[-2:]] == ["none left", "none left"]
    assert label.endswith("x[8] to x[9] have no device to go to")
    _, one = gridhtml.misfit_rows(("tpu:0",), 2)
    assert "there is 1 device" in one and one.endswith("x[1] has no device to go to")
    html = gridhtml.block_grid(*gridhtml.misfit_rows(("<b>",), 2))
    assert "<b>" not in html.replace("<b>x", "")  # a device's name is escaped
