"""Shapes & sharding explorer: settings -> pmapviz.plan -> diagrams, per-device table, code."""

import streamlit as st

from pmapviz import codegen, compiled, layout, presets, scenario, settings, ui
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

ui.load_url_settings(P, settings.explorer(n))


def _apply(settings: dict[str, str]) -> None:
    for name, value in settings.items():
        st.session_state[P + name] = value


def _current() -> Scenario:
    """The settings as the widgets hold them (a slot not shown keeps its default)."""
    return Scenario.from_texts({k: st.session_state[P + k] for k in scenario.KEYS
                                if P + k in st.session_state}, n)  # fmt: skip


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


# ------------------------------------------------------------------ settings
st.caption("Start from an example:")
preset_cols = st.columns(3)
for k, preset in enumerate(presets.PRESETS):
    col = preset_cols[k % 3]
    col.button(preset.label, key=f"preset_{preset.key}", on_click=_apply,
               args=(preset.scenario(n).texts(every_slot=True),), width="stretch")  # fmt: skip

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    c1.selectbox("Function f", scenario.FUNCTIONS, key=P + "fn", on_change=_on_fn_change,
                 format_func=scenario.label)  # fmt: skip
    c2.text_input("out_axes", key=P + "out", max_chars=12, help="An integer, or None.")
    c3.text_input("axis_name", key=P + "name", max_chars=32,
                  help="Needed by collectives such as lax.psum; e.g. i.")  # fmt: skip
    c4.text_input("Plan for N devices", key=P + "pn", max_chars=8, on_change=_on_pn_change,
                  placeholder=f"{n} (this server)",
                  help=f"Empty: this server's {n} devices. Up to {scenario.MAX_PLAN_DEVICES:,}: "
                  "plan and draw for a bigger machine from the shapes alone (mapped axes of "
                  "that size are resized). Live outputs and the Timing lab always use this "
                  "server's devices.")  # fmt: skip
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
    names = _current().arg_names
    for row in range(0, len(names), 3):
        arg_cols = st.columns(3 if len(names) > 2 else len(names))
        for k, col in zip(range(row, min(row + 3, len(names))), arg_cols, strict=False):
            with col:
                st.markdown(f"**Argument `{names[k]}`**")
                a, b, c = st.columns(
                    ui.argument_widths(
                        st.session_state.get(f"{P}s{k}"), st.session_state.get(f"{P}a{k}")
                    )
                )
                a.text_input(
                    f"shape of {names[k]}",
                    key=f"{P}s{k}",
                    max_chars=200,
                    help="Sizes separated by commas, e.g. 8, 1250000, 3. () for a scalar. A "
                    "pytree argument: a dict or tuple of shapes, e.g. {'w': (5, 2), 'b': (2,)}.",
                )
                b.selectbox(f"dtype of {names[k]}", settings.DTYPES, key=f"{P}d{k}")
                c.text_input(
                    "in_axes",
                    key=f"{P}a{k}",
                    max_chars=200,
                    help="The axis to split across devices (0, 1, ...), or None. A negative "
                    "axis works in JAX 0.10's pmap only when it means axis 0. For a dict or "
                    "tuple argument: one axis for all of it, or a prefix like "
                    "{'w': None, 'b': 0}.",
                )
current = _current()
ui.set_url(current.query())
ui.share_link("explorer")
st.session_state[ui.EXPLORER_KEY] = current.texts()

# ------------------------------------------------------------------ parse what was typed
program, plan, errors = current.plan(n, use_pn=True)
if ui.show_errors(errors):
    st.stop()
out_axes, axis_name = plan.out_axes, plan.axis_name
N = plan.n_devices
elsewhere = current.plans_elsewhere(n)
if elsewhere:
    st.info(f"Planning for **{N:,} devices** from the shapes alone; this server has {n}. "
            "Live outputs and the Timing lab run on this server's devices.",
            icon=":material/dns:")  # fmt: skip

