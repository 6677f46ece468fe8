"""Plotly figures. Each function takes data the core computed from real JAX objects and
returns a ``plotly.graph_objects.Figure``; nothing here computes what JAX can tell us."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from pmapviz.palette import device_colour, text_colour

FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14)


@dataclass(frozen=True)
class Block:
    """A labelled rectangle on a row: spans [x0, x1), coloured by device position."""

    x0: float
    x1: float
    text: str
    position: int | None  # device position for the colour; None draws a neutral block
    hover: str = ""


def _base(height: int, title: str | None = None) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        title=dict(text=title, x=0, font=dict(size=16)) if title else None,
        font=FONT,
        plot_bgcolor="rgba(0,0,0,0)",
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
        hoverlabel=dict(font=FONT),
    )
    return fig


def _draw_row(fig: go.Figure, y: float, blocks: Sequence[Block], height: float = 0.8) -> None:
    xs, ys, hovers = [], [], []
    for b in blocks:
        fill = "#EEEEEE" if b.position is None else device_colour(b.position)
        fig.add_shape(
            type="rect", x0=b.x0, x1=b.x1, y0=y - height / 2, y1=y + height / 2,
            fillcolor=fill, line=dict(color="#FFFFFF", width=2), layer="below",
        )  # fmt: skip
        fig.add_annotation(
            x=(b.x0 + b.x1) / 2, y=y, text=b.text, showarrow=False,
            font=dict(color=text_colour(fill), size=FONT["size"]),
        )  # fmt: skip
        xs.append((b.x0 + b.x1) / 2)
        ys.append(y)
        hovers.append(b.hover or b.text)
    # invisible markers carry the hover text
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="markers", marker=dict(size=30, opacity=0),
                   hovertext=hovers, hoverinfo="text")
    )  # fmt: skip


def device_set_figure(labels: Sequence[str], subtitles: Sequence[str], per_row: int = 8) -> go.Figure:
    """One tile per device, in mesh order: its name and a subtitle (e.g. id and process)."""
    n = len(labels)
    rows = max(1, -(-n // per_row))
    fig = _base(height=20 + 70 * rows)
    for r in range(rows):
        blocks = [
            Block(
                x0=c, x1=c + 0.94,
                text=f"<b>{labels[k]}</b><br><span style='font-size:11px'>{subtitles[k]}</span>",
                position=k, hover=f"{labels[k]} · {subtitles[k]}",
            )  # fmt: skip
            for c, k in enumerate(range(r * per_row, min(n, (r + 1) * per_row)))
        ]
        _draw_row(fig, -r, blocks)
    fig.update_xaxes(range=[-0.05, min(n, per_row) - 0.01])
    fig.update_yaxes(range=[-rows + 0.5, 0.5])
    return fig


def element_flow_figure(
    rows: Sequence[tuple[str, Sequence[Block]]], width_units: float, title: str | None = None
) -> go.Figure:
    """Rows of per-element blocks (e.g. input, output), each row labelled on the left."""
    fig = _base(height=40 + 75 * len(rows), title=title)
    for r, (label, blocks) in enumerate(rows):
        _draw_row(fig, -r, blocks)
        fig.add_annotation(x=-0.15, y=-r, text=f"<b>{label}</b>", showarrow=False, xanchor="right")
    for r in range(len(rows) - 1):  # arrows between consecutive rows, per block
        for b in rows[r][1]:
            fig.add_annotation(
                x=(b.x0 + b.x1) / 2, y=-r - 0.6, ax=(b.x0 + b.x1) / 2, ay=-r - 0.4,
                xref="x", yref="y", axref="x", ayref="y", text="",
                arrowhead=2, arrowsize=1, arrowwidth=1.5, arrowcolor="#888888",
            )  # fmt: skip
    fig.update_xaxes(range=[-1.6, width_units])
    fig.update_yaxes(range=[-len(rows) + 0.5, 0.5])
    return fig
