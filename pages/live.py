"""Live outputs: run pmap for the explorer's settings on real values, per device, checked
against jit(vmap(f)); and the seed's 10M-pair dot product at full size."""

import streamlit as st

from pmapviz.core.ui import presenter, shell, url_state
from pmapviz.features.live.ui import dot_example, live_run

shell.ensure_routed()

report = shell.device_report()
n = report.count

st.title("Live outputs")
slot = presenter.picture_slot()  # presenter mode: the arrays, split over the devices, first
st.markdown(
    "The explorer's settings, run for real: every device's input and output block is read "
    "from the arrays' `addressable_shards`, and the result is checked against "
    "`jit(vmap(f))` on one device."
)

current = url_state.explorer_scenario(n)
program, plan, errors = current.plan(n)
url_state.save_scenario(current, n)  # a link to this page reproduces the run
url_state.share_link("live")
kind, seed = live_run.form(current, program, plan, n)
live_run.show(program, plan, errors, kind, seed, report, slot)

st.divider()
dot_example.show(n)
