"""Device-aligned grids: one row per label, one coloured, labelled cell per device."""

from __future__ import annotations

import html

import streamlit as st

from pmapviz import devicesetup
from pmapviz.palette import MONO_CSS, device_colour, text_colour

Rows = list[tuple[str, list[tuple[str, int | None, str]]]]


def _cell(text: str, position: int | None, tooltip: str = "", mono: bool = True) -> str:
    fill = "#EEEEEE" if position is None else device_colour(position)
    font = MONO_CSS + ";" if mono else ""
    return (
        f"<div title='{html.escape(tooltip or text, quote=True)}' style='background:{fill};"
        f"color:{text_colour(fill)};border-radius:6px;padding:8px 4px;text-align:center;"
        f"{font}font-size:0.95em;line-height:1.25;overflow:hidden'>{text}</div>"
    )


def block_grid(rows: Rows, label: str) -> str:
    """A device-aligned grid as HTML: one row per label, one column per device; a picture
    (``role="img"``) that ``label`` describes to a screen reader.

    Each cell is ``(text, device position or None, tooltip)``; text is HTML-escaped by the
    caller's data (numbers and device names). Colour comes from the app's one device
    palette, and every cell also carries text, so colour is never the only cue. Plain
    HTML on purpose: it draws instantly (no chart library to load) and stays crisp when
    projected.
    """
    n = max(len(cells) for _, cells in rows)
    parts = [
        f"<div role='img' aria-label='{html.escape(label, quote=True)}' style='overflow-x:auto'>"
        "<div style='display:grid;gap:4px;align-items:center;"
        f"grid-template-columns:max-content repeat({n}, minmax(56px, 1fr));margin:4px 0 12px'>"
    ]
    for label, cells in rows:
        parts.append(
            f"<div style='font-weight:600;padding-right:8px;text-align:right'>{label}</div>"
        )
        parts.extend(_cell(text, pos, tip) for text, pos, tip in cells)
    parts.append("</div></div>")
    return "".join(parts)


def show(rows: Rows, label: str) -> None:
    """Draw :func:`block_grid` rows, a picture that ``label`` describes."""
    st.markdown(block_grid(rows, label), unsafe_allow_html=True)


def device_set(report: devicesetup.DeviceReport, per_row: int = 8) -> None:
    """Every device in mesh order, rows of ``per_row``, labelled and coloured from JAX."""
    n = report.count
    show(
        [
            (
                f"{start}-{min(n, start + per_row) - 1}",
                [
                    (
                        titled(d.label, f"id {d.id} · process {d.process_index}"),
                        k,
                        f"{d.label}: id {d.id}, process {d.process_index}, {d.kind}",
                    )
                    for k, d in enumerate(report.devices[start : start + per_row], start)
                ],
            )
            for start in range(0, n, per_row)
        ],
        f"The {n} devices of this server, in mesh order: "
        + ", ".join(report.labels[:16])
        + (" ..." if n > 16 else ""),
    )


def chips(positions: list[int | None]) -> str:
    """Small chips coloured by device position, each labelled with its number; '·' for none
    (for a cell of :func:`block_grid`)."""
    out = []
    for s in positions:
        if s is None:
            out.append("<span style='padding:0 4px;color:inherit'>·</span>")
        else:
            fill = device_colour(s)
            out.append(
                f"<span style='background:{fill};color:{text_colour(fill)};"
                f"border-radius:3px;padding:0 4px;margin:1px'>{int(s)}</span>"
            )
    return "".join(out)


def titled(title: str, detail: str) -> str:
    """A cell's text for :func:`block_grid`: a bold title over a small detail line (escaped)."""
    return f"<b>{html.escape(title)}</b><br><small>{html.escape(detail)}</small>"
