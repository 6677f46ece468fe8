"""A live run of the explorer's settings on real values: what runs and with which values,
the checks before it (valid, runnable, within the memory budget and the time limit), the Run
button for large inputs, and the run itself (after its turn for memorymodel)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.base.valuetext import fmt_shape, quote
from pmapviz.core.budgets import memorymodel, memorypool, timebudget
from pmapviz.core.devices import deviceset, jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning, scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.core.ui import plan_cards, queue_display, recompute, shared_run
from pmapviz.features.explorer.ui import plan_verdict
from pmapviz.features.live.ui import live_result

AUTO_RUN_BYTES = 64 * 2**20  # small runs go at once; larger ones wait for the button
AUTO_RUN_S = 2.0  # and quick ones: a link must not start a long run on page load


@st.cache_resource(max_entries=8, show_spinner=False)  # a compiled pair is ~1.5 MB
def _compiled(device_set: str, ref: tuple, key: tuple):
    """The pair compiled for ``device_set``'s devices (its name keys the cache: one plan
    compiles for either set of a two-set server)."""
    program = scenarios.program_for(*ref)
    return pmapcompile.compile_plan(program, planning.replan(program, key))


def too_long(plan: Plan, program: Program) -> str | None:
    """Why the live run would pass the operator's time limit, or None when it fits."""
    return _seconds(plan, program)[1]


def _seconds(plan: Plan, program: Program) -> tuple[float | None, str | None]:
    """(estimated seconds, None), or (None, why it would pass the time limit)."""
    try:
        return timebudget.check_live(plan, jaxstartup.time_limit(), program), None
    except timebudget.TooLong as err:
        return None, str(err)


def form(current: Scenario, program: Program, plan: Plan, n: int) -> tuple[str, int]:
    """What runs (f on its arguments, from the explorer) and ``(value kind, seed)``."""
    with st.container(border=True):
        if plan is not None:
            args = ", ".join(
                f"`{leaf.name}` {fmt_shape(leaf.shape)} (in_axes {leaf.axis}, {leaf.dtype})"
                for leaf in plan.leaves
            )
            st.markdown(
                f"**f** = {quote(program.body(plan.axis_name), 200)} on {args}; "
                f"out_axes {plan.out_axes}, axis_name `{plan.axis_name}`"
            )
        if elsewhere := current.plans_elsewhere(n):
            st.caption(
                f"The explorer plans for {elsewhere:,} devices; live runs use this "
                f"server's {n} devices."
            )
        st.page_link(
            page_file("explorer"),
            label="Change the settings in the explorer",
            icon=":material/grid_view:",
        )
        c1, c2 = st.columns([3, 1])
        kind = c1.radio(
            "Values",
            pmaprun.VALUE_KINDS,
            horizontal=True,
            key="live_kind",
            help="arange: 0, 1, 2, ... (offset by 100 per argument); random: seeded "
            "normal (integers for int dtypes); ones.",
        )
        seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="live_seed", disabled=kind != "random")
    return kind, int(seed)


def show(
    program: Program,
    plan: Plan,
    errors: list[str],
    kind: str,
    seed: int,
    report: jaxstartup.DeviceReport,
    slot,
) -> None:
    """The arrays (in the presenter's ``slot``), what stops the run, or the run and its
    result."""
    if slot is not None and plan is not None and plan.ok:
        with slot:
            plan_cards.show(
                plan,
                "What runs: the arrays, split over the devices",
                "From JAX's NamedSharding, as pmap places them.",
            )
    for e in errors:
        st.error(e, icon=":material/edit:")
    if plan is not None and not plan.ok:
        for q in plan.problems:
            st.error(f"{q.message}\n\n**Fix:** {q.fix}", icon=":material/block:")
        plan_verdict.jax_words(program, plan)  # JAX's own error for the call, collapsed
    if plan is None or not plan.ok:
        st.info("Nothing runs until the explorer's settings are valid.", icon=":material/info:")
    elif why := pmaprun.not_runnable(plan):
        st.info(why, icon=":material/info:")
    elif (entry := _shared_or_run(program, plan, kind, seed)) is not None:
        shared_run.caption(entry)
        live_result.show(entry.value, plan, program, report)
        if sandbox.applies(program):
            st.caption(
                f"Your own f ran in a process of its own, which is ended if a run "
                f"passes the {jaxstartup.time_limit()} s limit."
            )


