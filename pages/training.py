"""Data-parallel training: sharded batches, replicated parameters, gradients all-reduced."""

import streamlit as st

from pmapviz.core.ui import grids, presenter, shell, url_state
from pmapviz.features.training import trainingmodel
from pmapviz.features.training.ui import training_result, training_run

shell.ensure_routed()

report = shell.device_report()
n = report.count

st.title("Data-parallel training")
slot = presenter.picture_slot()  # presenter mode: how the batch and the parameters are split, first
st.markdown(
    "Each device receives **a shard of the batch** and **a copy of the parameters**, computes "
    "its own gradients, and a collective (`lax.pmean`, or `lax.psum` then divide) makes the "
    "gradients equal everywhere, so every device applies **the same update**. Below, that is "
    "checked at every step, and the result is compared with training on one device."
)

training_run.form(n)
url_state.share_link("training")
cfg = training_run.config(n)
with presenter.picture(slot):
    grids.show(*trainingmodel.setup_grid(cfg, report.labels))
with st.expander("The pmap training step for these settings", expanded=False):
    st.code(trainingmodel.code_for(cfg), language="python")
training_run.on_slice(cfg, n)  # with a TPU slice picked: one step compiled for it

training_run.run(cfg)
training_result.show(report)
