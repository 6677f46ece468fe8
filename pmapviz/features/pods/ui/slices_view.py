"""The Pods page's multislice parts: one step swept over 1, 2, 4, 8 slices (a button, the
chart, the table and where DCN starts to dominate), and the lesson "one slice or two" (two
compiles side by side, what changed and why). Results kept in the session for these settings."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import heavyimports
from pmapviz.core.drawing import slicefigure
from pmapviz.core.pods import dcnmodel, podcompile, podsweep, podtopology, tpuchips
from pmapviz.core.pods.podreport import fmt_gib, fmt_seconds
from pmapviz.core.ui import pod_report, tables
from pmapviz.features.pods import podsettings, slicelesson

KEPT = "_po_slices"  # what -> reports
CHART = {"displayModeBar": False}


def _compile_all(names: list[str], key: str, run) -> list | None:
    """``run(on_step)`` under a progress bar, kept under ``key``; None after one error line."""
    kept = st.session_state.setdefault(KEPT, {})
    if pod_report.unavailable():
        return None
    try:
        kept[key] = pod_report.compiling(", ".join(names), run)
    except (ValueError, podcompile.PodError, podtopology.PodUnavailable) as err:
        st.error(str(err), icon=":material/block:")
        return None
    return kept[key]


def slice_sweep() -> None:
    """The training step on 1, 2, 4, 8 slices of v5e:4x4, the global batch kept."""
    one, counts = podsettings.SWEPT_SLICE, podsettings.SLICE_COUNTS
    names = [one if n == 1 else f"{n} x {one}" for n in counts]
    program = podsettings.program("train")
    st.caption(f"{len(names)} compiles: {', '.join(names)}; a few seconds each on this machine.")
    key = ("sweep", program.key, program.batch, one, counts)
    if st.button("Sweep the slice count", key="po_slices", icon=":material/lan:"):
        _compile_all(names, key, lambda on: podsweep.slice_sweep(program, one, list(counts), on))
    reports = st.session_state.get(KEPT, {}).get(key)
    if not reports:
        return
    rows = podsweep.slice_rows(reports)
    gen = tpuchips.GENERATIONS[reports[0].generation]
    words = dcnmodel.dcn_words(gen)
    title = f"{reports[0].title or reports[0].label} on 1 to {counts[-1]} slices of {one}"
    heavyimports.pandas()  # Plotly's validators read pandas: never a half-imported one
    figure = slicefigure.slice_sweep_figure(rows, words, title)
    st.plotly_chart(figure, config=CHART, key="po_slices_chart")
    tables.show(tables.frame([_row_text(r) for r in rows]))
    st.markdown(podsweep.dcn_dominates(rows))
    st.markdown(slicelesson.why_data_parallel(rows, gen.name))
    st.caption(f"DCN time is a **model**: {dcnmodel.DCN_MODEL}; {words}.")


def _row_text(r: dict) -> dict:
    """A slice sweep's row as the table shows it."""
    share = "n/a" if r["dcn_share"] is None else f"{r['dcn_share'] * 100:.1f} %"
    return {
        "target": r["topology"],
        "chips": r["chips"],
        "hosts": r["hosts"],
        "compute + HBM": f"{fmt_seconds(r['compute_hbm_s'])} ({r['compute_from']})",
        "ICI (model)": fmt_seconds(r["ici_s"]),
        "DCN (model)": fmt_seconds(r["dcn_s"]),
        "sent over DCN a device": fmt_gib(r["dcn_bytes"]),
        "step": fmt_seconds(r["step_s"]),
        "DCN share": share,
    }


def lesson() -> None:
    """One slice or two: the training step compiled for v5e:16x16 and 2 x v5e:8x16 (256 chips
    either way), side by side, what changed in the program and why."""
    program = podsettings.program("train")
    names = [slicelesson.ONE, slicelesson.TWO]
    key = ("lesson", program.key, program.batch, *names)
    if st.button("Compile both", key="po_lesson", icon=":material/compare_arrows:"):

        def run(on_step) -> list:
            out = []
            for k, name in enumerate(names):
                on_step(k, len(names), name)
                out.append(podcompile.compile_for(program, name, find_batch=False, multislice=True))
            return out

        _compile_all(names, key, run)
    reports = st.session_state.get(KEPT, {}).get(key)
    if not reports:
        return
    one, two = reports
    tables.static(tables.frame(slicelesson.compare_rows(one, two)))  # every row, no scroll
    for line in slicelesson.what_changed(one, two):
        st.markdown(line)