def shared_key(program: Program, plan: Plan, kind: str, seed: int, n: int):
    """The run's key among the room's shared results: f, the plan's settings as given (what
    the link carries), the values (kind, and the seed where it is used) and the devices."""
    fn, args, body = scenarios.program_ref(program)
    values = {"kind": kind, "seed": seed if kind == "random" else ""}
    return shared_run.key(
        "live", {"fn": fn, "args": args, "body": body, "plan": repr(plan.key)} | values, n
    )


def _shared_or_run(program: Program, plan: Plan, kind: str, seed: int):
    """The run's result, shared (:mod:`pmapviz.core.ui.shared_run`): anyone's run of the same
    settings kept or under way, shown without a Run button (timings included: its caption
    says whose run measured them, and when), else this session's own run when it may start
    now (:func:`_ready`), once for everyone who asks for it meanwhile. None: nothing ran."""
    key = shared_key(program, plan, kind, seed, plan.devices_used)
    entry = shared_run.kept(key)
    if entry is None and shared_run.under_way(key):  # another session's run: wait for it
        with recompute.working("The same run is under way in another session..."):
            entry = queue_display.queued(lambda on_wait: shared_run.join(key, on_wait))
    if entry is None and (need := _ready(program, plan)) is not None:
        with recompute.working("Compiling (first time only), placing inputs, running..."):
            entry = queue_display.queued(
                lambda on_wait: shared_run.run(
                    key, lambda: _run(program, plan, need, kind, seed, on_wait), on_wait
                )
            )
    return entry


def _run(program: Program, plan: Plan, need: memorymodel.Need, kind: str, seed: int, on_wait):
    """The run: your own f in the sandbox's worker process (stopped at the time limit), or
    here; here, your own f in a thread that its session stops waiting for at the limit."""
    if sandbox.applies(program):
        return sandbox.run_plan(program, plan, need, kind, seed, on_wait)
    # the compiled program is not a page global: a session keeps its page's globals (for its
    # fragments) as long as it lives, and thirty sessions would keep thirty
    compiled = _compiled(deviceset.current(), scenarios.program_ref(program), plan.key)
    if scenarios.program_ref(program)[0] != scenarios.EXPR:
        return pmaprun.run_plan(program, plan, compiled, kind, seed, on_wait=on_wait)
    return sandbox.run_here(
        lambda: pmaprun.run_plan(program, plan, compiled, kind, seed, reserve=False), need, on_wait
    )


def _ready(program: Program, plan: Plan) -> memorymodel.Need | None:
    """What the run needs, when it may start now: within the memory budget and the time
    limit, and small enough to go at once or its Run button pressed (else None, and it says
    why not)."""
    compiled = _compiled(
        deviceset.current(), scenarios.program_ref(program), plan.key
    )  # compiled, never run
    need = pmaprun.estimate_bytes(plan, program, compiled)
    budget = memorypool.budget()
    if too_big := budget.problem(sandbox.need(program, need)):
        st.error(
            f"This run (inputs and outputs on the devices, what f makes in between as XLA "
            f"compiled it, the one-device reference, and the checks) {too_big}. Make the "
            f"largest axis about {budget.share_of(need):.0%} of its size, or fewer.",
            icon=":material/memory:",
        )
        return None
    seconds, message = _seconds(plan, program)  # the time limit (timebudget.check_live)
    if message:
        st.error(message, icon=":material/timer_off:")
        return None
    if budget.bytes_of(need) <= AUTO_RUN_BYTES and seconds <= AUTO_RUN_S:
        return need  # small and quick: at once, also from a link
    if st.button(
        f"Run ({budget.words(need)} at the peak, about {seconds:,.1f} s)",
        type="primary",
        icon=":material/play_arrow:",
    ):
        return need
    st.info("Large or slow: press Run to start (a link never starts it).", icon=":material/info:")
    return None
