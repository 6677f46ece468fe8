"""Arrays split over devices, drawn as HTML: each array's diagram (one block per device),
its card, a section around the cards, and a table with one row per device. Each function draws
what the core read from JAX; nothing here decides which device holds what. (ppermute's arrows:
:mod:`pmapviz.core.drawing.permutationfigure`; figures of measurements:
:mod:`pmapviz.features.timing.timecharts`.)

Array diagrams are positioned HTML boxes: they are redrawn on every edit in the explorer, and a
Plotly chart costs the browser tens of milliseconds per redraw where plain boxes cost almost
nothing (``benchmarks/interaction.py``). Each block keeps its hover (a ``title``).
"""

from __future__ import annotations

import html
import math
import re

from pmapviz.core.base.palette import MONO_CSS, device_colour, text_colour
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.planning.pmapplacement import ArrayLayout

NEUTRAL = "#D9D9D9"
LENGTH = 10.0  # drawing units for the longest side


def _extent(n: int) -> float:
    """Drawn length of an axis of size n: grows with log2(n), so 3 and 10,000,000 both fit."""
    return 1.0 + math.log2(max(n, 1) + 1)


class _Canvas:
    """Blocks (filled rectangles, each with a label and a hover) and free notes (labels,
    arrows), collected as plain dicts and drawn at the end: as HTML (:meth:`html`), or as ONE
    Plotly figure (:func:`pmapviz.core.drawing.permutationfigure._canvas_figure`)."""

    def __init__(self):
        self.blocks: list[dict] = []
        self.notes: list[dict] = []

    def html(self, x_range: list[float], y_range: list[float], height: int, label: str) -> str:
        """The drawing as HTML: positioned boxes, x in percent of the width (the width
        follows the column, as the figure's does), y in pixels; each block carries its hover
        as a ``title`` and its label inside it (clipped if the column is narrower than
        planned); notes let the pointer through. (HTML, not SVG: ``st.html`` sanitises with
        DOMPurify's HTML profile, which drops SVG.)"""
        (x0, x1), (y0, y1) = x_range, y_range
        inner = height - 2 * MARGIN

        def sx(x: float) -> float:
            return (x - x0) / (x1 - x0) * 100

        def sy(y: float) -> float:
            return MARGIN + (y1 - y) / (y1 - y0) * inner

        parts = [
            f'<div role="img" aria-label="{html.escape(label)}" style="position:relative;'
            f'width:100%;height:{height}px;font-size:0.75rem;line-height:1.2">'
        ]
        for b in self.blocks:
            left, top = sx(b["x0"]), sy(b["y1"])
            width, tall = sx(b["x1"]) - left, sy(b["y0"]) - top
            tip = html.escape(b["hover"].replace("<br>", "\n"))
            parts.append(
                f'<div title="{tip}" style="position:absolute;left:{left:.3f}%;top:{top:.1f}px;'
                f"width:{width:.3f}%;height:{tall:.1f}px;background:{b['fill']};"
                "border:1.5px solid #FFFFFF;box-sizing:border-box;display:flex;"
                "align-items:center;justify-content:center;overflow:hidden;white-space:nowrap;"
                f'color:{text_colour(b["fill"])}">{html.escape(b["text"])}</div>'
            )
        parts += [_html_text(note, sx(note["x"]), sy(note["y"])) for note in self.notes]
        return "".join(parts) + "</div>"


MARGIN = 8  # px above and below, as the figures' margins
_SHIFT = {"left": "0", "center": "-50%", "right": "-100%"}


def _html_text(note: dict, x: float, y: float) -> str:
    font = note.get("font", {})
    turn = f" rotate({note['textangle']}deg)" if note.get("textangle") else ""
    shift = "-50%" if turn else _SHIFT[note.get("xanchor", "center")]
    return (
        f'<div style="position:absolute;left:{x:.3f}%;top:{y:.1f}px;white-space:nowrap;'
        f"transform:translate({shift},-50%){turn};color:{font.get('color', '#444444')};"
        f'font-size:{font.get("size", 12) / 16:g}rem;pointer-events:none">'
        f"{html.escape(note['text'])}</div>"
    )


