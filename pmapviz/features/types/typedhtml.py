"""The typed program drawn so the eye follows the sharding: one row per equation, one column
per mode, each type as JAX prints it with its split axes coloured per mesh axis (``@data`` in
data's colour), the varying, unreduced and reduced marks (``{V:..}``, ``{U:..}``, ``{R:..}``)
set apart, for Auto the PartitionSpec XLA chose beside the type, and each equation's
collectives beside it; a legend says what every colour and mark means.

Plain HTML with inline styles (a page's ``st.html`` and a notebook's ``_repr_html_`` alike);
every text is escaped, and marks are added to JAX's own text only around what a pattern
recognised, so a type is never rewritten.
"""

from __future__ import annotations

import functools
import html
import os
import re
from collections.abc import Mapping

from pmapviz.core.base.palette import MONO_CSS, device_colour, text_colour
from pmapviz.core.base.valuetext import fmt_bytes
from pmapviz.core.xla.hlo import HloCollective
from pmapviz.features.meshes.meshspecs import Mesh
from pmapviz.features.types import typedalign
from pmapviz.features.types.typedeqns import TypedEqn
from pmapviz.features.types.typedmodes import MODES, TITLES, WORDS
from pmapviz.features.types.typedprogram import TypedRow, TypedView

MARKS = {
    "V": "varying: each device along these axes holds a different value",
    "U": "unreduced: each device holds a partial sum; the sum over these axes is still owed",
    "R": "reduced: the sum over these axes is done and every device holds it",
}
_SPLIT = re.compile(r"@(\([A-Za-z0-9_, ]+\)|[A-Za-z_][A-Za-z0-9_]*)")
_MARK = re.compile(r"\{([^{}]*)\}")
_TYPE_PARTS = re.compile(rf"{_SPLIT.pattern}|{_MARK.pattern}")
QUOTED_NAME = r"'([A-Za-z_][A-Za-z0-9_]*)'"
_CELL = "padding:3px 8px;vertical-align:top;border-bottom:1px solid #eaeef2"


def esc(text) -> str:
    """Text as HTML text, nothing of it markup."""
    return html.escape(str(text), quote=True)


def axis_colours(mesh: Mesh) -> dict[str, str]:
    """Each mesh axis's colour: axis k takes the palette's colour k."""
    return {name: device_colour(k) for k, name in enumerate(mesh.names)}


def _chip(name: str, colours: Mapping[str, str]) -> str:
    return _chip_in(name, colours.get(name, "#d0d7de"))


@functools.lru_cache(maxsize=256)
def _chip_in(name: str, fill: str) -> str:
    return (
        f"<span style='background:{fill};color:{text_colour(fill)};border-radius:3px;"
        f"padding:0 3px'>{esc(name)}</span>"
    )


def _coloured(text: str, pattern: str, colours: Mapping[str, str]) -> str:
    """``text`` escaped, each match of ``pattern`` (its group 1, a mesh axis's name) as a chip
    in that axis's colour (the rest of the match kept around it)."""
    out, pos = [], 0
    for m in re.finditer(pattern, text):
        out.append(
            esc(text[pos : m.start(1)]) + _chip(m[1], colours) + esc(text[m.end(1) : m.end()])
        )
        pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def _axes_html(group: str, colours: Mapping[str, str]) -> str:
    """'data' or '(data,model)', each name in its colour."""
    return _coloured(group, r"([A-Za-z_][A-Za-z0-9_]*)", colours)


def type_html(text: str, colours: Mapping[str, str]) -> str:
    """A type as JAX prints it, escaped, its ``@axis`` parts coloured and its ``{V:..}``
    (``U``, ``R``) marks set apart; the text itself unchanged."""
    out, pos = [], 0
    for m in _TYPE_PARTS.finditer(text):
        out.append(esc(text[pos : m.start()]))
        if m[0].startswith("@"):
            out.append("@" + _axes_html(m[1], colours))
        else:
            out.append(_mark_html(m[0], colours))
        pos = m.end()
    out.append(esc(text[pos:]))
    return f"<span style='{MONO_CSS};white-space:nowrap'>{''.join(out)}</span>"


