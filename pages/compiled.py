"""Compiled program: what XLA made of a pmap. The collectives it emitted (read from the compiled
HLO) beside the ring model, the program at three levels, cost and memory per device for pmap,
jit(vmap), jit + NamedSharding and shard_map, hidden communication, and a per-device timeline
from a real profiler trace; or, with a TPU slice picked, the same program compiled for it."""

import streamlit as st

from pmapviz.core.running import programanalysis
from pmapviz.core.ui import compiled_analysis, grids, presenter, shell, url_state
from pmapviz.features.compiled.ui import compiled_program, hidden_view, timelines

shell.ensure_routed()

report = shell.device_report()

st.title("Compiled program")
slot = presenter.picture_slot()  # presenter mode: the program on every device, first
st.markdown(
    "`jax.pmap(f)` is compiled by XLA into one program per device. This page reads that "
    "program back from JAX (`.lower(...)`, `.compile().as_text()`, `cost_analysis()`, "
    "`memory_analysis()`, `jax.make_jaxpr`, the profiler) and shows **the communication XLA "
    "really emits**, next to what the ring model on the Collectives page predicts."
)
src, explored = compiled_program.form(report.count)
url_state.share_link("compiled")
if compiled_program.on_slice(src, explored, report.count, slot):
    st.stop()  # a TPU slice picked: its report instead of this machine's analysis
analysis, call = compiled_program.analyse(src, explored, report.count)

with presenter.picture(slot):
    grids.show(*programanalysis.program_grid(analysis, report.labels))
st.subheader("The collectives XLA emitted")
compiled_analysis.show(analysis, report.labels)
hidden_view.show(report.count)
if call is not None:
    timelines.capture(call, report.facts)
timelines.upload()
