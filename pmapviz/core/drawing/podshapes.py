"""A TPU slice's chips laid out for drawing, from a :class:`~pmapviz.core.pods.podreport.PodReport`:
each chip's spot (a 3-D slice's z-planes side by side, several slices side by side), the
rectangles of its hosts, and on a multislice target each slice's frame and the DCN link between
neighbouring slices. Shapes and notes for Plotly (:mod:`podfigure` draws them). No JAX.
"""

from __future__ import annotations

from typing import NamedTuple

from pmapviz.core.pods.podreport import PodReport

CHIP = 0.72  # a chip's side, in slice units (neighbours are 1 apart)
PAD = 0.44  # a host's rectangle reaches this far beyond its chips' centres
OUTLINE = "#5B6573"
HOST_FILL, HOST_LINE = "rgba(91, 101, 115, 0.10)", "#8A94A3"
CROSSES = "#D55E00"  # a permute's pair (or a group) across hosts; the DCN link


class ChipSpot(NamedTuple):
    """One chip where it is drawn: its devices (v4: two cores), its host and coordinates."""

    x: float
    y: float
    label: str  # its device ids: '5' or '10, 11'
    device_ids: tuple[int, ...]
    host: int
    coords: tuple[int, int, int]
    slice: int = 0  # which slice of a multislice target


class HostBox(NamedTuple):
    """A host's chips on one z-plane: the rectangle drawn around them."""

    host: int
    z: int
    x0: float
    y0: float
    x1: float
    y1: float


DRAWN_DEVICES = 1024  # whole slices are drawn up to this many devices; the words count them all