def _mark_html(braced: str, colours: Mapping[str, str]) -> str:
    inner = braced[1:-1]
    parts = []
    for part in re.split(r"(,\s*(?=[VUR]:))", inner):
        kind, colon, axes = part.partition(":")
        if colon and kind.strip() in MARKS:
            title = esc(MARKS[kind.strip()])
            parts.append(
                f"<b title='{title}' style='border-bottom:2px dotted #57606a'>{esc(kind)}</b>:"
                + _axes_html(axes, colours)
            )
        else:
            parts.append(esc(part))
    return "{" + "".join(parts) + "}"


def comm_html(collectives: tuple[HloCollective, ...]) -> str:
    """Each collective as one line: kind, operand per device, groups, bytes per device."""
    lines = []
    for c in collectives:
        if c.replica_groups is not None:
            sizes = sorted({len(g) for g in c.replica_groups})
            who = f"{len(c.replica_groups)} group(s) of {'/'.join(map(str, sizes))}"
        else:
            who = f"{len(c.source_target_pairs or ())} pair(s)"
        lines.append(
            f"<div style='color:#8250df'>&#8644; <b>{esc(c.kind)}</b> {esc(c.shape_text)} "
            f"· {esc(who)} · {esc(fmt_bytes(c.bytes))}/device</div>"
        )
    return "".join(lines)


def row_html(row: TypedRow, colours: Mapping[str, str]) -> str:
    """One equation in one mode's column: primitive, types, XLA's choice, collectives."""
    e = row.eqn
    types = ", ".join(type_html(t, colours) for t in e.out_types) or "()"
    chosen = "".join(
        f"<div style='color:#57606a'>XLA chose {_spec_html(c.text, colours)}</div>"
        for c in row.chosen
    )
    return (
        f"<div style='padding-left:{min(e.depth, 12) * 14}px'>"
        f"<span style='color:#57606a'>{esc(e.primitive)}</span> &#8594; {types}"
        f"{chosen}{comm_html(row.collectives)}</div>"
    )


def _spec_html(text: str, colours: Mapping[str, str]) -> str:
    """A PartitionSpec's text, each quoted axis name in its colour."""
    named = _coloured(text, QUOTED_NAME, colours)
    return f"<span style='{MONO_CSS}'>{named}</span>"


def _header(mode: str, view: TypedView | None) -> str:
    title = f"<div style='font-weight:700'>{esc(TITLES[mode])}</div>"
    if view is None:
        return title + "<div style='color:#57606a'>not compiled yet: open this mode</div>"
    timing = f"traced in {view.trace_s * 1e3:,.0f} ms"
    if view.error is None:
        timing += f", compiled in {view.compile_s * 1e3:,.0f} ms"
    note = ""
    if mode == "auto":
        note = (
            "<div style='color:#57606a'>types carry no sharding; "
            + ("XLA's choice under each" if view.propagated else "XLA's choices not read here")
            + "</div>"
        )
    error = (
        f"<div role='alert' style='background:#ffebe9;padding:2px 6px'>{esc(view.error)}</div>"
        if view.error
        else ""
    )
    return (
        f"{title}<div style='color:#57606a;font-size:0.75rem'>{esc(view.mesh_words)}; "
        f"{esc(timing)}</div>{note}{error}"
    )


EXPRESSION_FILES = ("pmapviz/core/expressions/", "pmapviz\\core\\expressions\\")


def source_html(e: TypedEqn) -> str:
    """Where an equation was traced: JAX's recorded file and line (the function in its
    tooltip); for a typed expression (your own f, the Meshes page's bodies) "your expression",
    JAX's line in its tooltip (the line is that of pmapviz's interpreter, which ran it)."""
    if not e.file:
        return ""
    if any(part in e.file for part in EXPRESSION_FILES):
        return f"<span title='{esc('JAX records ' + e.source)}'>your expression</span>"
    short = f"{os.path.basename(e.file)}:{e.line}"
    return f"<span title='{esc(e.source)}'>{esc(short)}</span>"


def _key(row: TypedRow) -> tuple:
    e = row.eqn
    return (e.primitive, e.file, e.line, e.column)


