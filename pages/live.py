"""Live outputs: run pmap for the explorer's settings on real values, per device, checked
against jit(vmap(f)); and the seed's 10M-pair dot product at full size."""

import streamlit as st

from pmapviz import (
    devices,
    dotproduct,
    memory,
    planning,
    programs,
    scenario,
    timebudget,
    ui,
)
from pmapviz.settings import fmt_shape, quote

ui.ensure_routed()

report = ui.device_report()
n = report.count
AUTO_RUN_BYTES = 64 * 2**20  # small runs go at once; larger ones wait for the button

st.title("Live outputs")
slot = ui.picture_slot()  # presenter mode: the arrays, split over the devices, first
st.markdown(
    "The explorer's settings, run for real: every device's input and output block is read "
    "from the arrays' `addressable_shards`, and the result is checked against "
    "`jit(vmap(f))` on one device."
)


@st.cache_resource(max_entries=8, show_spinner=False)  # a compiled pair is ~1.5 MB
def _compiled(ref: tuple, key: tuple):
    program = scenario.program_for(*ref)
    return programs.compile_plan(program, planning.replan(program, key))


def _too_long(plan, program) -> str | None:
    """Why the live run would pass the operator's time limit, or None when it fits."""
    try:
        timebudget.check_live(plan, devices.time_limit(), program)
    except timebudget.TooLong as err:
        return str(err)
    return None


current = ui.explorer_scenario(n)
program, plan, errors = current.plan(n)
ui.set_url(current.query())  # a link to this page reproduces the run
ui.share_link("live")

with st.container(border=True):
    if plan is not None:
        args = ", ".join(f"`{a}` {fmt_shape(s)} (in_axes {ax}, {d})" for a, s, ax, d in
                         zip(plan.arg_names, plan.arg_shapes, plan.in_axes, plan.dtypes,
                             strict=True))  # fmt: skip
        st.markdown(f"**f** = {quote(program.body(plan.axis_name), 200)} on {args}; "
                    f"out_axes {plan.out_axes}, axis_name `{plan.axis_name}`")  # fmt: skip
    if elsewhere := current.plans_elsewhere(n):
        st.caption(f"The explorer plans for {elsewhere:,} devices; live runs use this server's "
                   f"{n} devices.")  # fmt: skip
    st.page_link("pages/explorer.py", label="Change the settings in the explorer",
                 icon=":material/grid_view:")  # fmt: skip
    c1, c2 = st.columns([3, 1])
    kind = c1.radio("Values", programs.VALUE_KINDS, horizontal=True, key="live_kind",
                    help="arange: 0, 1, 2, ... (offset by 100 per argument); random: seeded "
                    "normal (integers for int dtypes); ones.")  # fmt: skip
    seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="live_seed", disabled=kind != "random")

if slot is not None and plan is not None and plan.ok:
    with slot:
        ui.plan_cards(plan, "What runs: the arrays, split over the devices",
                      "From JAX's NamedSharding, as pmap places them.")  # fmt: skip
for e in errors:
    st.error(e, icon=":material/edit:")
if plan is not None and not plan.ok:
    for q in plan.problems:
        st.error(f"{q.message}\n\n**Fix:** {q.fix}", icon=":material/block:")
if plan is None or not plan.ok:
    st.info("Nothing runs until the explorer's settings are valid.", icon=":material/info:")
elif why := programs.not_runnable(plan):
    st.info(why, icon=":material/info:")
else:
    need = programs.estimate_bytes(plan, program)
    budget = memory.budget()
    if too_big := budget.problem(need):
        st.error(
            f"This run (inputs and outputs on the devices, the one-device reference, and the "
            f"checks) {too_big}. Make the largest axis about {budget.share_of(need):.0%} of its "
            "size, or fewer.",
            icon=":material/memory:",
        )
    elif too_long := _too_long(plan, program):  # the time limit (timebudget.check_live)
        st.error(too_long, icon=":material/timer_off:")
    elif budget.bytes_of(need) > AUTO_RUN_BYTES and not st.button(
        f"Run ({budget.words(need)} at the peak)", type="primary", icon=":material/play_arrow:"
    ):
        st.info("Large inputs: press Run to start.", icon=":material/info:")
    else:
        with st.spinner("Compiling (first time only), placing inputs, running..."):
            # the compiled program is not a page global: a session keeps its page's globals
            # (for its fragments) as long as it lives, and thirty sessions would keep thirty
            ref = scenario.program_ref(program)
            res = ui.queued(
                lambda on_wait: programs.run_plan(
                    program, plan, _compiled(ref, plan.key), kind, int(seed), on_wait=on_wait
                )
            )
        if res is not None:
            ui.show_live_result(res, plan, program, report)

# ------------------------------------------------------------------ the seed at full size
st.divider()
st.header("The seed's worked example, at full size")
st.markdown(
    f"""
10,000,000 pairs of 3-vectors, split across {n} devices. The mapped axis may not exceed the
device count, so the inputs are **reshaped to ({n}, pairs / {n}, 3)**; `jax.pmap(jax.vmap(dot))`
gives ({n}, pairs / {n}); **reshaping back** gives one dot product per pair, equal to
`jit(vmap(dot))` on one device.
"""
)


@ui.fragment  # pressing Run reruns this section only, not the live run above
def _seed_example() -> None:
    limit = dotproduct.max_pairs(memory.budget(), n)
    c1, c2 = st.columns([2, 1])
    pairs = c1.number_input(
        f"Pairs (1,000 to {limit:,}, a multiple of {n})", min_value=dotproduct.MIN_PAIRS,
        max_value=limit, value=min(dotproduct.DEFAULT_PAIRS - dotproduct.DEFAULT_PAIRS % n, limit),
        step=n * 125_000, key="dot_pairs",
    )  # fmt: skip
    c2.write("")
    go = c2.button("Run the example", type="primary", icon=":material/play_arrow:", key="dot_run")
    if go:
        bar = st.progress(0.0, text="Starting")
        try:
            st.session_state["dot_result"] = ui.queued(lambda on_wait: dotproduct.run_dot(
                int(pairs), n, progress=lambda text, frac: bar.progress(frac, text=text),
                limit=limit, on_wait=on_wait))  # fmt: skip
        except dotproduct.DotError as err:
            st.session_state.pop("dot_result", None)
            st.error(str(err), icon=":material/error:")
    if (res := st.session_state.get("dot_result")) is not None:
        ui.show_dot_result(res)


_seed_example()
