"""Plotly figures of measurements: the Timing lab's breakdown, speed-up and efficiency, scaling
and spread, the training page's loss curves and step times, and a profiler trace's timeline and
per-op bandwidth. Every number drawn was measured (``block_until_ready`` timings, losses read
from the devices, what a profiler trace recorded)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from pmapviz.core.base.palette import FONT, device_colour
from pmapviz.core.base.valueparse import digits_or
from pmapviz.core.xla import timeline as tlines
from pmapviz.features.timing import benchreports

MAX_RATE_BARS = 100  # ops in a bandwidth figure: its longest ones (the table has them all)

# ---------------------------------------------------------------- timing lab
IMPL_COLOURS = {
    "pmap": "#0072B2",
    "vmap": "#D55E00",
    "jit_sharded": "#009E73",
    "shard_map": "#CC79A7",
    "numpy": "#777777",
}
PHASE_COLOURS = {
    "compile": "#BBBBBB",
    "transfer": "#E69F00",
    "compute": "#0072B2",
    "device to host": "#56B4E9",
}


BESIDE = benchreports.BESIDE  # "pmap · cpu" was measured on the set beside


def impl_line(name: str, width: float = 3) -> dict:
    """An implementation's line: its colour, dotted where it ran on the set beside (the
    emulated CPU devices beside an accelerator: 'pmap · cpu')."""
    impl, _, beside = name.partition(BESIDE)
    return dict(color=IMPL_COLOURS.get(impl), width=width, dash="dot" if beside else "solid")


def _timing_layout(fig: go.Figure, height: int = 380) -> go.Figure:
    fig.update_layout(
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=40, b=10),
        legend=dict(orientation="h", y=-0.18),
        plot_bgcolor="white",
        hoverlabel=dict(font=FONT),
    )
    fig.update_xaxes(showgrid=False, linecolor="#999999")
    fig.update_yaxes(gridcolor="#EEEEEE", linecolor="#999999")
    return fig


def breakdown_figure(rows: list[dict]) -> go.Figure:
    """Stacked bars per implementation and device count: compile, transfer, compute, d2h (ms).
    The x axis has two levels (implementation, then "x<devices>" under it), so labels never
    overlap however many bars a sweep has."""
    x = [[r["impl"] for r in rows], [f"x{r['devices']}" for r in rows]]
    names = [f"{r['impl']} on {r['devices']} device(s)" for r in rows]
    fig = go.Figure()
    for phase, key in (
        ("compile", "compile_s"),
        ("transfer", "transfer_s"),
        ("compute", "run_s_median"),
        ("device to host", "d2h_s"),
    ):
        tip = "%{customdata}<br>" + phase + ": %{y:.2f} ms<extra></extra>"
        fig.add_trace(
            go.Bar(
                name=phase,
                x=x,
                y=[r[key] * 1e3 for r in rows],
                customdata=names,
                marker_color=PHASE_COLOURS[phase],
                hovertemplate=tip,
            )
        )
    fig.update_layout(barmode="stack", title="Where the time goes (one call, ms)")
    fig.update_xaxes(tickangle=0)
    fig.update_yaxes(title="ms")
    _timing_layout(fig, 420)
    # the legend below the axis's second level (the implementation names), clear of the modebar that
    # covers the top right on hover
    fig.update_layout(legend=dict(orientation="h", y=-0.22, yanchor="top", x=0), margin=dict(b=70))
    return fig


def speedup_figure(rows: list[dict]) -> go.Figure:
    """Two labelled panels side by side: speed-up over jit(vmap) on one device (with the ideal,
    linear line) and parallel efficiency (speed-up / devices, with the 100% line). Every curve
    stays inside its axes: ranges come from the data and the reference lines."""
    from plotly.subplots import make_subplots

    ks = sorted({r["devices"] for r in rows})
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=("Speed-up over jit(vmap) on one device (x)", "Parallel efficiency (%)"),
    )
    fig.add_trace(
        go.Scatter(
            x=ks,
            y=ks,
            name="ideal: k devices, k times faster",
            mode="lines",
            line=dict(dash="dash", color="#999999"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=ks,
            y=[100] * len(ks),
            name="ideal efficiency (100%)",
            mode="lines",
            line=dict(dash="dot", color="#999999"),
        ),
        row=1,
        col=2,
    )
    for impl in sorted({r["impl"] for r in rows}):
        sel = sorted((r for r in rows if r["impl"] == impl), key=lambda r: r["devices"])
        x = [r["devices"] for r in sel]
        style = dict(
            mode="lines+markers", line=impl_line(impl), marker=dict(size=9), legendgroup=impl
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r["speedup"] for r in sel],
                name=impl,
                **style,
                hovertemplate="%{x} devices: %{y:.2f}x<extra>" + impl + "</extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r["efficiency"] * 100 for r in sel],
                name=impl,
                showlegend=False,
                **style,
                hovertemplate="%{x} devices: %{y:.0f}%<extra>" + impl + "</extra>",
            ),
            row=1,
            col=2,
        )
    top = max([max(ks), *(r["speedup"] for r in rows)]) * 1.1
    eff_top = max([100.0, *(r["efficiency"] * 100 for r in rows)]) * 1.1
    ticks = dict(type="log", tickvals=ks, ticktext=[str(k) for k in ks], title="devices")
    for col in (1, 2):
        fig.update_xaxes(**ticks, range=[-0.05, _log10(max(ks)) + 0.05], row=1, col=col)
    fig.update_yaxes(title="x", range=[0, top], row=1, col=1)
    fig.update_yaxes(title="%", range=[0, eff_top], row=1, col=2)
    fig.update_layout(legend=dict(orientation="h", y=-0.25, x=0))
    return _timing_layout(fig, 420)


def _log10(x: float) -> float:
    import math

    return math.log10(max(x, 1))


def scaling_figure(rows: list[dict], floor_per_size: dict[int, float]) -> go.Figure:
    """Compute time versus size, log-log, per implementation, with the measured memory floor."""
    fig = go.Figure()
    for key in sorted({(r["impl"], r["devices"]) for r in rows}):
        sel = sorted((r for r in rows if (r["impl"], r["devices"]) == key), key=lambda r: r["size"])
        fig.add_trace(
            go.Scatter(
                x=[r["size"] for r in sel],
                y=[r["run_s_median"] * 1e3 for r in sel],
                name=f"{key[0]} x{key[1]}",
                mode="lines+markers",
                line=impl_line(key[0], 1 + key[1] ** 0.5 / 2),
            )
        )
    sizes = sorted(floor_per_size)
    fig.add_trace(
        go.Scatter(
            x=sizes,
            y=[floor_per_size[s] * 1e3 for s in sizes],
            name="memory floor (bytes / bandwidth)",
            mode="lines",
            line=dict(color="#000000", dash="dash"),
        )
    )
    fig.update_layout(
        title="Compute time versus size (median, log-log)",
        legend=dict(orientation="v", x=1.02, y=1),
    )
    fig.update_xaxes(title="size", type="log")
    fig.update_yaxes(title="ms", type="log")
    return _timing_layout(fig, 420)


def spread_figure(measurements: list) -> go.Figure:
    """Every timed run, as a box with all points: the spread, not just one number."""
    fig = go.Figure()
    for m in measurements:
        fig.add_trace(
            go.Box(
                y=[t * 1e3 for t in m.run_s],
                name=f"{m.label} x{m.devices}",
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker=dict(color=IMPL_COLOURS.get(m.impl), size=5),
                line=dict(color=IMPL_COLOURS.get(m.impl)),
            )
        )
    fig.update_layout(title="Spread of repeated runs (ms)", showlegend=False)
    fig.update_yaxes(title="ms")
    return _timing_layout(fig)


# ---------------------------------------------------------------- training
def loss_figure(
    losses: list[float],
    single: list[float],
    local: list[list[float]],
    labels: list[str] | None = None,
) -> go.Figure:
    """Data-parallel loss (mean of the devices' local losses) and the single-device loss on the
    same global batches; each device's own local loss faintly behind (``labels``: the devices'
    names, from JAX)."""
    labels = labels or [f"device {d}" for d in range(len(local[0]) if local else 0)]
    fig = go.Figure()
    steps = list(range(1, len(losses) + 1))
    if local:
        for d in range(len(local[0])):
            fig.add_trace(
                go.Scatter(
                    x=steps,
                    y=[row[d] for row in local],
                    mode="lines",
                    line=dict(color=device_colour(d), width=1),
                    opacity=0.35,
                    name=f"{labels[d]} local loss",
                    showlegend=d == 0,
                    legendgroup="local",
                )
            )
    fig.add_trace(
        go.Scatter(
            x=steps[: len(single)],
            y=single,
            mode="lines",
            name="one device, same global batch",
            line=dict(color="#D55E00", width=4),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=losses,
            mode="lines",
            name="data-parallel (pmap)",
            line=dict(color="#000000", width=2, dash="dash"),
        )
    )
    fig.update_layout(title="Loss per step")
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="loss", type="log")
    return _timing_layout(fig, 380)


def step_time_figure(rows: list[dict]) -> go.Figure:
    """Bars of the median training step time (ms) per device count."""
    fig = go.Figure(
        go.Bar(
            x=[str(r["devices"]) for r in rows],
            y=[r["step_s_median"] * 1e3 for r in rows],
            marker_color=[device_colour(0)] * len(rows),
            text=[f"{r['step_s_median'] * 1e3:.2f} ms" for r in rows],
            textposition="outside",
        )
    )
    fig.update_layout(title="Time per training step (median) versus devices")
    fig.update_xaxes(title="devices (same global batch)")
    fig.update_yaxes(title="ms")
    return _timing_layout(fig, 320)


def timeline_figure(timeline, labels: list[str] | None = None) -> go.Figure:
    """One lane per device, its HLO ops as bars in time order (from a real profiler trace);
    collectives in the device's colour and named, everything else grey (named too when a
    lane has few ops). One trace per lane, of the lanes and ops ``timeline.drawn`` keeps (the
    64 busiest lanes, at most 10,000 ops): never more than a browser draws in a second.
    Lanes are named as the trace names them (cpu:3, gpu:0, tpu:1); ``labels`` (JAX's device
    names) are not needed: a trace may come from another machine."""
    timeline = tlines.drawn(timeline)[0]
    fig = go.Figure()
    for lane, events in timeline.lanes.items():
        number = lane.rpartition(":")[2]
        colour = device_colour(digits_or(number))
        fig.add_trace(
            go.Bar(
                x=[max(e.dur_us, 0.5) for e in events],
                y=[lane] * len(events),
                base=[e.start_us for e in events],
                orientation="h",
                showlegend=False,
                marker_color=[colour if e.collective else "#BBBBBB" for e in events],
                text=[e.op if e.collective or len(events) <= 8 else "" for e in events],
                textposition="inside",
                hovertext=[
                    f"{e.op}{' (' + e.collective + ')' if e.collective else ''}: "
                    f"{e.dur_us:.1f} us from {e.start_us:.1f} us" + _op_counts(e)
                    for e in events
                ],
                hoverinfo="text",
            )
        )
    fig.update_layout(title="One call, device by device (collectives coloured)", barmode="overlay")
    fig.update_xaxes(title="microseconds since the call's first op", rangemode="tozero")
    fig.update_yaxes(autorange="reversed", type="category")
    return _timing_layout(fig, 120 + 36 * max(1, len(timeline.lanes)))


def _op_counts(e) -> str:
    """What the trace counted for an op (TPU traces do), for its hover text; '' elsewhere."""
    parts = [
        f"{e.category}" if e.category else "",
        f"{e.bytes_accessed:,} bytes accessed" if e.bytes_accessed is not None else "",
        f"{e.model_flops:,} FLOPs" if e.model_flops is not None else "",
    ]
    return "".join(f"<br>{p}" for p in parts if p)


def _op_labels(rows: list[dict]) -> list[str]:
    """One label per op for a category axis: its name (with its lane when there are several),
    numbered when a name comes back."""
    many = len({r["device"] for r in rows}) > 1
    labels, seen = [], {}
    for r in rows:
        label = f"{r['op']} ({r['device']})" if many else r["op"]
        seen[label] = seen.get(label, 0) + 1
        labels.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return labels


def op_rate_figure(rows: list[dict], floor_gbs: float | None = None) -> go.Figure:
    """The achieved bandwidth of each op of one call (``timeline.op_rates`` rows: bytes
    accessed / duration, from the trace), one horizontal bar per op that has a rate, in time
    order, in its device's colour; the measured floor's bandwidth as a dashed vertical line
    when ``floor_gbs`` is given (only the floor of the machine that ran the trace compares).
    At most :data:`MAX_RATE_BARS` bars, the longest ops', and the title says so."""
    rated = [r for r in rows if r["GB/s"] is not None]
    every = len(rated)
    if every > MAX_RATE_BARS:
        keep = sorted(range(every), key=lambda i: -rated[i]["duration (us)"])[:MAX_RATE_BARS]
        rated = [rated[i] for i in sorted(keep)]
    fig = go.Figure(
        go.Bar(
            x=[r["GB/s"] for r in rated],
            y=_op_labels(rated),
            orientation="h",
            showlegend=False,
            marker_color=[device_colour(digits_or(r["device"].rpartition(":")[2])) for r in rated],
            text=[f"{r['GB/s']:,.1f} GB/s" for r in rated],
            textposition="outside",
            cliponaxis=False,
            hovertext=[
                f"{r['op']} on {r['device']}"
                + (f" ({r['category']})" if r["category"] else "")
                + f"<br>{r['bytes']:,} bytes in {r['duration (us)']:.2f} us: "
                f"{r['GB/s']:,.1f} GB/s"
                + (f"<br>{r['FLOPs']:,} FLOPs: {r['TFLOP/s']:,.2f} TFLOP/s" if r["TFLOP/s"] else "")
                for r in rated
            ],
            hoverinfo="text",
        )
    )
    top = max([0.0, *(r["GB/s"] for r in rated)])
    if floor_gbs is not None and math.isfinite(floor_gbs) and floor_gbs > 0:
        fig.add_vline(
            x=floor_gbs,
            line_dash="dash",
            line_color="#000000",
            annotation_text=f"measured floor {floor_gbs:,.0f} GB/s",
            annotation_position="top left",
        )
        top = max(top, floor_gbs)
    some = f": the {len(rated):,} longest of {every:,} ops" if every > len(rated) else ""
    fig.update_layout(title=f"Bandwidth each op reached (bytes accessed / its duration){some}")
    fig.update_xaxes(title="GB/s", range=[0, top * 1.2 or 1])
    fig.update_yaxes(autorange="reversed", type="category")
    return _timing_layout(fig, 140 + 28 * max(1, len(rated)))
