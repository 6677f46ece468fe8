"""Shared widgets that are plain functions: the HTML block grid, chips, titled cells."""

import re

from pmapviz import palette, ui


def test_block_grid_aligns_rows_and_labels_every_cell():
    markup = ui.block_grid(
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
    markup = ui.block_grid([("a", [("x", 0, "it's <b>")])], "one cell")
    assert "it&#x27;s &lt;b&gt;" in markup


def test_chips_and_titled_cells_escape_and_label():
    chips = ui.chips([0, None, 3])
    assert chips.count("<span") == 3 and ">0<" in chips and ">3<" in chips and ">·<" in chips
    assert palette.device_colour(3) in chips
    cell = ui.titled("<img src=x>", "id 1 & 2")
    assert "<img" not in cell and "&lt;img src=x&gt;" in cell and "&amp;" in cell


def test_argument_widths_widen_in_axes_for_a_pytree_argument():
    from pmapviz import ui

    plain = ui.argument_widths("8, 4", "0")
    assert ui.argument_widths("{'w': (5, 2)}", "None")[2] > plain[2]
    assert ui.argument_widths("8, 4", "{'w': None}")[2] > plain[2]
    assert ui.argument_widths(None, None) == plain
    tree = ui.argument_widths("((2,), (3,))", "0")
    assert tree[1] == plain[1]  # the dtype box keeps its width: "float32" stays readable
    assert tree[2] / sum(tree) > plain[2] / sum(plain)


class _Rerun(Exception):
    pass


def _rerun():
    raise _Rerun


def test_a_page_outside_app_py_reruns_whatever_streamlits_flag_says(monkeypatch):
    """Two share links opened at once on a fresh server both start in Streamlit's legacy pages/
    mode; the first clears the process-wide flag, so the second must not trust it."""
    import threading

    import pytest
    from streamlit.runtime.pages_manager import PagesManager

    monkeypatch.setattr(ui.st, "rerun", _rerun)
    for flag in (True, False, None):  # False: another session's page already cleared it
        monkeypatch.setattr(PagesManager, "uses_pages_directory", flag)
        with pytest.raises(_Rerun):
            ui.ensure_routed()
        assert PagesManager.uses_pages_directory is False  # the rerun goes through app.py
    with ui.routing():
        ui.ensure_routed()  # app.py's router is running this page: no rerun
        seen = []

        def elsewhere():
            try:
                ui.ensure_routed()
            except _Rerun:
                seen.append("rerun")

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
        assert seen == ["rerun"]  # another session's thread is not routed by this one
    with pytest.raises(_Rerun):
        ui.ensure_routed()  # the mark ends with the page
