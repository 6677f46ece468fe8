"""ppermute drawn as a Plotly figure: each device's block before (top row) and after (bottom
row), with an arrow from every source to its destination. The devices' names come from JAX;
nothing here decides which device sends what. (Arrays drawn as HTML:
:mod:`pmapviz.core.drawing.arrayhtml`.)
"""

from __future__ import annotations

import plotly.graph_objects as go

from pmapviz.core.base.palette import FONT, device_colour, text_colour
from pmapviz.core.drawing.arrayhtml import NEUTRAL, _block_label, _Canvas, _label, _rect


def _canvas_figure(
    fig: _Canvas, x_range: list[float], y_range: list[float], height: int
) -> go.Figure:
    """A canvas's blocks and notes as ONE Plotly figure, axes hidden: plotly validates the
    whole layout once, where ``add_shape`` per block re-set and re-validated every earlier
    shape (quadratic: seconds for a few hundred blocks)."""
    bs = fig.blocks
    shapes = [
        dict(
            type="rect",
            x0=b["x0"],
            x1=b["x1"],
            y0=b["y0"],
            y1=b["y1"],
            fillcolor=b["fill"],
            line=dict(color="#FFFFFF", width=1.5),
            layer="below",
        )
        for b in bs
    ]
    labels = [
        dict(
            x=(b["x0"] + b["x1"]) / 2,
            y=(b["y0"] + b["y1"]) / 2,
            text=b["text"],
            showarrow=False,
            font=dict(size=12, color=text_colour(b["fill"])),
        )
        for b in bs
        if b["text"]
    ]
    traces = (
        [
            go.Scatter(
                x=[(b["x0"] + b["x1"]) / 2 for b in bs],
                y=[(b["y0"] + b["y1"]) / 2 for b in bs],
                mode="markers",
                marker=dict(size=22, opacity=0),
                hoverinfo="text",
                hovertext=[b["hover"] for b in bs],
            )
        ]
        if bs
        else []
    )
    return go.Figure(
        data=traces,
        layout=dict(
            height=height,
            margin=dict(l=8, r=8, t=8, b=8),
            font=FONT,
            plot_bgcolor="rgba(0,0,0,0)",
            paper_bgcolor="rgba(0,0,0,0)",
            showlegend=False,
            hoverlabel=dict(font=FONT),
            shapes=shapes,
            annotations=labels + fig.notes,
            xaxis=dict(visible=False, fixedrange=True, range=x_range),
            yaxis=dict(visible=False, fixedrange=True, range=y_range),
        ),
    )


def permutation_figure(labels: list[str], perm: list[tuple[int, int]]) -> go.Figure:
    """ppermute as arrows from each source (top row) to its destination (bottom row); devices
    that receive nothing are grey (they get zeros). ``labels``: the devices' names, from JAX."""
    n = len(labels)
    fig = _Canvas()
    for d in range(n):
        fill = device_colour(d)
        _rect(
            fig,
            d + 0.1,
            d + 0.9,
            1.6,
            2.2,
            fill,
            _block_label(labels[d], 0.8 * 40),
            f"{labels[d]} sends its block"
            if any(s == d for s, _ in perm)
            else f"{labels[d]} sends nothing",
        )
        got = next((s for s, t in perm if t == d), None)
        rfill = device_colour(got) if got is not None else NEUTRAL
        _rect(
            fig,
            d + 0.1,
            d + 0.9,
            0,
            0.6,
            rfill,
            f"from {got}" if got is not None else "zeros",
            f"{labels[d]} receives {labels[got]}'s block"
            if got is not None
            else f"{labels[d]} receives nothing: zeros",
        )
    for s, t in perm:
        arrow = dict(
            x=t + 0.5,
            y=0.62,
            ax=s + 0.5,
            ay=1.58,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            text="",
            showarrow=True,
            arrowhead=3,
            arrowsize=1.2,
            arrowwidth=2,
            arrowcolor=device_colour(s),
        )
        fig.notes.append(arrow)
    _label(fig, -0.05, 1.9, "before", anchor="right")
    _label(fig, -0.05, 0.3, "after", anchor="right")
    return _canvas_figure(fig, [-0.9, n + 0.1], [-0.2, 2.4], 200)
