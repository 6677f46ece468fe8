"""A TPU slice drawn with Plotly, from a :class:`~pmapviz.core.pods.podreport.PodReport`.

:func:`pod_figure`: the chips at their coordinates (a 3-D slice's z-planes side by side), each
host a rounded rectangle around its chips, and optionally one collective laid on them: its groups
as colours (dashed where a group spans hosts), or a collective-permute's pairs as arrows.
:func:`sweep_figure`: one program compiled for slices of growing size, the compiler's estimate and
the modelled communication stacked, against the ideal (time / chips). No JAX, no Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import plotly.graph_objects as go

from pmapviz.core.base.palette import FONT, device_colour, text_colour
from pmapviz.core.drawing.podshapes import (
    CHIP,
    CROSSES,
    OUTLINE,
    PAD,
    ChipSpot,
    _host_parts,
    _note,
    _plane_step,
    _slice_parts,
    chip_layout,
    drawn_slices,
    drawn_words,
    host_boxes,  # noqa: F401  (the figure's layout, read by its tests)
    slice_boxes,  # noqa: F401
)
from pmapviz.core.pods.commmodel import MODEL_NAME, axes_words
from pmapviz.core.pods.podreport import PodCollective, PodReport, fmt_gib

TEXT_MAX = 64  # above this many chips, no text on the chips (hover only)
WIDTH = 1180  # the plot's width this figure is laid out for (a 1280-px screen, less margins)
IDLE = "#FFFFFF"  # a chip outside every drawn group
SENDS = "#BFD7EA"  # a chip that takes part in a permute
WITHIN = "#0072B2"  # a permute's pair on one host
DASHED, NO_FIT = "#111111", "#C00000"
EST, COMM = "compute + HBM (the compiler's estimate)", "communication (model)"
PERMUTE = "collective-permute"
PAIRS = (("pair on one host", WITHIN, 2), ("pair crosses hosts", CROSSES, 3))  # arrow styles
MARGIN = dict(l=70, r=20, t=130, b=104)  # the sweep's (three lines under each bar)
TICKS = dict(tickfont=dict(size=14), showgrid=False)


def _collective(report: PodReport, collective: int) -> PodCollective:
    n = len(report.collectives)
    if not isinstance(collective, int) or not 0 <= collective < n:
        raise IndexError(f"collective {collective!r}: the report has {n} collective(s)")
    return report.collectives[collective]


def group_of_device(report: PodReport, collective: int) -> dict[int, int]:
    """Device id -> the index of its group in ``report.collectives[collective]`` (a permute:
    the first pair the device is in). Devices in no group are left out."""
    out: dict[int, int] = {}
    for g, devices in enumerate(_collective(report, collective).groups):
        for d in devices:
            out.setdefault(d, g)
    return out


def crossing_groups(report: PodReport, collective: int) -> set[int]:
    """Indices of the collective's groups (a permute: pairs) whose devices sit on more than one
    host, from the report's chips."""
    host = {c.id: c.host for c in report.chips}
    groups = _collective(report, collective).groups
    return {g for g, devices in enumerate(groups) if len({host.get(d) for d in devices}) > 1}


def _device_points(spots: list[ChipSpot]) -> dict[int, tuple[float, float]]:
    """Where each device is drawn: its chip's centre, or the middle of its core's strip (v4:
    core 0 the chip's top half, core 1 its bottom half)."""
    return {
        d: (s.x, s.y + (k - (len(s.device_ids) - 1) / 2) * CHIP / len(s.device_ids))
        for s in spots
        for k, d in enumerate(s.device_ids)
    }


class _Paint(NamedTuple):
    """What a collective does to the chips: fills, dashed outlines, hover lines, legend."""

    fill: dict[int, str]  # device id -> colour
    dashed: set[int]  # device ids in groups that cross hosts
    notes: dict[int, str]  # device id -> a hover line
    legend: list[go.Scatter]
    arrows: list[dict]


def _legend_entry(name: str, mode: str = "markers", **style) -> go.Scatter:
    """A legend line with nothing drawn (the figure's shapes and arrows carry no legend)."""
    return go.Scatter(x=[None], y=[None], mode=mode, name=name, hoverinfo="skip", **style)


