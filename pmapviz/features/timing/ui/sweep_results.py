"""The Timing lab's results (``tl_report``, a ``benchreports.SweepReport``): the breakdown, the
speed-up, scaling with size and the spread, the fastest run against the memory floor, the
table, and the downloads (CSV, and JSON with the machine's facts)."""

from __future__ import annotations

import csv
import io
import json

import streamlit as st

from pmapviz.core.ui import shell, tables
from pmapviz.features.timing import benchreports, timecharts, workloads


def csv_text(rows: list[dict]) -> str:
    """The rows as CSV, with a header line of their keys."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def bench_command(rep: benchreports.SweepReport) -> str:
    """The CLI command that measures this report's sweep again: its workload, its sizes (each
    splits evenly over its device counts, which a fixed size does not on every count), its
    device counts and its timed runs."""
    own = [m for m in rep.results if not m.beside] or rep.results
    sizes = ",".join(str(s) for s in sorted({m.size for m in own}))
    ks = ",".join(str(k) for k in sorted({m.devices for m in own}))
    return (
        f"python -m pmapviz bench --workload {rep.workload} --size {sizes} --devices {ks} "
        f"--repeat {len(own[0].run_s)} --json out.json"
    )


def show(ks_all: list[int]) -> None:
    """The last report of this session, or what to do to get one."""
    rep = st.session_state.get("tl_report")
    if rep is None:
        st.info(
            "Choose what to compare and press Run. A sweep of the defaults takes a few seconds.",
            icon=":material/info:",
        )
        return
    if not rep.results:
        st.warning("No measurements yet.")
        return
    rows = benchreports.rows_for_table(rep)
    _charts(rep, rows)
    tables.show(rows)
    d1, d2 = st.columns(2)
    d1.download_button(
        "Download CSV",
        csv_text(rows),
        f"pmapviz-{rep.workload}.csv",
        "text/csv",
        icon=":material/download:",
    )
    d2.download_button(
        "Download JSON (with machine info)",
        json.dumps(rep.to_json(), indent=2),
        f"pmapviz-{rep.workload}.json",
        "application/json",
        icon=":material/download:",
    )
    st.caption(f"Same harness from a script: `{bench_command(rep)}`.")


def _charts(rep, rows: list[dict]) -> None:
    """The four charts (at the largest size, but scaling) and the fastest run's verdict."""
    wl_done = workloads.WORKLOADS.get(rep.workload, workloads.PLAN_WORKLOAD)
    largest = max(r["size"] for r in rows)
    st.subheader(f"Results: {wl_done.label}")
    st.caption(benchreports.floor_caption(rep))
    at_largest = [r for r in rows if r["size"] == largest]
    st.plotly_chart(timecharts.breakdown_figure(at_largest), key="tl_breakdown")
    sp = [r for r in benchreports.speedups(rep.results) if r["size"] == largest]
    if sp:
        st.plotly_chart(timecharts.speedup_figure(sp), key="tl_speedup")
    else:
        st.info(
            "Speed-up needs jit(vmap) (the one-device baseline) and a parallel "
            "implementation in the sweep."
        )
    floors = {r["size"]: r["floor_s"] for r in rows if benchreports.BESIDE not in r["impl"]}
    st.plotly_chart(timecharts.scaling_figure(rows, floors), key="tl_scaling")
    st.plotly_chart(
        timecharts.spread_figure([m for m in rep.results if m.size == largest]), key="tl_spread"
    )
    st.markdown(benchreports.fastest_words(rows, largest, mark="**"))
    emulated = shell.device_report().facts.emulated
    if words := benchreports.speedup_words(sp, largest, emulated):
        st.markdown(words)
