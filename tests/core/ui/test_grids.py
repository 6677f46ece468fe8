"""A grid on a page is one Markdown element holding the grid's HTML, a labelled picture."""

from tests.core.ui.conftest import render


def _two_devices():
    from pmapviz.core.ui import grids

    grids.show([("x", [("<b>0</b>", 0, "device 0"), ("1", 1, "device 1")])], "x on <2> devices")


def test_show_draws_the_grid_as_one_html_picture():
    at = render(_two_devices)
    (md,) = at.markdown
    assert md.allow_html and md.value.startswith("<div role='img' aria-label='x on &lt;2&gt;")
    assert md.value.count("title='device") == 2
