"""The Timing lab's sweep: what to compare (its widgets, keys ``tl_`` + the URL key, and its
link), the planned runs and their picture, and the run itself with its states: running (a
progress bar and Cancel), cancelled (the measurements it finished are kept), done (the report
in ``tl_report``, drawn by :mod:`pmapviz.features.timing.ui.sweep_results`)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from pmapviz.core.base import queues, settings
from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.devices import devicefacts, deviceset, devicewords
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.ui import grids, presenter, queue_display, recompute, url_state
from pmapviz.core.ui.long_run import LongRun
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import benchreports, sweepsetup, timebars, workloads

P = "tl_"


@dataclass(frozen=True)
class SweepChoice:
    """What the widgets say to compare (sizes and device counts as chosen, unsorted)."""

    workload: workloads.Workload
    sizes: list[int]
    ks: list[int]
    impls: list[str]
    schema: settings.Schema
    budget: memorymodel.Budget
    beside: str | None = None  # also measure on this set (the emulated CPU devices beside)
    explored: Scenario | None = None  # the explorer's settings, which the lab can time too


def form(n: int) -> SweepChoice:
    """The sweep's settings, seeded from the link and written back to it."""
    ks_all = sweepsetup.device_counts(n)
    schema = sweepsetup.schema(n, st.query_params.get("w", "dot"), deviceset.has_two())
    url_state.load(P, schema)
    if P + "sizes" in st.session_state:  # the link's sizes belong to the link's workload
        st.session_state[P + "sizes_" + st.session_state[P + "w"]] = st.session_state.pop(
            P + "sizes"
        )
    with st.container(border=True):
        c1, c2 = st.columns([2, 1])
        c1.selectbox(
            "Workload",
            list(workloads.WORKLOADS),
            key=P + "w",
            format_func=lambda k: workloads.WORKLOADS[k].label,
        )
        c2.selectbox("Timed runs per measurement", list(sweepsetup.RUNS), key=P + "r")
        wl = workloads.WORKLOADS[st.session_state[P + "w"]]
        st.caption(wl.description)
        choices = sweepsetup.size_choices(wl.key, ks_all)
        sizes = st.multiselect(
            f"Sizes ({wl.unit})",
            choices,
            format_func=lambda s: f"{s:,}",
            default=None if P + "sizes_" + wl.key in st.session_state else choices[:4],
            key=P + "sizes_" + wl.key,
        )
        c3, c4 = st.columns(2)
        ks = c3.multiselect("Device counts", ks_all, key=P + "ks")
        impls = c4.multiselect("Implementations", sweepsetup.IMPLS, key=P + "impls")
        beside = _beside_box()
    # the explorer's settings, read before this page's link is rewritten, and kept in it: a
    # link to the lab times the settings it was shared with (as the Compiled page's does)
    explored = url_state.explorer_scenario(n)
    given = explored != Scenario.from_texts({}, n)  # the explorer's defaults need no keys
    also = url_state.scenario_query(explored, n) if given else None
    url_state.save(P, schema, sizes=sizes, also=also)  # the sizes' widget is the workload's own
    return SweepChoice(wl, sizes, ks, impls, schema, memorypool.budget(), beside, explored)


def _beside_box() -> str | None:
    """On an accelerator with emulated CPU devices beside it: a box that adds them to the
    sweep, for contrast (their lines dotted, their names marked); None elsewhere."""
    here = devicefacts.facts()
    other = devicewords.beside(here)
    if here.emulated or other is None:
        return None
    on = st.checkbox(
        f"Also time the {other.devices_phrase()} beside (dotted, marked "
        f"'{benchreports.BESIDE.strip()} {other.platform}')",
        key=P + "beside",
        help="The same sweep on the emulated devices this server holds beside "
        "the accelerator, 1, 2, 4, ... of them, drawn in the same charts: what "
        "a laptop's emulated devices show against the real chip.",
    )
    return other.platform if on else None


