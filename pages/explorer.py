"""Shapes & sharding explorer: settings -> pmapviz.plan -> diagrams, per-device table, code."""

import streamlit as st

from pmapviz import catalog, charts, codegen, compiled, layout, presets, settings, ui
from pmapviz.scenario import KEYS as scenario_keys
from pmapviz.scenario import Scenario
from pmapviz.settings import fmt_shape

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


def _on_fn_change() -> None:
    _apply(Scenario.defaults(st.session_state[P + "fn"], n).texts(every_slot=True))


# ------------------------------------------------------------------ settings
st.caption("Start from an example:")
preset_cols = st.columns(3)
for k, preset in enumerate(presets.PRESETS):
    col = preset_cols[k % 3]
    col.button(preset.label, key=f"preset_{preset.key}", on_click=_apply,
               args=(preset.scenario(n).texts(every_slot=True),), width="stretch")  # fmt: skip

with st.container(border=True):
    c1, c2, c3 = st.columns([3, 1, 1])
    c1.selectbox(
        "Function f", list(catalog.BY_KEY), key=P + "fn", on_change=_on_fn_change,
        format_func=lambda k: catalog.get(k).label,
    )  # fmt: skip
    c2.text_input("out_axes", key=P + "out", max_chars=12, help="An integer, or None.")
    c3.text_input("axis_name", key=P + "name", max_chars=32,
                  help="Needed by collectives such as lax.psum; e.g. i.")  # fmt: skip
    program = catalog.get(st.session_state[P + "fn"])
    st.caption(program.description)
    arg_cols = st.columns(program.n_args)
    for k, (col, arg) in enumerate(zip(arg_cols, program.arg_names, strict=True)):
        with col:
            st.markdown(f"**Argument `{arg}`**")
            a, b, c = st.columns([4, 3, 2])
            a.text_input(
                f"shape of {arg}",
                key=f"{P}s{k}",
                max_chars=200,
                help="Sizes separated by commas, e.g. 8, 1250000, 3. () for a scalar.",
            )
            b.selectbox(f"dtype of {arg}", settings.DTYPES, key=f"{P}d{k}")
            c.text_input(
                "in_axes",
                key=f"{P}a{k}",
                max_chars=12,
                help="The axis to split across devices (0, 1, ...), or None. A negative axis "
                "works in JAX 0.10's pmap only when it means axis 0.",
            )
scenario = Scenario.from_texts({k: st.session_state[P + k] for k in scenario_keys}, n)
ui.set_url(scenario.query())
ui.share_link("explorer")
st.session_state[ui.EXPLORER_KEY] = scenario.texts()

# ------------------------------------------------------------------ parse what was typed
program, plan, errors = scenario.plan(n)
if ui.show_errors(errors):
    st.stop()
out_axes, axis_name = plan.out_axes, plan.axis_name

# ------------------------------------------------------------------ verdict
call = (
    f"jax.pmap(f, in_axes={settings.fmt_axes(plan.in_axes_typed or plan.in_axes)}, "
    f"out_axes={out_axes!r}, axis_name={axis_name!r})"
)
st.code(call, language="python")
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
    f"Valid. pmap uses **{plan.devices_used} of the {n} devices**; each runs f on "
    + ", ".join(f"`{a}` {fmt_shape(s)}" for a, s in local_args)
    + f" and returns {fmt_shape(plan.per_device_out_shapes)}. Result: "
    f"**{fmt_shape(plan.out_shapes)}** {plan.out_dtypes}.",
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
    "exact slice. Read from JAX's `NamedSharding.devices_indices_map`, the sharding pmap gives "
    "its arrays; no array is allocated. Axis lengths are drawn on a log scale."
)
cols = st.columns(len(inputs) + 1)
for col, lay, ax in zip(cols, [*inputs, outputs[0]], [*plan.in_axes, out_axes], strict=True):
    with col:
        is_out = lay is outputs[0]
        how = (
            ("device axis at out_axes=" if is_out else "split along in_axes=") + str(ax)
            if ax is not None
            else ("the same on every device" if is_out else "broadcast: every device gets all")
        )
        st.markdown(f"**{'output' if is_out else 'input'} `{lay.name}`** {fmt_shape(lay.shape)} "
                    f"`{lay.dtype}`  \n{how}")  # fmt: skip
        st.plotly_chart(charts.array_figure(lay), config={"displayModeBar": False},
                        key=f"chart_{lay.name}")  # fmt: skip
        st.caption(f"each device: {fmt_shape(lay.local_shape)}")

st.subheader("What each device holds and computes")
rows = []
for k in range(plan.devices_used):
    row = {"device": inputs[0].pieces[k].device if inputs else ""}
    for lay in inputs:
        row[f"{lay.name} slice"] = lay.pieces[k].index_text
    row["f receives"] = ", ".join(fmt_shape(s) for s in plan.per_device_in_shapes)
    row["f returns"] = fmt_shape(plan.per_device_out_shapes)
    row[f"{outputs[0].name} slice"] = outputs[0].pieces[k].index_text
    rows.append(row)
st.dataframe(rows, hide_index=True, width="stretch")

# ------------------------------------------------------------------ code
st.subheader("The code")
tab_pmap, tab_sm, tab_xla = st.tabs(
    ["jax.pmap", "jax.shard_map (today's API)", "What XLA compiles"]
)
with tab_pmap:
    st.code(codegen.pmap_script(program, plan), language="python", line_numbers=True)
with tab_sm:
    st.markdown(
        "`shard_map` is **rank-preserving**: each device's block keeps the mapped axis "
        "(here of size 1), where pmap's per-device view drops it. With shard_map you can also "
        "skip the manual reshape: `in_specs=P('i')` on a `(10_000_000, 3)` array gives each "
        f"of {n} devices a `({10_000_000 // n:_}, 3)` block directly."
    )
    st.code(codegen.shard_map_script(program, plan), language="python", line_numbers=True)
st.caption("Both scripts are tested to give equal results (tests/core/test_codegen.py).")
with tab_xla:
    if plan.devices_used > report.count:
        st.info("Planned for more devices than this server has: compile it on a machine with "
                f"{plan.devices_used} devices.", icon=":material/info:")  # fmt: skip
    elif st.toggle("Compile it and show the collectives XLA emits", key="ex_xla"):
        with st.spinner("Lowering and compiling..."):
            ui.show_analysis(compiled.analyse_plan(program, plan), report.labels)
        st.page_link("pages/compiled.py", label="More on the Compiled program page",
                     icon=":material/memory_alt:")  # fmt: skip
