"""One program on 1, 2, 4, 8 slices over the data-center network, drawn with Plotly (as the
single-slice sweep of :mod:`podfigure`): per slice count, compute + HBM (the compiler's
estimate, or the roofline estimate where libtpu has none), the ICI model and the DCN model
stacked, DCN's share of the step above each bar. Every label is written from the rows it
draws (:func:`pmapviz.core.pods.podsweep.slice_rows`). No JAX, no Streamlit.
"""

from __future__ import annotations

import plotly.graph_objects as go

from pmapviz.core.base.palette import device_colour
from pmapviz.core.drawing.podfigure import MARGIN, TICKS, _layout, _note

DCN_COLOUR = "#D55E00"


def _parts(rows: list[dict]) -> list[tuple[str, list[float], str]]:
    """(name, ms per row, colour) of the three stacked terms, named after where each comes from."""
    froms = sorted({r["compute_from"] for r in rows})
    what = " or ".join("the compiler's estimate" if f == "compiler" else "roofline" for f in froms)
    return [
        (f"compute + HBM ({what})", [(r["compute_hbm_s"] or 0) * 1e3 for r in rows], ""),
        ("ICI (model)", [r["ici_s"] * 1e3 for r in rows], ""),
        ("DCN (model)", [r["dcn_s"] * 1e3 for r in rows], DCN_COLOUR),
    ]


def slice_sweep_figure(rows: list[dict], dcn_words: str, title: str = "") -> go.Figure:
    """The rows of :func:`~pmapviz.core.pods.podsweep.slice_rows` as stacked bars (ms), one
    per slice count, DCN's share of the step written above each; ``dcn_words`` (the DCN
    model's bandwidth and source) under the title."""
    if not rows:
        raise ValueError("slice_sweep_figure needs at least one row")
    names = [f"{r['topology']}<br>{r['chips']} chips, {r['hosts']} hosts" for r in rows]
    xs = list(range(len(rows)))
    data = []
    for k, (name, ms, colour) in enumerate(_parts(rows)):
        bar = go.Bar(x=xs, y=ms, name=name, customdata=[r["topology"] for r in rows])
        bar.marker.color = colour or device_colour(k)
        bar.hovertemplate = "%{customdata}<br>" + name + ": %{y:.3f} ms<extra></extra>"
        data.append(bar)
    tops = [(r["step_s"] or 0) * 1e3 for r in rows]
    up = dict(yanchor="bottom", yshift=4)
    notes = [
        _note(x, top, f"<b>DCN {r['dcn_share'] * 100:.0f} %</b>", 15, DCN_COLOUR, **up)
        for x, top, r in zip(xs, tops, rows, strict=True)
        if r["dcn_share"] is not None
    ]
    batch = "" if rows[0]["batch"] is None else f", batch {rows[0]['batch']:,} kept"
    default = f"one step on {rows[0]['slices']} to {rows[-1]['slices']} slices{batch}"
    short = dcn_words.split(" (model;")[0]  # the source is said beside the figure
    layout = _layout(title or default, f"DCN model: {short}", 480, MARGIN, barmode="stack")
    layout["legend"] = dict(orientation="h", x=0, y=1.02, yanchor="bottom", traceorder="normal")
    layout["annotations"] = notes
    layout["xaxis"] = dict(tickvals=xs, ticktext=names, title=dict(text="slices")) | TICKS
    peak = max(tops + [1e-9])
    layout["yaxis"] = dict(title=dict(text="time (ms)"), range=[0, peak * 1.2]) | TICKS
    layout["yaxis"] |= dict(showgrid=True, gridcolor="#E5E8EC", zeroline=False)
    return go.Figure(data=data, layout=layout)