def planned(choice: SweepChoice, slot) -> tuple[list, int]:
    """``(runs, timed runs per measurement)``: the sweep's checked runs, drawn as a picture
    (in the presenter's ``slot``), or why there are none."""
    repeat = url_state.parsed(P, choice.schema, ["r"])["r"]
    try:
        runs = sweepsetup.plan_sweep(
            choice.workload,
            sorted(choice.sizes),
            sorted(choice.ks),
            choice.impls,
            choice.budget,
            repeat=repeat,
        )
    except sweepsetup.BenchError as err:
        st.error(str(err), icon=":material/block:")
        runs = []
    if runs:
        with presenter.picture(slot):
            grids.show(*sweepsetup.sweep_grid(runs))
    return runs, repeat


SWEEP = LongRun(
    "tl_",
    "tl_report",
    "cancelled",
    "The last sweep was cancelled; the measurements it finished are kept below.",
    ":material/cancel:",
)


def run(choice: SweepChoice, runs: list, repeat: int) -> None:
    """The Run button, and what an interrupted sweep left (Cancel, or any rerun)."""
    SWEEP.recover()
    go = st.button(
        f"Run {len(runs)} measurements",
        type="primary",
        icon=":material/timer:",
        disabled=not runs,
        key="tl_go",
    )
    if go and runs:
        _sweep(choice, repeat)


def _sweep(choice: SweepChoice, repeat: int) -> None:
    """Run the sweep here, with a progress bar, a Cancel button (any click reruns the page,
    which stops it) and its place in the benchmark's queue while it waits."""
    wl = choice.workload
    cancel_slot = st.empty()
    cancel_slot.button("Cancel", icon=":material/stop:", key="tl_cancel")
    bar = st.progress(0.0, text="Waiting for the benchmark's turn")
    on_wait, clear_wait = queue_display.show()  # Cancel above also stops a wait
    live = st.empty()  # each size's bars, drawn as its measurements arrive
    partial = benchreports.SweepReport({}, 0.0, wl.key)
    SWEEP.start(partial)

    def _progress(m, i, total):
        partial.results.append(m)
        bar.progress(
            i / total,
            text=f"{i}/{total}: {m.impl} on {m.devices} device(s), "
            f"size {m.size:,}: {m.run_s_median * 1e3:.2f} ms",
        )
        _draw_so_far(live, partial, m.size)

    try:
        with recompute.working("Measuring (the bars above fill in as it goes)..."):
            result = bench.sweep(
                wl,
                sorted(choice.sizes),
                sorted(choice.ks),
                choice.impls,
                repeat=repeat,
                budget=choice.budget,
                progress=_progress,
                on_wait=on_wait,
            )
            if choice.beside and not result.cancelled:
                result = _beside(choice, repeat, result, _progress, on_wait)
    except (queues.WaitTimeout, sweepsetup.BenchError) as err:
        result = None
        st.error(str(err), icon=":material/hourglass_disabled:")
    clear_wait()
    cancel_slot.empty()
    live.empty()  # the full results follow
    SWEEP.finish(result)
    bar.progress(1.0, text="Done")


def _draw_so_far(live, partial: benchreports.SweepReport, size: int) -> None:
    """The bars of ``size`` measured so far, and each size finished before it, in ``live``."""
    rows = benchreports.rows_for_table(partial)
    sizes = sorted({r["size"] for r in rows})
    with live.container():
        st.caption(
            f"Measured so far: size {size:,} (sizes done before it: "
            f"{', '.join(f'{s:,}' for s in sizes if s != size) or 'none'}); each size is "
            "added as it is measured."
        )
        st.markdown(
            timebars.bars_html([r for r in rows if r["size"] == size], size),
            unsafe_allow_html=True,
        )


def _beside(choice: SweepChoice, repeat: int, result, progress, on_wait):
    """The same sweep on the set beside (``choice.beside``), added to ``result``."""
    sizes = sorted(choice.sizes)
    with deviceset.use(choice.beside):
        ks = sweepsetup.beside_counts(devicefacts.facts().local_count, sizes)
        other = bench.sweep(
            choice.workload,
            sizes,
            ks,
            choice.impls,
            repeat=repeat,
            progress=progress,
            on_wait=on_wait,
        )
    return benchreports.add_beside(result, other)