def _group_paint(report: PodReport, index: int) -> _Paint:
    """Each group its palette colour (cycling past 16 groups); groups across hosts dashed."""
    coll = _collective(report, index)
    of = group_of_device(report, index)
    crossing = crossing_groups(report, index)
    fill = {d: device_colour(g) for d, g in of.items()}
    dashed = {d for d, g in of.items() if g in crossing}
    n, size = len(coll.groups), coll.group_size
    notes = {
        d: f"group {g} of {n} ({size} devices)" + (", crosses hosts" if g in crossing else "")
        for d, g in of.items()
    }
    legend = []
    if n <= 8:
        for g, devices in enumerate(coll.groups):
            shown = ", ".join(map(str, devices[:4])) + (", …" if len(devices) > 4 else "")
            square = dict(symbol="square", size=16, color=device_colour(g))
            legend.append(_legend_entry(f"group {g}: {shown}", marker=square))
    if crossing:
        box = dict(symbol="square-open", size=16, color=DASHED, line=dict(width=3))
        legend.append(_legend_entry(f"crosses hosts, dashed ({len(crossing)} of {n})", marker=box))
    return _Paint(fill, dashed, notes, legend, [])


def _arrow(a: tuple[float, float], b: tuple[float, float], crosses: bool, unit_px: float) -> dict:
    """An arrow from device point ``a`` to ``b``, off both centres, thinner on large slices."""
    scale, px = (1.0 if unit_px >= 40 else 0.6), max(2.0, unit_px * CHIP / 4)
    _, colour, width = PAIRS[crosses]
    style = dict(arrowwidth=scale * width, arrowcolor=colour, arrowsize=1.1 * scale)
    ends = dict(x=b[0], y=b[1], ax=a[0], ay=a[1], xref="x", yref="y", axref="x", ayref="y")
    head = dict(text="", showarrow=True, arrowhead=3, standoff=px, startstandoff=px)
    return ends | head | style


def _permute_paint(report: PodReport, index: int, points: dict, unit_px: float) -> _Paint:
    """A collective-permute: an arrow from each source to its target; pairs across hosts in
    orange and thicker. Chips that send or receive are tinted."""
    coll = _collective(report, index)
    crossing = crossing_groups(report, index)
    notes: dict[int, list[str]] = {}
    arrows = []
    for k, pair in enumerate(coll.groups):
        src, dst = pair[0], pair[-1]
        notes.setdefault(src, []).append(f"sends to device {dst}")
        notes.setdefault(dst, []).append(f"receives from device {src}")
        if src in points and dst in points:
            arrows.append(_arrow(points[src], points[dst], k in crossing, unit_px))
    counts = (len(coll.groups) - len(crossing), len(crossing))
    legend = [
        _legend_entry(f"{w} ({n})", "lines", line=dict(color=c, width=px))
        for (w, c, px), n in zip(PAIRS, counts, strict=True)
        if n
    ]
    fill = {d: SENDS for d in notes}
    return _Paint(fill, set(), {d: "; ".join(v) for d, v in notes.items()}, legend, arrows)


def _rect(x: float, y: float, height: float, name: str, fill: str, line: dict) -> dict:
    """A rectangle CHIP wide and ``height`` tall around (x, y), in data coordinates."""
    x0, x1, y0, y1 = x - CHIP / 2, x + CHIP / 2, y - height / 2, y + height / 2
    return dict(type="rect", name=name, x0=x0, x1=x1, y0=y0, y1=y1, fillcolor=fill, line=line)


def _chip_shapes(spots: list[ChipSpot], paint: _Paint | None, unit_px: float) -> list[dict]:
    """A square per chip (its first device's colour); a core whose colour differs gets its own
    strip of the square; chips of groups across hosts get a dashed outline."""
    fill = paint.fill if paint else {}
    dashed = paint.dashed if paint else set()
    points, shapes = _device_points(spots), []
    thick = dict(color=DASHED, width=3 if unit_px >= 40 else 1.5, dash="dash")
    for s in spots:
        line = thick if any(d in dashed for d in s.device_ids) else dict(color=OUTLINE, width=1)
        first = fill.get(s.device_ids[0], IDLE)
        shapes.append(_rect(s.x, s.y, CHIP, "chip", first, line))
        for d in s.device_ids[1:]:
            if fill.get(d, IDLE) != first:
                strip = CHIP / len(s.device_ids)
                shapes.append(_rect(s.x, points[d][1], strip, "core", fill.get(d, IDLE), line))
    return shapes


