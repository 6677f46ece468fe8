"""Per-device timelines (``timeline.Timeline``) from real profiler traces: one lane per device,
its HLO ops as bars, collectives coloured. A trace captured here of one collective call, or
one loaded from any machine."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import valuetext
from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.ui import queue_display, recompute, tables
from pmapviz.core.xla import timeline, tracefiles
from pmapviz.features.compiled import tracecapture
from pmapviz.features.timing import sweepsetup, timecharts


def show(
    tl, key: str, floor_gbs: float | None = None, here: bool = True, table: bool = False
) -> None:
    """The timeline, or why there is none; where the trace counts each op's bytes (TPU), the
    bandwidth each op reached (:func:`rates`). A trace with many lanes or ops is drawn in
    part (``timeline.drawn``: the busiest lanes, their longest ops), with a line that says
    so; ``table``: one row per lane below, every lane (``timeline.lane_rows``)."""
    if not tl.lanes:
        st.warning(
            f"The trace holds {tl.calls_seen} call(s), but none reached every device "
            "it mentions; trace the call again.",
            icon=":material/timeline:",
        )
        return
    st.caption(
        f"Module {valuetext.quote(tl.module or 'unknown', 80)}: {len(tl.lanes):,} device "
        f"lane(s), {tl.calls_seen:,} call(s) in the trace, the last complete one "
        "shown."
    )
    shown, cut = timeline.drawn(tl)
    if cut:
        st.caption(f"{cut}" + ("; the table below has every lane." if table else "."))
    st.plotly_chart(timecharts.timeline_figure(shown), key=key)
    rates(tl, f"{key}_rates", floor_gbs if here else None, here)  # every op: the table
    if table:
        tables.show(timeline.lane_rows(tl))


def rates(tl, key: str, floor_gbs: float | None, here: bool) -> None:
    """A roofline of the call from the trace's own counts: achieved GB/s per op as bars and a
    table (``timeline.op_rates``), beside ``floor_gbs`` (this machine's measured floor) for a
    trace captured ``here``; an uploaded trace ran elsewhere, so no floor of this machine is
    drawn and the caption says where that machine's comes from. Nothing when the trace
    counts no bytes (CPU and GPU traces)."""
    rows = timeline.op_rates(tl, floor_gbs)
    if not rows:
        return
    st.markdown("**Each op's bandwidth, from the trace's own counts**")
    words = (
        "Bytes accessed and model FLOPs are what the profiler recorded for each HLO op; "
        "achieved GB/s is bytes / the op's duration. An async op's halves (`copy-start`, "
        "`copy-done`) get no rate: their copy overlaps other ops. "
    )
    if not here:
        words += (
            "This trace ran on another machine, so this machine's floor does not apply: "
            "compare with that machine's floor (`python -m pmapviz doctor --json` there "
            "measures it: `floor.bandwidth_gbs`)."
        )
    elif floor_gbs:
        words += (
            f"The dashed line is this machine's measured floor, {floor_gbs:,.0f} GB/s: "
            "an op near it moves bytes as fast as this memory does."
        )
    st.caption(words)
    st.plotly_chart(timecharts.op_rate_figure(rows, floor_gbs), key=key)
    tables.show([{k: _rounded(v) for k, v in r.items()} for r in rows])


def _rounded(v):
    """Three significant figures for a rate or a duration; counts and words as they are."""
    return float(f"{v:.3g}") if isinstance(v, float) else v


def capture(call, facts: devicefacts.Facts) -> None:
    """ "One call, device by device": a button that traces one call of the collective
    ``call`` (key, n, m, groups, perm) after its turn, and its timeline with the model's
    times beside the measured ones."""
    st.subheader("One call, device by device")
    st.markdown(
        "A real profiler trace (`jax.profiler.trace`) of one call: one lane per device, its HLO "
        "ops as bars, collectives coloured; " + devicewords.say(facts, "trace")
    )
    if st.button("Capture a trace", key="cp_trace", icon=":material/timeline:"):
        on_wait, clear_wait = queue_display.show(stop_key="cp_trace_stop")
        try:
            bw = sweepsetup.bandwidth(memorypool.budget()).bandwidth_gbs
            with recompute.working("Tracing one call on every device..."):
                tl, times = tracecapture.collective_timeline(
                    call.key, call.n, call.m, call.groups, call.perm, bw, on_wait
                )
            clear_wait()
            show(tl, "cp_timeline", bw)
            tables.show(tracecapture.time_rows(times))
        except tracecapture.ProfilerBusy as err:
            st.warning(str(err), icon=":material/hourglass_top:")
        except memorymodel.BudgetError as err:  # could never fit, from the compiled program
            st.error(str(err), icon=":material/memory:")


UPLOADED = "_cp_uploaded"  # (the uploaded file's id, its timeline or why not): read once


def upload() -> None:
    """ "A trace from any machine": a file uploader for a profiler's perfetto trace."""
    st.subheader("A trace from any machine")
    st.markdown(
        "Load the `perfetto_trace.json.gz` that `jax.profiler.trace(folder, "
        "create_perfetto_trace=True)` wrote on any machine, a GPU box or a TPU pod: one lane per "
        "device (CPU, GPU and TPU traces name their devices differently; pmapviz reads all "
        "three), the last call that reached every device. From a terminal: "
        "`python -m pmapviz trace PATH [--json]`."
    )
    file = st.file_uploader("Trace file (.json.gz or .json)", type=["gz", "json"], key="cp_upload")
    if file is None:
        return
    kept = st.session_state.get(UPLOADED)
    if kept is None or kept[0] != file.file_id:  # read once per file, not on every rerun
        with recompute.working("Reading the trace..."):
            loaded = queue_display.queued(lambda w: read(file, w), "cp_upload_stop")
        if loaded is None:
            return  # the wait ended without a turn (shown): the next rerun tries again
        kept = (file.file_id, loaded)
        st.session_state[UPLOADED] = kept
    if isinstance(kept[1], str):  # refused: said on every rerun, not only the first
        st.error(kept[1], icon=":material/block:")
    else:
        show(kept[1], "cp_loaded", here=False, table=True)


def read(file, on_wait=None):
    """The timeline of an uploaded trace file (``file.name``, ``file.getvalue()``), or why it
    was not read, as Markdown (quoted: the file's own words are in it). Its JSON is inflated up
    to this server's limit (``tracefiles.trace_limit`` of the host budget), then parsed while
    the bytes parsing takes are held in the server's memory pool (``memorypool.reserve``:
    uploads at once wait their turn, ``on_wait`` shows the queue), released once read."""
    b = memorypool.budget()

    def hold(nbytes: int):
        need = memorymodel.Need.host_only(nbytes)
        return memorypool.reserve(need, "reading an uploaded trace", on_wait, b=b)

    try:
        return timeline.load(file.getvalue(), file.name, tracefiles.trace_limit(b.host), hold=hold)
    except (tracefiles.TraceError, memorymodel.BudgetError) as err:
        return f"This trace was not read: {valuetext.quote(err, 400)}"
