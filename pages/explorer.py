"""Shapes & sharding explorer: settings -> pmapviz.plan -> diagrams, per-device table, code."""

import streamlit as st

from pmapviz import codegen, compiled, presets, scenario, settings, ui
from pmapviz.scenario import Scenario
from pmapviz.settings import fmt_shape, fmt_tree

ui.ensure_routed()

report = ui.device_report()
n = report.count
P = "ex_"  # widget-state prefix for this page

st.title("Shapes & sharding")
st.markdown(
    "Set a function's input shapes and axes and see, before anything runs, exactly how "
    "`jax.pmap` splits the work across this server's "
    f"**{n} devices**. Everything below comes from `pmapviz.plan` (abstract shapes, "
    "`jax.eval_shape`) and JAX's own shardings."
)

ui.load_url_settings(P, scenario.schema(n))


def _apply(settings: dict[str, str]) -> None:
    for name, value in settings.items():
        st.session_state[P + name] = value


def _current() -> Scenario:
    """The settings as the widgets hold them (a slot not shown keeps its default)."""
    state = st.session_state.to_dict()  # one copy: each `in st.session_state` makes one
    return Scenario.from_texts({k: state[P + k] for k in scenario.KEYS if P + k in state}, n)


def _last() -> Scenario:
    return Scenario.from_texts(st.session_state.get(ui.EXPLORER_KEY) or {}, n)


def _on_fn_change() -> None:
    _apply(_last().switched(st.session_state[P + "fn"], n).texts(every_slot=True))


def _on_pn_change() -> None:
    _apply(_last().resized(st.session_state[P + "pn"], n).texts(every_slot=True))


EXPR_HELP = (
    "One Python expression over your arguments, checked against an allow-list and never run "
    "as code. Allowed: numbers, operators `+ - * / // % ** @`, one comparison, indexing like "
    "`x[0, 1:3]`, `jnp.<fn>` (sum, mean, dot, einsum, tanh, where, reshape, ...), `lax` "
    "collectives (psum, pmean, all_gather, ppermute, ...) with a literal axis name like "
    "`'i'`, `jax.nn.<fn>`, `jax.vmap` and array methods (`.sum()`, `.reshape(...)`, `.T`). "
    "Not allowed: lambdas, imports, other names, allocation from sizes (`jnp.zeros`)."
)

PN_HELP = (
    f"Empty: this server's {n} devices. Up to {scenario.MAX_PLAN_DEVICES:,}: plan and draw for "
    "a bigger machine from the shapes alone (mapped axes of that size are resized). Live "
    "outputs and the Timing lab always use this server's devices."
)
SHAPE_HELP = (
    "Sizes separated by commas, e.g. 8, 1250000, 3. () for a scalar. A pytree argument: a dict "
    "or tuple of shapes, e.g. {'w': (5, 2), 'b': (2,)}."
)


# ------------------------------------------------------------------ settings
st.caption("Start from an example:")
preset_cols = st.columns(3)
for k, preset in enumerate(presets.PRESETS):
    col = preset_cols[k % 3]
    col.button(preset.label, key=f"preset_{preset.key}", on_click=_apply,
               args=(preset.scenario(n).texts(every_slot=True),), width="stretch")  # fmt: skip


def _settings() -> None:
    """The function, out_axes, axis_name, planned devices, and each argument's boxes."""
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
        c1.selectbox("Function f", scenario.FUNCTIONS, key=P + "fn", on_change=_on_fn_change,
                     format_func=scenario.label)  # fmt: skip
        c2.text_input("out_axes", key=P + "out", max_chars=12, help="An integer, or None.")
        c3.text_input("axis_name", key=P + "name", max_chars=32,
                      help="Needed by collectives such as lax.psum; e.g. i.")  # fmt: skip
        c4.text_input("Plan for N devices", key=P + "pn", max_chars=8, on_change=_on_pn_change,
                      placeholder=f"{n} (this server)",
                      help=PN_HELP)  # fmt: skip
        if st.session_state[P + "fn"] == scenario.EXPR:
            e1, e2 = st.columns([1, 3])
            e1.text_input("Arguments", key=P + "args", max_chars=200,
                          help="Names separated by commas, e.g. x, w (at most 6).")  # fmt: skip
            e2.text_input("f(...) = ", key=P + "body", max_chars=500, help=EXPR_HELP)
            st.caption(
                "Your own f: one expression, checked and interpreted by pmapviz (hover ? "
                "for what is allowed); the code below exports it as a plain Python function."
            )
        else:
            st.caption(scenario.program_for(st.session_state[P + "fn"]).description)
        _argument_boxes(_current().arg_names)