# ------------------------------------------------------------------ verdict
st.code(codegen.pmap_call(plan, compact=True), language="python")
for problem in plan.problems:
    with st.container(border=True):
        st.error(problem.message, icon=":material/block:")
        st.markdown(f"**Fix:** {problem.fix}")
        if problem.new_axes:
            new = {f"a{k}": str(a) for k, a in problem.new_axes.items()}
            label = "; ".join(f"in_axes={a} for {program.arg_names[k]}"
                              for k, a in problem.new_axes.items())  # fmt: skip
            st.button(f"Apply: {label}", key=f"fix_{problem.code}", on_click=_apply,
                      args=(new,), type="primary", icon=":material/auto_fix_high:")  # fmt: skip
        if problem.new_shapes:
            new = {f"s{k}": ", ".join(f"{d:_}" for d in s) for k, s in problem.new_shapes.items()}
            label = "; ".join(
                f"{program.arg_names[k]} -> {fmt_shape(s)}" for k, s in problem.new_shapes.items()
            )
            st.button(f"Apply: reshape {label}", key=f"fix_{problem.code}", on_click=_apply,
                      args=(new,), type="primary", icon=":material/auto_fix_high:")  # fmt: skip
if not plan.ok:
    st.stop()

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
if out_axes is None:
    st.info("out_axes=None is safe here: the output is the same on every device (it comes "
            "from a collective), so pmap returns one copy.", icon=":material/info:")  # fmt: skip

# ------------------------------------------------------------------ diagrams
inputs, outputs = layout.plan_layouts(plan)
st.subheader("How the arrays are split")
st.caption(
    "Blocks are coloured by device (the same colours on every page) and labelled; hover for the "
    "exact slice. "
    + ("Computed by index arithmetic for the planned devices (tested against JAX's "
       "`devices_indices_map` on real ones); more than 32 blocks are drawn as groups."
       if elsewhere else "Read from JAX's `NamedSharding.devices_indices_map`, the sharding "
       "pmap gives its arrays; no array is allocated.")
    + " Axis lengths are drawn on a log scale."
)  # fmt: skip
ui.array_cards([*((lay, ax, False) for lay, ax in zip(inputs, plan.in_axes, strict=True)),
                *((lay, ax, True) for lay, ax in zip(outputs, plan.out_leaf_axes, strict=True))],
               per_row=min(4, len(inputs) + len(outputs)))  # fmt: skip

st.subheader("What each device holds and computes")
rows = []
for k in range(plan.devices_used):
    row = {"device": inputs[0].pieces[k].device if inputs else ""}
    for lay in inputs:
        row[f"{lay.name} slice"] = lay.pieces[k].index_text
    row["f receives"] = ", ".join(fmt_shape(s) for s in plan.per_device_in_shapes)
    row["f returns"] = fmt_tree(plan.per_device_out_shapes)
    for lay in outputs:
        row[f"{lay.name} slice"] = lay.pieces[k].index_text
    rows.append(row)
st.dataframe(rows, hide_index=True, width="stretch")

# ------------------------------------------------------------------ code
st.subheader("The code")
tab_pmap, tab_sm, tab_xla = st.tabs(
    ["jax.pmap", "jax.shard_map (today's API)", "What XLA compiles"], key="ex_code",
    on_change="rerun",  # lazy: only the open tab is drawn on each edit
)  # fmt: skip
if tab_pmap.open:
    with tab_pmap:
        st.code(codegen.pmap_script(program, plan), language="python", line_numbers=True)
if tab_sm.open:
    with tab_sm:
        st.markdown(
            "`shard_map` is **rank-preserving**: each device's block keeps the mapped axis "
            "(here of size 1), where pmap's per-device view drops it. With shard_map you can "
            "also skip the manual reshape: `in_specs=P('i')` on a `(10_000_000, 3)` array gives "
            f"each of {N:,} devices a `({10_000_000 // N:_}, 3)` block directly."
        )
        st.code(codegen.shard_map_script(program, plan), language="python", line_numbers=True)
if tab_xla.open:
    with tab_xla:
        if plan.devices_used > report.count:
            st.info("Planned for more devices than this server has: compile it on a machine "
                    f"with {plan.devices_used} devices.", icon=":material/info:")  # fmt: skip
        elif st.toggle("Compile it and show the collectives XLA emits", key="ex_xla"):
            with st.spinner("Lowering and compiling..."):
                ui.show_analysis(compiled.analyse_plan(program, plan), report.labels)
            st.page_link("pages/compiled.py", label="More on the Compiled program page",
                         icon=":material/memory_alt:")  # fmt: skip
st.caption("Both scripts are tested to give equal results (tests/core/test_codegen.py).")