def _chip_texts(spots: list[ChipSpot], paint: _Paint | None, unit_px: float = 80) -> list[dict]:
    """Each device's id on its chip (or its core's strip), on slices of at most TEXT_MAX chips,
    in a font that fits the chip (a multislice id is 6 digits: '100000'); none below 10 px."""
    if len(spots) > TEXT_MAX:
        return []
    fill = paint.fill if paint else {}
    longest = max(len(str(d)) for s in spots for d in s.device_ids)
    size = min(16 if len(spots) <= 16 else 14, int(unit_px * CHIP / (0.62 * longest)))
    if size < 10:
        return []
    return [
        _note(x, y, str(d), size, text_colour(fill.get(d, IDLE)))
        for d, (x, y) in _device_points(spots).items()
    ]


def _hover_trace(
    report: PodReport, spots: list[ChipSpot], paint: _Paint | None, marker_px: float
) -> go.Scatter:
    """Invisible square markers on the chips: what the hover says about each (its mesh place)."""
    notes = paint.notes if paint else {}
    texts = []
    for s in spots:
        each = len(s.device_ids) > 1
        lines = [f"device{'s' if each else ''} {s.label}", f"chip at {s.coords}", f"host {s.host}"]
        lines += [f"mesh: {m}" for m in map(report.mesh_label, s.device_ids) if m]
        lines += [(f"device {d}: " if each else "") + notes[d] for d in s.device_ids if d in notes]
        texts.append("<br>".join(lines))
    marker = dict(symbol="square", size=marker_px, opacity=0)
    at = dict(x=[s.x for s in spots], y=[s.y for s in spots], mode="markers", marker=marker)
    return go.Scatter(at, name="chips", showlegend=False, hoverinfo="text", hovertext=texts)


def _plane_labels(spots: list[ChipSpot], step: int) -> list[dict]:
    """'z = k' above each z-plane of a 3-D slice (nothing on a 2-D one)."""
    planes = sorted({s.coords[2] for s in spots})
    if planes == [0]:
        return []
    y, up = min(s.y for s in spots) - PAD, dict(yanchor="bottom", yshift=12)
    return [_note(step * z + (step - 2) / 2, y, f"<b>z = {z}</b>", 16, **up) for z in planes]


def _words(report: PodReport, index: int | None) -> tuple[str, str]:
    """The default title and the subtitle (the mesh's axes; the collective in numbers)."""
    chips = _chips(report)
    hosts = len({c.host for c in report.chips})
    slices = len({c.slice for c in report.chips})
    title = f"{report.topology}: {chips} chips on {hosts} host{'s' if hosts != 1 else ''}"
    title += f" in {slices} slices" if slices > 1 else ""
    axes = " × ".join(f"{name} {size}" for name, size in report.mesh_axes)
    sub = f"mesh: {axes or 'none'}"
    per = len(report.chips) // max(1, chips)
    if per > 1:
        sub += f" ({per} devices a chip)"
    if index is not None:
        coll = report.collectives[index]
        title += f" · {coll.kind} {coll.shape}" + (f" [{coll.network}]" if slices > 1 else "")
        many = "s" if len(coll.groups) != 1 else ""
        unit = f"pair{many}" if coll.kind == PERMUTE else f"group{many} of {coll.group_size}"
        crossing = len(crossing_groups(report, index))
        sub += f" · {len(coll.groups)} {unit}, {crossing} across hosts"
        sub += f" · communication {coll.model_s * 1e3:.3f} ms (model)"
    return title, sub


def _layout(title: str, subtitle: str, height: int, margin: dict, **rest) -> dict:
    """What both figures share: large fonts for a projector, a title with a subtitle."""
    head = dict(text=title, font=dict(size=20), x=0.01)
    head["subtitle"] = dict(text=subtitle, font=dict(size=15))
    clear = dict(plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)")
    shared = dict(height=height, margin=margin, font=FONT, title=head, hoverlabel=dict(font=FONT))
    return shared | clear | rest


def _frame(spots: list[ChipSpot], legend: bool) -> dict:
    """Axis ranges, height and margins for the chips' extent (equal aspect, row 0 on top)."""
    xs, ys = [s.x for s in spots], [s.y for s in spots]
    three_d = len({s.coords[2] for s in spots}) > 1
    slices = 0.9 if len({s.slice for s in spots}) > 1 else 0.0  # room for 'slice k' under
    x_range = [min(xs) - PAD - 0.3 - slices / 3, max(xs) + PAD + 0.3 + slices / 3]
    y_range = [max(ys) + PAD + 0.3 + slices, min(ys) - PAD - (1.0 if three_d else 0.5)]
    x_span, y_span = x_range[1] - x_range[0], y_range[0] - y_range[1]
    top, bottom = 96, (56 if legend else 16)
    height = int(min(560, max(360, y_span * min(WIDTH / x_span, 80.0) + top + bottom)))
    unit_px = min(WIDTH / x_span, (height - top - bottom) / y_span)
    return dict(x=x_range, y=y_range, height=height, top=top, bottom=bottom, px=unit_px)