def drawn_slices(slices: int, per_slice: int, most: int | None = None) -> int:
    """How many of a target's ``slices`` (``per_slice`` devices each) a picture draws: all of
    them up to :data:`DRAWN_DEVICES` devices (and ``most`` slices), else the first that fit, at
    least one. Every slice of a multislice target is the same slice, so the first show the
    layout."""
    fit = max(1, DRAWN_DEVICES // max(1, per_slice))
    return max(1, min(slices, fit, most or slices))


def drawn_words(drawn: int, slices: int) -> str:
    """'' where every slice is drawn, else 'drawn: slices 0 to 3 of 64, each laid out the
    same'."""
    if drawn >= slices:
        return ""
    return f"drawn: slices 0 to {drawn - 1} of {slices}, each laid out the same"


def _plane_step(report: PodReport) -> int:
    """How far apart (in x) the z-planes of a 3-D slice are drawn."""
    return max((c.coords[0] for c in report.chips), default=0) + 2


def _slice_step(report: PodReport) -> int:
    """How far apart (in x) the slices of a multislice target are drawn: one slice's planes
    and a gap of 3 for the DCN link between them."""
    return _plane_step(report) * (max((c.coords[2] for c in report.chips), default=0) + 1) + 1


def chip_layout(report: PodReport) -> list[ChipSpot]:
    """Every chip once, in the order of its first device: x = coords[0] (plus (max x + 2) * z on
    a 3-D slice, plus :func:`_slice_step` * its slice), y = coords[1]; the devices of one chip
    (v4's cores) share its spot."""
    step, across = _plane_step(report), _slice_step(report)
    by_coords: dict[tuple, list] = {}
    for chip in report.chips:
        by_coords.setdefault((chip.slice, tuple(chip.coords)), []).append(chip)
    spots = []
    for (on, coords), devices in by_coords.items():
        devices = sorted(devices, key=lambda d: (d.core, d.id))
        ids = tuple(d.id for d in devices)
        x = coords[0] + step * coords[2] + across * on
        label = ", ".join(map(str, ids))
        spots.append(ChipSpot(x, coords[1], label, ids, devices[0].host, coords, on))
    return spots


def slice_boxes(report: PodReport) -> list[HostBox]:
    """One rectangle per slice around its hosts' rectangles (``host`` holds the slice's
    index, ``z`` 0); none on a single slice."""
    parts: dict[int, list[ChipSpot]] = {}
    for s in chip_layout(report):
        parts.setdefault(s.slice, []).append(s)
    if len(parts) < 2:
        return []
    out, pad = [], PAD + 0.22
    for k, spots in sorted(parts.items()):
        xs, ys = [s.x for s in spots], [s.y for s in spots]
        out.append(HostBox(k, 0, min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad))
    return out


def _slice_parts(report: PodReport) -> tuple[list[dict], list[dict]]:
    """Each slice a dashed rectangle labelled 'slice k' under it, and a thick DCN link between
    neighbouring slices, labelled: the data-center network joins them, not ICI."""
    boxes = slice_boxes(report)
    shapes, notes = [], []
    for b in boxes:
        line = dict(color=OUTLINE, width=2, dash="dot")
        shapes.append(dict(type="path", path=_rounded(b, 0.3), line=line, layer="below"))
        notes.append(_note((b.x0 + b.x1) / 2, b.y1, f"<b>slice {b.host}</b>", 16, yanchor="top"))
    for a, b in zip(boxes, boxes[1:], strict=False):
        y = (a.y0 + a.y1) / 2
        link = dict(type="line", x0=a.x1, x1=b.x0, y0=y, y1=y, name="DCN")
        shapes.append(link | dict(line=dict(color=CROSSES, width=6)))
        up = dict(yanchor="bottom", yshift=6)
        notes.append(_note((a.x1 + b.x0) / 2, y, "<b>DCN</b>", 15, CROSSES, **up))
    return shapes, notes


def host_boxes(report: PodReport) -> list[HostBox]:
    """One rectangle per host and z-plane, around the host's chips there (by host, then z)."""
    parts: dict[tuple[int, int], list[ChipSpot]] = {}
    for s in chip_layout(report):
        parts.setdefault((s.host, s.coords[2]), []).append(s)
    boxes = []
    for (host, z), spots in sorted(parts.items()):
        xs, ys = [s.x for s in spots], [s.y for s in spots]
        boxes.append(HostBox(host, z, min(xs) - PAD, min(ys) - PAD, max(xs) + PAD, max(ys) + PAD))
    return boxes


def _rounded(b: HostBox, r: float = 0.18) -> str:
    """A rounded rectangle as an SVG path (plotly's rect shapes have square corners)."""
    x0, y0, x1, y1 = (round(v, 3) for v in (b.x0, b.y0, b.x1, b.y1))
    return (
        f"M {x0 + r},{y0} L {x1 - r},{y0} Q {x1},{y0} {x1},{y0 + r} L {x1},{y1 - r} "
        f"Q {x1},{y1} {x1 - r},{y1} L {x0 + r},{y1} Q {x0},{y1} {x0},{y1 - r} "
        f"L {x0},{y0 + r} Q {x0},{y0} {x0 + r},{y0} Z"
    )


def _note(x: float, y: float, text: str, size: int = 14, colour: str = "#222222", **kw) -> dict:
    """A text annotation in data coordinates."""
    return dict(x=x, y=y, text=text, showarrow=False, font=dict(size=size, color=colour), **kw)


def _host_parts(report: PodReport) -> tuple[list[dict], list[dict]]:
    """Rounded light rectangles, one per host (and z-plane), and their 'host k' labels."""
    shapes, labels = [], []
    for b in host_boxes(report):
        line = dict(color=HOST_LINE, width=1.5)
        box = dict(type="path", path=_rounded(b), name=f"host {b.host}", fillcolor=HOST_FILL)
        shapes.append(box | dict(line=line, layer="below"))
        back = dict(bgcolor="rgba(255,255,255,0.85)", borderpad=1)
        labels.append(_note((b.x0 + b.x1) / 2, b.y0, f"host {b.host}", colour="#333333", **back))
    return shapes, labels
