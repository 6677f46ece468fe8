"""Arrays split over devices drawn as HTML: one labelled block per device, cards, tables and
sections."""

import re
from html.parser import HTMLParser

import pytest

from pmapviz.core.base import valuetext
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.drawing import arrayhtml
from pmapviz.core.planning import pmapplacement


class Drawing(HTMLParser):
    """An array diagram read back: its blocks (hover, fill, label, left and width in %), its
    other texts, and its accessible label."""

    def __init__(self, markup: str):
        super().__init__()
        self.blocks, self.texts, self.label, self._open = [], [], None, None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.label = self.label or a.get("aria-label")
        style = dict(p.split(":", 1) for p in (a.get("style") or "").split(";") if ":" in p)
        if "title" in a:
            self._open = dict(
                hover=a["title"],
                fill=style["background"],
                text="",
                left=float(style["left"][:-1]),
                width=float(style["width"][:-1]),
            )
            self.blocks.append(self._open)
        else:
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data
        else:
            self.texts.append(data)


@pytest.mark.parametrize(
    "shape, axis",
    [
        ((), None),
        ((6,), 0),
        ((8, 3), 0),
        ((3, 8), 1),
        ((5, 2), None),
        ((8, 1_250_000, 3), 0),
        ((2, 3, 4, 5), 2),
    ],
)
def test_array_html_draws_one_block_per_device_and_labels_them(shape, axis):
    n = 1 if axis is None else shape[axis]
    lay = pmapplacement.array_layout("x", shape, "float32", axis, n)
    d = Drawing(arrayhtml.array_html(lay))
    hover = " ".join(b["hover"] for b in d.blocks)
    assert d.label.startswith(f"x {fmt_shape(shape)} ")
    if axis is None:
        assert "every" in hover and "not split" in d.label
    else:
        for piece in lay.pieces:
            assert f"{piece.device} holds x{piece.index_text}\nlocal shape" in hover
        assert f"local shape {valuetext.fmt_shape(lay.local_shape)}" in hover  # (1_250_000, 3)
        fills = {b["fill"] for b in d.blocks}
        assert len(fills - {arrayhtml.NEUTRAL}) == n  # one colour per device
        split = [b for b in d.blocks if b["fill"] != arrayhtml.NEUTRAL]
        for left, right in zip(split, split[1:], strict=False):  # side by side, not overlapping
            assert left["left"] + left["width"] <= right["left"] + 0.002 or len(shape) == 2
        assert all(b["left"] >= 0 and b["left"] + b["width"] <= 100.002 for b in d.blocks)


def test_block_labels_fit_the_column_they_are_drawn_for():
    """A device's full name where the column is wide enough, its number where only that fits;
    the hover always has the full name."""
    lay = pmapplacement.array_layout("x", (8, 1_250_000, 3), "float32", 0, 8)
    wide, narrow = Drawing(arrayhtml.array_html(lay, 900)), Drawing(arrayhtml.array_html(lay, 180))
    names = [p.device for p in lay.pieces]
    assert [b["text"] for b in wide.blocks if b["fill"] != arrayhtml.NEUTRAL] == names
    numbers = [re.search(r"[0-9]+$", name).group(0) for name in names]
    assert [b["text"] for b in narrow.blocks if b["fill"] != arrayhtml.NEUTRAL] == numbers
    assert all(name in b["hover"] for name, b in zip(names, narrow.blocks, strict=False))


def test_user_text_in_a_diagram_is_escaped():
    lay = pmapplacement.array_layout("<b>x</b>", (4,), "float32", 0, 4)
    markup = arrayhtml.array_html(lay)
    assert "<b>" not in markup and "&lt;b&gt;x&lt;/b&gt;" in markup


@pytest.mark.parametrize("shape, axis", [((4096, 4), 0), ((3, 64), 1), ((256, 2, 3), 0)])
def test_many_devices_are_drawn_as_labelled_groups_with_counts(shape, axis):
    n = shape[axis]
    lay = pmapplacement.array_layout("x", shape, "float32", axis, n)
    d = Drawing(arrayhtml.array_html(lay))
    blocks = [b for b in d.blocks if b["fill"] != arrayhtml.NEUTRAL]
    assert len(blocks) == arrayhtml.GROUPS  # not one per device
    per = n // arrayhtml.GROUPS
    hover = " ".join(b["hover"] for b in d.blocks)
    assert f"{per:,} devices, {lay.pieces[0].device} to {lay.pieces[per - 1].device}" in hover
    texts = " ".join(d.texts + [b["text"] for b in blocks])
    assert f"{n:,} devices, drawn as {arrayhtml.GROUPS} groups of up to {per:,}" in texts
    assert f"0-{per - 1}" in texts or f"{per}+" in texts  # the groups are labelled


def test_cards_put_every_array_in_one_grid_with_its_shape_split_and_block():
    x = pmapplacement.array_layout("params['w']", (8, 5), "float32", 0, 8)
    w = pmapplacement.array_layout("w", (5, 2), "int32", None, 8)
    out = pmapplacement.array_layout("out", (4, 8), "float32", 1, 8)
    markup = arrayhtml.cards_html([(x, 0, False), (w, None, False), (out, 1, True)], 3, 260)
    assert markup.startswith('<div style="display:grid;grid-template-columns:repeat(3,')
    d = Drawing(markup)
    assert d.label == "params['w'] (8, 5) split over 8 devices along axis 0"
    assert markup.count('role="img"') == 3  # one diagram per card
    text = " ".join(d.texts)
    assert "input" in text and "split along in_axes=0" in text and "(8, 5)" in text
    assert "broadcast: every device gets all" in text and "int32" in text
    assert "output" in text and "device axis at out_axes=1" in text
    # each card says what one device holds: pmap drops the split axis
    assert "each device: (5,)" in text and "each device: (5, 2)" in text
    assert "each device: (4,)" in text
    assert "params[&#x27;w&#x27;]" in markup and "params['w']</code>" not in markup  # escaped


def test_table_html_marks_each_device_with_its_colour_and_escapes_cells():
    from pmapviz.core.base.palette import device_colour

    rows = [{"device": f"cpu:{k}", "x slice": f"[{k}:{k + 1}, :]", "note": "<b>"} for k in (0, 1)]
    markup = arrayhtml.table_html(rows, "Per device", [3, 1])
    assert 'aria-label="Per device"' in markup
    assert [m for m in re.findall(r"<th[^>]*>([^<]*)</th>", markup)] == [
        "device",
        "x slice",
        "note",
    ]
    assert re.findall(r"<td[^>]*>(?:<span[^>]*></span>)?([^<]*)</td>", markup) == [
        "cpu:0",
        "[0:1, :]",
        "&lt;b&gt;",
        "cpu:1",
        "[1:2, :]",
        "&lt;b&gt;",
    ]
    swatches = re.findall(r"background:(#[0-9A-F]{6})\"></span>", markup)
    assert swatches == [device_colour(3), device_colour(1)]  # the device's position, not k


def test_a_section_is_a_heading_an_intro_with_code_spans_and_its_body():
    markup = arrayhtml.section_html("How <it> splits", "<p>body</p>", intro="Read `a<b>` here")
    assert re.fullmatch(
        r'<h3 style="[^"]*">How &lt;it&gt; splits</h3><div style="[^"]*">Read '
        r'<code style="[^"]*">a&lt;b&gt;</code> here</div><p>body</p>',
        markup,
    )
    assert arrayhtml.section_html("T", "<i>b</i>").endswith("</h3><i>b</i>")  # no intro: none drawn
