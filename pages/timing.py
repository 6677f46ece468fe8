"""Timing lab: pmap vs jit(vmap), jit + NamedSharding, shard_map and numpy; compile, transfer
and compute separated; speed-up, scaling with size, spread, and the measured physical floor."""

import streamlit as st

from pmapviz.core.devices import devicewords
from pmapviz.core.ui import presenter, shell, url_state
from pmapviz.features.timing import sweepsetup
from pmapviz.features.timing.ui import plan_timing, sweep, sweep_results

shell.ensure_routed()

report = shell.device_report()
n = report.count

st.title("Timing lab")
slot = presenter.picture_slot()  # presenter mode: what the sweep measures, first
st.markdown(
    devicewords.speed_story(report.facts, n) + " Everything below is measured, not modelled."
)

choice = sweep.form(n)
url_state.share_link("timing")
runs, repeat = sweep.planned(choice, slot)
sweep.run(choice, runs, repeat)
plan_timing.show(n, repeat, choice.budget, choice.explored)
sweep_results.show(sweepsetup.device_counts(n))