def drawn_part(report: PodReport) -> PodReport:
    """The slices the figure draws (:func:`~pmapviz.core.drawing.podshapes.drawn_slices`:
    every slice up to 1,024 devices, else the first whole slices that fit), each collective's
    groups cut to their devices there (a permute's pairs kept where both ends are). Every slice
    of a multislice target is the same slice, so the first ones show the layout; the words
    still count every slice."""
    slices = len({c.slice for c in report.chips})
    keep = drawn_slices(slices, len(report.chips) // max(1, slices))
    if keep >= slices:
        return report
    ids = {c.id for c in report.chips if c.slice < keep}

    def cut(c: PodCollective) -> PodCollective:
        if c.kind == PERMUTE:
            return replace(c, groups=tuple(g for g in c.groups if set(g) <= ids))
        inside = (tuple(d for d in g if d in ids) for g in c.groups)
        return replace(c, groups=tuple(g for g in inside if g))

    chips = tuple(c for c in report.chips if c.id in ids)  # the mesh keeps every device
    return replace(report, chips=chips, collectives=tuple(map(cut, report.collectives)))


def pod_figure(
    report: PodReport, collective: int | None = None, title: str | None = None
) -> go.Figure:
    """The slice's chips at their coordinates, hosts as rounded rectangles around them, and
    (``collective``: an index into ``report.collectives``) that collective's groups as colours
    (dashed where a group crosses hosts), or a permute's pairs as arrows."""
    whole, report = report, drawn_part(report)
    spots = chip_layout(report)
    if not spots:
        raise ValueError(f"{report.topology}: the report has no chips to draw")
    coll = None if collective is None else _collective(report, collective)
    frame = _frame(spots, legend=coll is not None)
    paint = None
    if coll is not None and coll.kind == PERMUTE:
        paint = _permute_paint(report, collective, _device_points(spots), frame["px"])
    elif coll is not None:
        paint = _group_paint(report, collective)
    host_shapes, host_labels = _host_parts(report)
    slice_shapes, slice_labels = _slice_parts(report)
    host_shapes = slice_shapes + host_shapes
    default, subtitle = _words(whole, collective)
    if report is not whole:  # some slices left out: said where the figure is named
        default += " · " + drawn_words(len({s.slice for s in spots}), whole.slices)
    marker_px = max(8.0, frame["px"] * CHIP)
    notes = (
        _plane_labels(spots, _plane_step(report))
        + host_labels
        + _chip_texts(spots, paint, frame["px"])
    )
    notes += slice_labels
    hidden = dict(visible=False, showgrid=False, zeroline=False, fixedrange=True)
    margin = dict(l=10, r=10, t=frame["top"], b=frame["bottom"])
    layout = _layout(title or default, subtitle, frame["height"], margin)
    layout["legend"] = dict(orientation="h", x=0, y=0, yanchor="top", font=dict(size=14))
    layout["shapes"] = host_shapes + _chip_shapes(spots, paint, frame["px"])
    layout["annotations"] = notes + (paint.arrows if paint else [])
    layout["xaxis"] = hidden | dict(range=frame["x"])
    layout["yaxis"] = hidden | dict(range=frame["y"], scaleanchor="x", scaleratio=1)
    legend = paint.legend if paint else []
    layout["showlegend"] = bool(legend)
    return go.Figure(data=[_hover_trace(report, spots, paint, marker_px)] + legend, layout=layout)


# ------------------------------------------------------------------------------- the sweep
def _chips(report: PodReport) -> int:
    """Physical chips (a v4 chip's two devices count once; every slice's)."""
    return len({(c.slice, c.coords) for c in report.chips})


def _positions(chips: list[int]) -> tuple[list[float], float]:
    """x = log2(chips); reports of the same chip count side by side around it. (x, bar width)."""
    width = 0.6 / max(chips.count(n) for n in chips)
    shift = [chips[:k].count(n) - (chips.count(n) - 1) / 2 for k, n in enumerate(chips)]
    return [math.log2(n) + d * width for n, d in zip(chips, shift, strict=True)], width


def _ideal(reports: list[PodReport], chips: list[int]) -> tuple[list[float], str]:
    """The first report's total (compiler's estimate + communication) times its chips / chips,
    in ms (the first report with an estimate; where none has one, the first's communication)."""
    base = next((k for k, r in enumerate(reports) if r.optimal_s is not None), None)
    if base is None:
        total, label, base = reports[0].comm_s, "ideal: communication / chips", 0
    else:
        total, label = reports[base].optimal_s + reports[base].comm_s, "ideal: time / chips"
    return [total * 1e3 * chips[base] / n for n in chips], label


def _sweep_notes(reports: list[PodReport], xs: list[float], tops: list[float]) -> list[dict]:
    """'does not fit' (red) and 'no compiler estimate' above the bars they concern."""
    notes = []
    for r, x, top in zip(reports, xs, tops, strict=True):
        lines = []
        if not r.fits:
            lines.append(
                (f"<b>does not fit</b> (by {fmt_gib(r.peak_bytes - r.hbm_bytes)})", NO_FIT)
            )
        if r.optimal_s is None:
            lines.append(("no compiler estimate", "#555555"))
        for k, (text, colour) in enumerate(reversed(lines)):
            notes.append(_note(x, top, text, 14, colour, yanchor="bottom", yshift=4 + 20 * k))
    return notes


def _sweep_traces(rs: list[PodReport], chips: list[int], xs: list[float], width: float) -> list:
    """The two stacked bars (ms; no estimate: None) and the ideal line."""
    est = [None if r.optimal_s is None else r.optimal_s * 1e3 for r in rs]
    comm = [r.comm_s * 1e3 for r in rs]
    ideal, label = _ideal(rs, chips)
    names = [f"{r.topology} ({n} chips)" for r, n in zip(rs, chips, strict=True)]
    at = dict(x=xs, customdata=names)
    hover = "%%{customdata}<br>%s: %%{y:.3f} ms<extra></extra>"
    bars = ((est, EST, "compiler's estimate"), (comm, COMM, COMM))
    traces = [
        go.Bar(at, y=y, name=name, marker_color=device_colour(k), hovertemplate=hover % what)
        for k, (y, name, what) in enumerate(bars)
    ]
    for t in traces:
        t.width = width
    line = dict(color="#333333", width=2, dash="dot")
    dots = dict(mode="lines+markers", line=line, marker=dict(size=8))
    return traces + [go.Scatter(at, y=ideal, name=label, hovertemplate=hover % "ideal", **dots)]


def sweep_figure(reports: list[PodReport], title: str | None = None) -> go.Figure:
    """Per slice (x: chips, log2; under it, the model's links: 'line x ring') the compiler's
    estimate (compute + HBM) and the communication model stacked, in ms, against the ideal
    (the smallest slice's time / chips); slices that do not fit say so in red, and slices
    without an estimate (libtpu has no cost model, e.g. v6e) show communication only."""
    if not reports:
        raise ValueError("sweep_figure needs at least one report")
    rs = sorted(reports, key=_chips)
    chips = [_chips(r) for r in rs]
    xs, width = _positions(chips)
    data = _sweep_traces(rs, chips, xs, width)
    tops = [(r.optimal_s or 0.0) * 1e3 + r.comm_s * 1e3 for r in rs]
    peak = max(tops + list(data[2].y) + [1e-9])
    gens = ", ".join(dict.fromkeys(r.generation for r in rs))
    default = f"{rs[0].label} on {gens} slices of {chips[0]} to {chips[-1]} chips"
    ticks = [f"{r.topology}<br>{n} chips" for r, n in zip(rs, chips, strict=True)]
    ticks = [t + (u and f"<br>{u}") for t, u in zip(ticks, map(axes_words, rs), strict=True)]
    layout = _layout(title or default, f"communication: {MODEL_NAME}", 480, MARGIN, barmode="stack")
    layout["legend"] = dict(orientation="h", x=0, y=1.02, yanchor="bottom", traceorder="normal")
    layout["annotations"] = _sweep_notes(rs, xs, tops)
    x_title, x_range = dict(text="chips (log₂ scale)"), [min(xs) - 0.6, max(xs) + 0.6]
    layout["xaxis"] = dict(title=x_title, tickvals=xs, ticktext=ticks, range=x_range) | TICKS
    layout["yaxis"] = dict(title=dict(text="time (ms)"), range=[0, peak * 1.25]) | TICKS
    layout["yaxis"] |= dict(showgrid=True, gridcolor="#E5E8EC", zeroline=False)
    return go.Figure(data=data, layout=layout)