def grid_html(views: Mapping[str, TypedView | None], mesh: Mesh, label: str) -> str:
    """The grid: a column per mode in :data:`MODES` order (None: not opened), a row per
    equation lined up across the modes (:mod:`pmapviz.features.types.typedalign`), the
    inputs first and the outputs last; a picture that ``label`` describes."""
    colours = axis_colours(mesh)
    modes = [m for m in MODES if m in views]
    opened = {m: v for m, v in views.items() if v is not None}
    slots = typedalign.align({m: [_key(r) for r in v.rows] for m, v in opened.items()})
    th = f"style='{_CELL};text-align:left;min-width:12rem'"
    head = "".join(f"<th {th}>{_header(m, views[m])}</th>" for m in modes)
    body = [_types_row("in", opened, modes, lambda v: v.in_types, colours)]
    for slot in slots:
        first = opened[next(iter(slot))].rows[slot[next(iter(slot))]].eqn
        cells = "".join(
            f"<td style='{_CELL}'>"
            + (row_html(opened[m].rows[slot[m]], colours) if m in opened and m in slot else "")
            + "</td>"
            for m in modes
        )
        source = f"<td style='{_CELL};color:#57606a;font-size:0.75rem'>{source_html(first)}</td>"
        body.append(f"<tr>{source}{cells}</tr>")
    body.append(_types_row("out", opened, modes, lambda v: v.out_types, colours))
    body.append(_extra_row(opened, modes))
    return (
        f"<div role='img' aria-label='{esc(label)}' style='overflow-x:auto'>"
        "<table style='border-collapse:collapse;font-size:0.82rem;margin:4px 0'>"
        f"<thead><tr><th {th.replace('min-width:12rem', 'min-width:5rem')}>source</th>{head}"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _types_row(name: str, opened, modes, pick, colours) -> str:
    cells = "".join(
        f"<td style='{_CELL};background:#f6f8fa'>"
        + (", ".join(type_html(t, colours) for t in pick(opened[m])) if m in opened else "")
        + "</td>"
        for m in modes
    )
    return f"<tr><td style='{_CELL};background:#f6f8fa;font-weight:600'>{name}</td>{cells}</tr>"


def _extra_row(opened, modes) -> str:
    if not any(v.unmatched or v.left_out for v in opened.values()):
        return ""
    cells = []
    for m in modes:
        v = opened.get(m)
        text = ""
        if v is not None and v.unmatched:
            text += "<div>at the program's edges (no equation named):</div>" + comm_html(
                v.unmatched
            )
        if v is not None and v.left_out:
            text += f"<div>{v.left_out:,} more equations not listed</div>"
        cells.append(f"<td style='{_CELL}'>{text}</td>")
    return f"<tr><td style='{_CELL}'></td>{''.join(cells)}</tr>"


def legend_html(mesh: Mesh) -> str:
    """What the colours and marks mean: each mesh axis (its size), V, U and R, and XLA's
    choice; the modes in a sentence each."""
    colours = axis_colours(mesh)
    axes = " ".join(
        f"{_chip(name, colours)} {esc(name)} ({size} devices)"
        for name, size in zip(mesh.names, mesh.shape, strict=True)
    )
    marks = "".join(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in MARKS.items())
    modes = "".join(f"<li>{esc(WORDS[m])}</li>" for m in MODES)
    return (
        "<div style='font-size:0.82rem;margin:4px 0'>"
        f"<div><b>Mesh axes</b>: {axes}. <span style='{MONO_CSS}'>64@data</span>: a dimension "
        "of 64 split over data (each device along data holds 64 / its size).</div>"
        f"<ul style='margin:2px 0'>{marks}<li><b>&#8644;</b>: a collective XLA emitted for "
        "this equation, read from the compiled program</li></ul>"
        f"<ul style='margin:2px 0'>{modes}</ul></div>"
    )


def describe(views: Mapping[str, TypedView | None], program: str) -> str:
    """The picture's label: the program, its modes and their counts, from the views."""
    parts = []
    for m in MODES:
        v = views.get(m)
        if v is None:
            continue
        if v.error:
            parts.append(f"{TITLES[m]}: JAX refused it")
            continue
        comm = len(v.collectives)
        parts.append(f"{TITLES[m]}: {len(v.rows)} equations, {comm} collective(s)")
    return f"The typed program of {program}, one column per mode: " + "; ".join(parts)