IN_AXES_HELP = (
    "The axis to split across devices (0, 1, ...), or None. A negative axis works in JAX "
    "0.10's pmap only when it means axis 0. For a dict or tuple argument: one axis for all of "
    "it, or a prefix like {'w': None, 'b': 0}."
)


def _argument_boxes(names: list[str]) -> None:
    """Shape, dtype and in_axes of each argument (each box labelled with its argument's
    name), as one row of columns per three arguments (fewer layout blocks per edit), or per
    argument in presenter mode, whose larger type needs the width."""
    per_row = 1 if st.session_state.get("present") else 3
    for row in range(0, len(names), per_row):
        ks = range(row, min(row + per_row, len(names)))
        widths = [
            w
            for k in ks
            for w in ui.argument_widths(
                st.session_state.get(f"{P}s{k}"), st.session_state.get(f"{P}a{k}")
            )
        ]
        pad = [9 * (per_row - len(ks))] if len(names) > per_row > len(ks) else []  # alignment
        cols = st.columns(widths + pad)
        for j, k in enumerate(ks):
            a, b, c = cols[3 * j : 3 * j + 3]
            a.text_input(f"shape of {names[k]}", key=f"{P}s{k}", max_chars=200, help=SHAPE_HELP)
            b.selectbox(f"dtype of {names[k]}", settings.DTYPES, key=f"{P}d{k}")
            c.text_input(f"in_axes of {names[k]}", key=f"{P}a{k}", max_chars=200,
                         help=IN_AXES_HELP)  # fmt: skip


@ui.fragment
def _explorer() -> None:
    """Everything an edit changes: the settings, the verdict, the diagrams, the table and the
    code. An edit reruns only this fragment, not the title, the presets or the sidebar."""
    slot = ui.picture_slot()  # presenter mode: the diagrams above the settings
    _settings()
    current = _current()
    ui.set_url(current.query())
    st.session_state[ui.EXPLORER_KEY] = current.texts()
    program, plan, errors = current.plan(n, use_pn=True)
    elsewhere = bool(current.plans_elsewhere(n))
    if not ui.show_errors(errors) and _verdict(program, plan, elsewhere):
        _results(program, plan, elsewhere, slot)


def _problem(program, problem, key: str) -> None:
    """One thing pmap would reject, its fix, and a button (``key``: the same problem can come
    twice, e.g. a negative in_axes for x and for y) that applies the fix."""
    with st.container(border=True):
        st.error(problem.message, icon=":material/block:")
        st.markdown(f"**Fix:** {problem.fix}")
        if problem.new_axes:
            new = {f"a{k}": str(a) for k, a in problem.new_axes.items()}
            label = "; ".join(f"in_axes={a} for {program.arg_names[k]}"
                              for k, a in problem.new_axes.items())  # fmt: skip
            st.button(f"Apply: {label}", key=key, on_click=_apply,
                      args=(new,), type="primary", icon=":material/auto_fix_high:")  # fmt: skip
        if problem.new_shapes:
            new = {f"s{k}": ", ".join(f"{d:_}" for d in s) for k, s in problem.new_shapes.items()}
            label = "; ".join(
                f"{program.arg_names[k]} -> {fmt_shape(s)}" for k, s in problem.new_shapes.items()
            )
            st.button(f"Apply: reshape {label}", key=key + "_shape" * bool(problem.new_axes),
                      on_click=_apply, args=(new,), type="primary",
                      icon=":material/auto_fix_high:")  # fmt: skip


