"""The Timing lab's measurements as they arrive, drawn as light HTML bars: compile, transfer,
compute and device-to-host of each run at one size, on screen at once (no Plotly to load), each
bar's length its measured total. The full charts (:mod:`pmapviz.features.timing.timecharts`) follow
the sweep."""

from __future__ import annotations

import html

from pmapviz.features.timing.timecharts import PHASE_COLOURS

PHASES = (
    ("compile", "compile_s"),
    ("transfer", "transfer_s"),
    ("compute", "run_s_median"),
    ("device to host", "d2h_s"),
)


def _row(r: dict, longest: float) -> str:
    """One run's bar: its name, a segment per phase, its total."""
    total = sum(r[key] for _, key in PHASES)
    segments = "".join(
        f"<div title='{phase}: {r[key] * 1e3:.3f} ms' style='width:{100 * r[key] / longest:.2f}%;"
        f"background:{PHASE_COLOURS[phase]}'></div>"
        for phase, key in PHASES
        if r[key] > 0
    )
    name = html.escape(f"{r['impl']} on {r['devices']}")
    return (
        "<div style='display:flex;align-items:center;gap:8px;margin:2px 0'>"
        f"<span style='width:11em;font-family:monospace'>{name}</span>"
        f"<div style='flex:1;display:flex;height:1.1em;background:#F4F4F4'>{segments}</div>"
        f"<span style='width:6em;text-align:right'>{total * 1e3:.2f} ms</span></div>"
    )


def bars_html(rows: list[dict], size: int) -> str:
    """``rows`` (``benchreports.rows_for_table``) measured at ``size`` so far, a bar each, as
    a picture with the words of what it shows (``role="img"``, ``aria-label``)."""
    longest = max((sum(r[key] for _, key in PHASES) for r in rows), default=0.0) or 1e-12
    label = f"Measured so far at size {size:,}: " + "; ".join(
        f"{r['impl']} on {r['devices']} device(s) {sum(r[key] for _, key in PHASES) * 1e3:.2f} ms"
        for r in rows
    )
    legend = " ".join(
        f"<span style='display:inline-block;width:0.8em;height:0.8em;background:{colour}'></span>"
        f" {phase}"
        for phase, colour in PHASE_COLOURS.items()
    )
    return (
        f"<div role='img' aria-label='{html.escape(label, quote=True)}'>"
        + "".join(_row(r, longest) for r in rows)
        + f"<div style='font-size:0.8em;color:#555'>{legend}</div></div>"
    )