def _rect(fig: _Canvas, x0, x1, y0, y1, fill, text, hover):
    fig.blocks.append(dict(x0=x0, x1=x1, y0=y0, y1=y1, fill=fill, text=text, hover=hover))


def _label(fig: _Canvas, x, y, text, anchor="left", size=12, colour="#444444", angle=0):
    fig.notes.append(
        dict(
            x=x,
            y=y,
            text=text,
            showarrow=False,
            xanchor=anchor,
            textangle=angle,
            font=dict(size=size, color=colour),
        )
    )


PX_PER_UNIT = 32  # vertically; horizontally the drawing (~11.3 units) spans its column


def _block_label(device: str, span_px: float) -> str:
    """The device's full name where it fits, its number where only that fits, else nothing
    (the hover always has it)."""
    if span_px >= 7.5 * len(device):
        return device
    m = re.search(r"[0-9]+$", device)
    short = m.group(0) if m else device
    return short if span_px >= 8 * len(short) + 2 else ""


MAX_BLOCKS = 32  # more devices than this on one axis: drawn as groups of devices
GROUPS = 8  # how many groups then (each labelled with its device range and count)


def _number(device: str) -> str:
    m = re.search(r"[0-9]+$", device)
    return m.group(0) if m else device


def _pieces_along(
    layout: ArrayLayout,
    axis: int,
    start: float,
    length: float,
    unit_px: float,
    label_px: float | None = None,
):
    """(position, label, hover, a, b): each device's span along `axis`, from JAX's index,
    labelled to fit in ``label_px`` (default: the span's own length at ``unit_px`` pixels per
    drawing unit); above MAX_BLOCKS devices, GROUPS runs of neighbouring devices, each labelled with
    its device range (or
    its first device and +) and counted in the hover."""
    size, pieces = layout.shape[axis], layout.pieces
    local = fmt_shape(layout.local_shape)  # as every page writes shapes: (1_250_000, 3)

    def bounds(p) -> tuple[int, int]:
        s = p.index[axis]
        return (0 if s.start is None else s.start), (size if s.stop is None else s.stop)

    def span(lo: int, hi: int) -> tuple[float, float]:
        return start + length * lo / size, start + length * hi / size

    if len(pieces) <= MAX_BLOCKS:
        out = []
        for p in pieces:
            a, b = span(*bounds(p))
            hover = f"{p.device} holds {layout.name}{p.index_text}<br>local shape {local}"
            px = (b - a) * unit_px if label_px is None else label_px
            out.append((p.position, _block_label(p.device, px), hover, a, b))
        return out
    per = -(-len(pieces) // GROUPS)
    out = []
    for g in range(0, len(pieces), per):
        run = pieces[g : g + per]
        lo, hi = bounds(run[0])[0], bounds(run[-1])[1]
        a, b = span(lo, hi)
        first, last = run[0].device, run[-1].device
        hover = (
            f"{len(run):,} devices, {first} to {last}: one index each of "
            f"{layout.name} axis {axis} [{lo:,}:{hi:,}]<br>local shape {local}"
        )
        px = (b - a) * unit_px if label_px is None else label_px
        texts = [f"{_number(first)}-{_number(last)}", f"{_number(first)}+", ""]
        text = next(t for t in texts if px >= 7.5 * len(t))
        out.append((g // per, text, hover, a, b))
    return out


def _groups_note(layout: ArrayLayout) -> str:
    n = len(layout.pieces)
    if n <= MAX_BLOCKS:
        return "one index per device"
    per = -(-n // GROUPS)
    return f"{n:,} devices, drawn as {-(-n // per)} groups of up to {per:,}"


def _finish(fig: _Canvas, x0: float, x1: float, y0: float, y1: float, label: str) -> str:
    # free aspect: drawing units are not data units, so let the width follow the column
    return fig.html([x0, x1], [y0, y1], int(2 * MARGIN + (y1 - y0) * PX_PER_UNIT), label)


def array_html(layout: ArrayLayout, width_px: int = 360) -> str:
    """Draw one array as HTML: its split axis cut into blocks coloured by device (labelled,
    hoverable).

    Rank 1 and 2 are drawn directly; higher ranks as one strip per axis (only the split axis is
    cut); a scalar as one block. An array that is not split is drawn whole in grey: every device
    holds all of it. Lengths grow with log2(size), and a split axis is drawn long enough for every
    device's block to be seen and labelled. ``width_px``: about how wide the column will be, to
    choose labels that fit (a device's name, its number, or none: the hover always has it).
    """
    shape, ax = layout.shape, layout.split_axis
    n = len(layout.pieces)
    whole = f"every one of the {n} device(s) holds all of {layout.name}"
    fig, unit = _Canvas(), width_px / (LENGTH + 1.3)
    label = f"{layout.name} {fmt_shape(shape)} " + (
        f"not split: {whole}" if ax is None else f"split over {n} devices along axis {ax}"
    )

    if len(shape) == 0:
        _rect(fig, 0, 3, 0, 1.2, NEUTRAL, "scalar", whole)
        return _finish(fig, -0.5, 12, -0.3, 1.5, label)

    if len(shape) <= 2:
        rows, cols = (1, shape[0]) if len(shape) == 1 else shape
        col_axis = len(shape) - 1
        w, h = _extent(cols), _extent(rows) if len(shape) == 2 else 1.0
        scale = LENGTH / max(w, h)
        w, h = w * scale, h * scale
        if len(shape) == 1:
            h = 1.2
        if ax == col_axis:
            w = max(w, min(LENGTH, 0.55 * n))
        elif ax == 0 and len(shape) == 2:
            h = max(h, min(LENGTH, 0.6 * n))
        if not (ax == 0 and len(shape) == 2):
            h = min(h, 6.0)  # only split rows need the height
        w, h = max(w, 2.0), max(h, 1.2)
        if ax is None:
            _rect(fig, 0, w, 0, h, NEUTRAL, "all devices", whole)
        elif ax == col_axis:
            for pos, text, tip, a, b in _pieces_along(layout, ax, 0, w, unit):
                _rect(fig, a, b, 0, h, device_colour(pos), text, tip)
        else:  # rows are split: device 0 on top
            for pos, text, tip, a, b in _pieces_along(layout, ax, 0, h, unit, w * unit):
                text = text if (b - a) >= 0.5 else ""
                _rect(fig, 0, w, h - b, h - a, device_colour(pos), text, tip)
        split = f", split: {_groups_note(layout)}" if ax is not None and n > MAX_BLOCKS else ""
        _label(fig, 0, h + 0.45, f"axis {col_axis}: {shape[col_axis]:,}" + split)
        if len(shape) == 2:
            _label(fig, -0.45, h / 2, f"axis 0: {shape[0]:,}", anchor="center", angle=-90)
        return _finish(fig, -1.0, LENGTH + 0.3, -0.3, h + 0.9, label)

    # rank >= 3: one strip per axis, only the split one cut into device blocks
    strip_h, gap = 0.9, 0.75
    total = len(shape) * (strip_h + gap)
    lengths = [_extent(d) for d in shape]
    biggest = max(lengths)
    for k, size in enumerate(shape):
        y1 = total - gap - k * (strip_h + gap)
        y0 = y1 - strip_h
        w = LENGTH * lengths[k] / biggest
        if k == ax:
            w = max(w, min(LENGTH, max(5.0, 0.9 * n)))
            for pos, text, tip, a, b in _pieces_along(layout, k, 0, w, unit):
                _rect(fig, a, b, y0, y1, device_colour(pos), text, tip)
            note = f"axis {k}: {size:,}, split: {_groups_note(layout)}"
        else:
            w = max(w, 0.6)
            _rect(fig, 0, w, y0, y1, NEUTRAL, "", f"axis {k}: every device holds all {size:,}")
            note = f"axis {k}: {size:,}, whole on every device"
        _label(fig, 0, y1 + 0.32, note)
    return _finish(fig, -0.3, LENGTH + 0.3, -0.2, total + 0.1, label)


CODE_STYLE = (
    f"{MONO_CSS};font-size:0.875em;background:rgba(128,128,128,0.12);border-radius:4px;"
    "padding:0.05em 0.3em"
)
CAPTION_STYLE = "color:rgba(49,51,63,0.6);font-size:0.875rem"
HEADING_STYLE = "font-size:1.75rem;font-weight:600;line-height:1.2;padding:0.75rem 0 1rem;margin:0"


def _code_raw(escaped: str) -> str:
    return f'<code style="{CODE_STYLE}">{escaped}</code>'


def _code(text: str) -> str:
    return _code_raw(html.escape(text))


def _inline(text: str) -> str:
    """Plain text with `backtick` spans, as escaped HTML with those spans as code."""
    parts = html.escape(text, quote=False).split("`")
    return "".join(_code_raw(p) if k % 2 else p for k, p in enumerate(parts))


def section_html(title: str, body: str, intro: str = "") -> str:
    """A section as one block of HTML: a heading like the page's subheaders, an optional intro
    line (plain text; `backticks` mark code), and ``body`` (HTML)."""
    lead = f'<div style="{CAPTION_STYLE};margin-bottom:0.75rem">{_inline(intro)}</div>'
    return f'<h3 style="{HEADING_STYLE}">{html.escape(title)}</h3>{lead if intro else ""}{body}'


def _how_split(axis, is_output: bool) -> str:
    if axis is None:
        return "the same on every device" if is_output else "broadcast: every device gets all"
    return ("device axis at out_axes=" if is_output else "split along in_axes=") + str(axis)


def array_card_html(layout: ArrayLayout, axis, is_output: bool, width_px: int) -> str:
    """One array's card: input or output, its name, shape and dtype, how pmap splits it, its
    diagram (:func:`array_html`), and the block each device holds."""
    kind = "output" if is_output else "input"
    return (
        f'<div style="min-width:0"><div style="line-height:1.5;margin-bottom:0.25rem">'
        f"<b>{kind} {_code(layout.name)}</b> {html.escape(fmt_shape(layout.shape))} "
        f"{_code(str(layout.dtype))}<br>{html.escape(_how_split(axis, is_output))}</div>"
        f"{array_html(layout, width_px)}"
        f'<div style="{CAPTION_STYLE}">each device: '
        f"{html.escape(fmt_shape(layout.local_shape))}</div></div>"
    )


def cards_html(cards: list[tuple], per_row: int, width_px: int) -> str:
    """Every array's card (``(layout, axis, is_output)``) in one grid of ``per_row`` columns,
    each about ``width_px`` wide: one block of HTML, so an edit redraws one element where a
    card of separate elements per array cost the browser a few milliseconds each."""
    return (
        f'<div style="display:grid;grid-template-columns:repeat({per_row},minmax(0,1fr));'
        f'gap:1rem">' + "".join(array_card_html(*card, width_px) for card in cards) + "</div>"
    )


def _swatch(position: int) -> str:
    return (
        f'<span style="display:inline-block;width:0.8em;height:0.8em;border-radius:2px;'
        f'margin-right:0.4em;vertical-align:-0.05em;background:{device_colour(position)}">'
        "</span>"
    )


_CELL = "padding:0.25rem 0.6rem;border-bottom:1px solid rgba(49,51,63,0.1);text-align:left"


def table_html(rows: list[dict[str, str]], label: str, positions: list[int]) -> str:
    """A static table of a few dozen rows, one per device: the first column names the device
    and carries its colour (the device at mesh position ``positions[k]``, the same colour on
    every page). Cells are text, escaped here."""
    head = "".join(f'<th style="{_CELL};font-weight:600">{html.escape(k)}</th>' for k in rows[0])
    body = []
    for k, row in enumerate(rows):
        cells = list(row.values())
        name = f"{_swatch(positions[k])}{html.escape(cells[0])}"
        first = f'<td style="{_CELL};white-space:nowrap">{name}</td>'
        rest = "".join(
            f'<td style="{_CELL};{MONO_CSS};font-size:0.875em">{html.escape(c)}</td>'
            for c in cells[1:]
        )
        body.append(f"<tr>{first}{rest}</tr>")
    return (
        f'<div style="overflow-x:auto"><table aria-label="{html.escape(label)}" '
        f'style="border-collapse:collapse;width:100%"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