def _verdict(program, plan, elsewhere: bool) -> bool:
    """The call, and either what pmap would reject (with fixes) or what it does. True: valid."""
    N = plan.n_devices
    if elsewhere:
        st.info(f"Planning for **{N:,} devices** from the shapes alone; this server has {n}. "
                "Live outputs and the Timing lab run on this server's devices.",
                icon=":material/dns:")  # fmt: skip
    st.code(codegen.pmap_call(plan, compact=True), language="python")
    codes = [p.code for p in plan.problems]
    for k, problem in enumerate(plan.problems):
        again = codes[:k].count(problem.code)  # the same problem for a second argument
        _problem(program, problem, key=f"fix_{problem.code}" + (f"_{again}" if again else ""))
    if not plan.ok:
        return False
    local_args = zip(plan.arg_names, plan.per_device_in_shapes, strict=True)
    st.success(
        f"Valid. pmap uses **{plan.devices_used:,} of the {N:,} devices**; each runs f on "
        + ", ".join(f"`{a}` {fmt_shape(s)}" for a, s in local_args)
        + f" and returns {fmt_tree(plan.per_device_out_shapes)}. Result: "
        f"**{fmt_tree(plan.out_shapes)}** {plan.out_dtypes}.",
        icon=":material/check_circle:",
    )  # fmt: skip
    for note in plan.notes:
        st.info(note, icon=":material/info:")
    if plan.out_axes is None:
        st.info("out_axes=None is safe here: the output is the same on every device (it "
                "comes from a collective), so pmap returns one copy.",
                icon=":material/info:")  # fmt: skip
    return True


def _results(program, plan, elsewhere: bool, slot) -> None:
    """A valid plan: the diagrams, what each device holds and computes, and the code."""
    with ui.picture(slot):
        inputs, outputs = ui.plan_cards(plan, "How the arrays are split", _cards_intro(elsewhere))
    ui.device_table(plan, inputs, outputs, "What each device holds and computes")
    _code(program, plan)


def _cards_intro(elsewhere: bool) -> str:
    return (
        "Blocks are coloured by device (the same colours on every page) and labelled; hover for "
        "the exact slice. "
        + ("Computed by index arithmetic for the planned devices (tested against JAX's "
           "`devices_indices_map` on real ones); more than 32 blocks are drawn as groups."
           if elsewhere else "Read from JAX's `NamedSharding.devices_indices_map`, the sharding "
           "pmap gives its arrays; no array is allocated.")
        + " Axis lengths are drawn on a log scale."
    )  # fmt: skip


def _code(program, plan) -> None:
    """The pmap and shard_map scripts and the compiled program: drawn only while the section
    is open, and then only the open tab (the call itself is always shown, above)."""
    box = st.expander("The code: jax.pmap, jax.shard_map and what XLA compiles",
                      icon=":material/code:", key="ex_code_open", on_change="rerun")  # fmt: skip
    if not box.open:
        return
    with box:
        tab_pmap, tab_sm, tab_xla = st.tabs(
            ["jax.pmap", "jax.shard_map (today's API)", "What XLA compiles"], key="ex_code",
            on_change="rerun",
        )  # fmt: skip
        if tab_pmap.open:
            with tab_pmap:
                st.code(codegen.pmap_script(program, plan), language="python", line_numbers=True)
        if tab_sm.open:
            with tab_sm:
                _shard_map_code(program, plan)
        if tab_xla.open:
            with tab_xla:
                _compiled(program, plan)
        st.caption("Both scripts are tested to give equal results (tests/core/test_codegen.py).")


def _shard_map_code(program, plan) -> None:
    st.markdown(
        "`shard_map` is **rank-preserving**: each device's block keeps the mapped axis (here of "
        "size 1), where pmap's per-device view drops it. With shard_map you can also skip the "
        "manual reshape: `in_specs=P('i')` on a `(10_000_000, 3)` array gives each of "
        f"{plan.n_devices:,} devices a `({10_000_000 // plan.n_devices:_}, 3)` block directly."
    )
    st.code(codegen.shard_map_script(program, plan), language="python", line_numbers=True)


def _compiled(program, plan) -> None:
    if plan.devices_used > report.count:
        st.info("Planned for more devices than this server has: compile it on a machine with "
                f"{plan.devices_used} devices.", icon=":material/info:")  # fmt: skip
    elif st.toggle("Compile it and show the collectives XLA emits", key="ex_xla"):
        with st.spinner("Lowering and compiling..."):
            ui.show_analysis(compiled.analyse_plan(program, plan), report.labels)
        st.page_link("pages/compiled.py", label="More on the Compiled program page",
                     icon=":material/memory_alt:")  # fmt: skip


_explorer()
ui.share_link("explorer")  # after the fragment: on a full run, the link has this run's settings
