"""The grid: JAX's text unchanged under the colours, a column per mode, markup escaped."""

import html
import os
import re

from pmapviz.core.base.palette import device_colour
from pmapviz.features.meshes.meshspecs import Mesh
from pmapviz.features.types import typedcatalog, typedhtml, typedprogram
from tests.conftest import TEST_DEVICES

MESH = Mesh((2, 4), ("data", "model"))
COLOURS = typedhtml.axis_colours(MESH)


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_a_type_keeps_jax_s_text_and_colours_each_split_axis():
    for t in ("f32[64@data,16@model]", "f32[16,8]{V:(data,model)}", "f32[16,16]{U:data}", "f32[]"):
        assert text_of(typedhtml.type_html(t, COLOURS)) == t
    coloured = typedhtml.type_html("f32[64@data,16@model]", COLOURS)
    assert f"background:{device_colour(0)}" in coloured and f"background:{device_colour(1)}" in (
        coloured
    )
    assert "title='varying:" in typedhtml.type_html("f32[4]{V:data}", COLOURS)


def test_text_from_outside_is_never_markup():
    hostile = "f32[8@<img src=x>]{V:<b>}"
    shown = typedhtml.type_html(hostile, COLOURS)
    assert "<img" not in shown and "<b>" not in shown and text_of(shown) == hostile
    legend = typedhtml.legend_html(Mesh((2,), ("<script>",)))
    assert "<script>" not in legend


def test_the_grid_has_a_column_per_mode_and_the_closed_ones_say_so():
    source = typedcatalog.named("meshes", TEST_DEVICES)
    views = {"explicit": typedprogram.typed(source, "explicit"), "auto": None}
    label = typedhtml.describe(views, "f")
    grid = typedhtml.grid_html(views, source.mesh, label)
    shown = text_of(grid)
    assert "Auto" in shown and "not compiled yet" in shown and "Manual" not in shown
    assert "f32[8@data,16@model]" in shown
    assert f"aria-label='{html.escape(label, quote=True)}'" in grid
    assert label.endswith("Explicit: 1 equations, 0 collective(s)")


def test_a_collective_line_names_kind_operand_groups_and_bytes():
    source = typedcatalog.named("meshes", TEST_DEVICES)
    view = typedprogram.typed(source, "manual")
    shown = text_of(typedhtml.comm_html(view.collectives))
    (c,) = view.collectives
    assert f"all-gather {c.shape_text} · {len(c.replica_groups)} group(s) of 4" in shown


def test_a_typed_expression_s_source_says_so_and_keeps_jax_s_line():
    source = typedcatalog.named("meshes", TEST_DEVICES)
    (row,) = typedprogram.typed(source, "explicit").rows
    shown = typedhtml.source_html(row.eqn)
    assert "your expression" in shown and f"JAX records {row.eqn.source}" in html.unescape(shown)
    plain = typedprogram.typed(typedcatalog.named("training", TEST_DEVICES), "auto").rows[0].eqn
    assert typedhtml.source_html(plain) == (
        f"<span title='{html.escape(plain.source, quote=True)}'>"
        f"{os.path.basename(plain.file)}:{plain.line}</span>"
    )
    seed = typedprogram.typed(typedcatalog.named("seed", TEST_DEVICES), "explicit").rows[0].eqn
    assert seed.file is None and typedhtml.source_html(seed) == ""  # JAX kept no user frame
