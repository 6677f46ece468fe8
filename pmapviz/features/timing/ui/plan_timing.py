"""The Timing lab's "Time the explorer's current settings": pmap on this server's devices
against jit(vmap(f)) on one (and numpy where f has a numpy version); the report goes to
``tl_report``, as a sweep's does."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import queues, valuetext
from pmapviz.core.budgets import memoryestimates, memorymodel
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import pmaprun, sandbox
from pmapviz.core.ui import queue_display, recompute, url_state
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import sweepsetup


def show(n: int, repeat: int, budget: memorymodel.Budget, explored: Scenario | None = None) -> None:
    """The section that times the explorer's settings (``explored``, as the page's form read
    them before it rewrote the link), or says why they cannot be timed."""
    with st.expander("Time the explorer's current settings"):
        explored = explored or url_state.explorer_scenario(n)
        program, plan, errors = explored.plan(n)
        if elsewhere := explored.plans_elsewhere(n):
            st.caption(
                f"The explorer plans for {elsewhere:,} devices; timing uses this "
                f"server's {n} devices."
            )
        if errors or plan is None or not plan.ok:
            st.warning(
                "The explorer's settings are not valid yet: fix them on the Shapes & "
                "sharding page first.",
                icon=":material/grid_view:",
            )
        elif why := pmaprun.not_runnable(plan):
            st.info(why, icon=":material/info:")
        else:
            _timed(program, plan, repeat, budget)


def _timed(program: Program, plan: Plan, repeat: int, budget: memorymodel.Budget) -> None:
    """What would be timed, and the button that times it (after its turn in the queue)."""
    args = ", ".join(f"{leaf.name} {valuetext.fmt_shape(leaf.shape)}" for leaf in plan.leaves)
    vs_numpy = (
        " vs numpy" if scenarios.has_numpy_version(program) else " (this f has no numpy version)"
    )
    shown = valuetext.quote(program.body(plan.axis_name), 200)
    st.markdown(
        f"f = {shown} on {args}: pmap on {plan.devices_used} device(s) vs "
        f"jit(vmap(f)) on one{vs_numpy}."
    )
    if too_big := budget.problem(memoryestimates.plan_timing_bytes(plan)):
        st.error(f"Timing these settings {too_big}.", icon=":material/memory:")
    elif st.button("Time the explorer's settings", key="tl_explorer"):
        on_wait, clear_wait = queue_display.show(stop_key="tl_explorer_stop")
        with recompute.working("Timing (waits its turn if another benchmark is running)..."):
            try:
                st.session_state["tl_report"] = bench.measure_plan(
                    program, plan, repeat=repeat, on_wait=on_wait
                )
            except (
                queues.WaitTimeout,
                sweepsetup.BenchError,
                memorymodel.BudgetError,
                sandbox.Stopped,
            ) as err:
                st.error(str(err), icon=":material/hourglass_disabled:")
            except sandbox.WorkerFailed as err:  # one line; the worker's own words quoted in it
                st.error(str(err), icon=":material/error:")
        clear_wait()
