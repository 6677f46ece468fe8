"""Pods you don't have: a program compiled by the real TPU compiler (libtpu, on this machine) for
a TPU slice of 4 to 256 chips: memory per chip against its HBM, FLOPs, bytes, the compiler's time
estimate, every collective on the chips and hosts, and one program swept over slice sizes."""

import streamlit as st

from pmapviz.core.ui import pod_report, presenter, shell, url_state
from pmapviz.features.pods.ui import pods_form, slices_view

shell.ensure_routed()

report = shell.device_report()

st.title("Pods you don't have")
slot = presenter.picture_slot()  # presenter mode: the slice and its collective first
st.markdown(
    "The TPU compiler runs on this machine: `jax.experimental.topologies.get_topology_desc` "
    "describes a slice (its chips, their coordinates, the hosts that hold them) and "
    "`jax.jit(f).lower(...).compile()` compiles for it. **Nothing runs**: every figure below "
    "is read from the compiled program, except the communication time, which is a labelled "
    "model (the compiler's estimate leaves communication out)."
)

program, topology = pods_form.form(report.count)
url_state.share_link("pods")
if pod_report.program_and_report(program, topology, "po", slot) is not None:
    pod_report.calibration(program, "po")

st.subheader("How one step scales, 4 to 256 chips")
st.markdown(
    "One program, the same global batch, on larger and larger slices: each chip holds less, "
    "so the compiler's estimate falls, but a training step's gradient all-reduce moves the "
    "same bytes from every chip however many chips there are; only the links it can use "
    "change (the table says where an axis closes into a ring)."
)
swept = pods_form.sweep()
if swept:
    pod_report.sweep(swept, "po")

st.subheader("Several slices: where the data-center network starts to dominate")
st.markdown(
    "The largest jobs join slices over the data-center network (DCN), much slower a chip than "
    "ICI. The same training step, the same global batch, on 1, 2, 4 and 8 slices of v5e:4x4: "
    "each chip computes less, and more of the gradient crosses DCN."
)
slices_view.slice_sweep()

st.subheader("One slice or two")
st.markdown(
    "The same training step on 256 chips as one v5e:16x16 slice and as two v5e:8x16 slices: "
    "what the compiler changes in the program, and what it costs."
)
slices_view.lesson()
