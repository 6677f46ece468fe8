"""Compiled program: what XLA made of a pmap. The collectives it emitted (read from the compiled
HLO) beside the ring model, the program at three levels, cost and memory per device for pmap,
jit(vmap), jit + NamedSharding and shard_map, hidden communication, and a per-device timeline
from a real profiler trace."""

import streamlit as st

from pmapviz import (
    benchmarking,
    collectives,
    compiled,
    devicefacts,
    memory,
    timeline,
    training,
    ui,
)

ui.ensure_routed()

report = ui.device_report()
n_all = report.count
P = "cp_"
SOURCE_LABELS = {"explorer": "Explorer's settings", "collective": "A collective",
                 "training": "Training step"}  # fmt: skip

st.title("Compiled program")
slot = ui.picture_slot()  # presenter mode: the program on every device, first
st.markdown(
    "`jax.pmap(f)` is compiled by XLA into one program per device. This page reads that "
    "program back from JAX (`.lower(...)`, `.compile().as_text()`, `cost_analysis()`, "
    "`memory_analysis()`, `jax.make_jaxpr`, the profiler) and shows **the communication XLA "
    "really emits**, next to what the ring model on the Collectives page predicts."
)
schema = compiled.schema(n_all)
ui.load_url_settings(P, schema)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    c1.radio(
        "Program",
        compiled.SOURCES,
        key=P + "src",
        horizontal=True,
        format_func=lambda s: SOURCE_LABELS.get(s, s),
    )
    src = st.session_state[P + "src"]
    if src == "collective":
        c2.selectbox("Collective", [c.key for c in collectives.COLLECTIVES], key=P + "c",
                     format_func=lambda k: collectives.BY_KEY[k].label)  # fmt: skip
        c3.text_input("Devices", key=P + "n", max_chars=6, help=f"1 to {n_all}")
        c4.text_input("Elements per device", key=P + "m", max_chars=6, help="1 to 64")
        if collectives.BY_KEY[st.session_state[P + "c"]].uses_groups:
            st.text_input("axis_index_groups (optional)", key=P + "g", max_chars=400,
                          placeholder="e.g. 0 1 | 2 3")  # fmt: skip
        if st.session_state[P + "c"] == "ppermute":
            st.text_input("Pairs source->destination (empty: ring right)", key=P + "pairs",
                          max_chars=400)  # fmt: skip
scenario = ui.explorer_scenario(n_all)  # read before the URL is rewritten below
mine = ["src", "c", "n", "m", "g", "pairs"] if src == "collective" else ["src"]
ui.set_url({**{k: str(st.session_state[P + k]) for k in mine},
            **(scenario.query() if src == "explorer" else {})})  # fmt: skip
ui.share_link("compiled")


@st.cache_resource(max_entries=32, show_spinner=False)
def _collective(key, n, m, groups, perm):
    return compiled.analyse_collective(key, n, m, groups, perm)


with st.spinner("Lowering and compiling (first time for these settings only)..."):
    try:
        if src == "collective":
            v = ui.parsed(P, schema, ["c", "n", "m"])
            n = v["n"]
            target = collectives.playground_choice(v["c"], n, st.session_state[P + "g"],
                                                   st.session_state[P + "pairs"])  # fmt: skip
            analysis = _collective(v["c"], n, v["m"], target.groups, target.perm)
        elif src == "explorer":
            program, plan, errors = scenario.plan(n_all)
            if ui.show_errors(errors) or plan is None or not plan.ok:
                st.info("Fix the explorer's settings first (Shapes & sharding page).",
                        icon=":material/grid_view:")  # fmt: skip
                st.stop()
            analysis = compiled.analyse_plan(program, plan)
        else:
            analysis = compiled.analyse_training(training.Config("linear", n_all, 32 * n_all))
    except collectives.CollectiveError as err:
        st.error(str(err), icon=":material/block:")
        st.stop()

with ui.picture(slot):
    ui.grid(*compiled.program_grid(analysis, report.labels))
st.subheader("The collectives XLA emitted")
ui.show_analysis(analysis, report.labels)

st.subheader("Hidden communication")
st.markdown(
    "Some ordinary-looking lines communicate without saying so. Each is compiled and its "
    "collectives read from the HLO, then timed beside its fix:"
)
if st.button("Compile and time them", key="cp_hidden", icon=":material/visibility:"):
    with st.spinner("Compiling and timing..."):
        st.session_state["cp_hidden_rows"] = compiled.hidden_table(n_all)
if st.session_state.get("cp_hidden_rows"):
    ui.dataframe(st.session_state["cp_hidden_rows"])

if src == "collective":
    st.subheader("One call, device by device")
    st.markdown(
        "A real profiler trace (`jax.profiler.trace`) of one call: one lane per device, its HLO "
        "ops as bars, collectives coloured; " + devicefacts.say(report.facts, "trace")
    )
    if st.button("Capture a trace", key="cp_trace", icon=":material/timeline:"):
        on_wait, clear_wait = ui.queue_display(stop_key="cp_trace_stop")
        try:
            bw = benchmarking.bandwidth(memory.budget()).bandwidth_gbs
            tl, times = timeline.collective_timeline(v["c"], n, v["m"], target.groups,
                                                     target.perm, bw, on_wait)  # fmt: skip
            clear_wait()
            ui.show_timeline(tl, "cp_timeline")
            ui.dataframe(timeline.time_rows(times))
        except timeline.ProfilerBusy as err:
            st.warning(str(err), icon=":material/hourglass_top:")

st.subheader("A trace from any machine")
st.markdown(
    "Load the `perfetto_trace.json.gz` that `jax.profiler.trace(folder, "
    "create_perfetto_trace=True)` wrote on any machine, a GPU box or a TPU pod: one lane per "
    "device (CPU, GPU and TPU traces name their devices differently; pmapviz reads all three), "
    "the last call that reached every device. From a terminal: "
    "`python -m pmapviz trace PATH [--json]`."
)
upload = st.file_uploader("Trace file (.json.gz or .json)", type=["gz", "json"], key="cp_upload")
if upload is not None:
    try:
        limit = timeline.trace_limit(memory.budget().host)
        loaded = timeline.from_trace(timeline.parse_trace(upload.getvalue(), upload.name, limit))
        ui.show_timeline(loaded, "cp_loaded")
        ui.dataframe(timeline.lane_rows(loaded))
    except timeline.TraceError as err:
        st.error(str(err), icon=":material/block:")
