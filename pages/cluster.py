"""Multi-process: a jax.distributed cluster on this machine, a real cluster's report, and the
command lines that make one; local versus global devices."""

import streamlit as st

from pmapviz.core.devices import devicewords
from pmapviz.core.ui import grids, presenter, shell, url_state
from pmapviz.features.cluster import clusterview
from pmapviz.features.cluster.ui import (
    cluster_launch,
    cluster_lines,
    cluster_open,
    cluster_result,
    report_view,
)

shell.ensure_routed()

st.title("Multi-process")
slot = presenter.picture_slot()  # presenter mode: the cluster, first
st.markdown(
    "Across hosts, each process sees only its **local** devices, while collectives run over "
    "the **global** devices of every process. **On this machine**, worker processes on "
    "127.0.0.1 join with `jax.distributed.initialize`, each runs a pmap over its local devices, "
    "and `psum`, `all_gather` and `axis_index` span all of them. On a real cluster, "
    "`python -m pmapviz cluster --join` runs the same check on every process, joined by JAX's "
    "own detection of Slurm, Open MPI or a TPU pod: **Show a report** draws what it found, "
    "**Launch lines** gives the commands."
)
if note := devicewords.workers_note(shell.device_report().facts):
    st.info(note, icon=":material/info:")

here, real, lines = st.tabs(["On this machine", "Show a report", "Launch lines"])
with here:
    crash = cluster_launch.form()
    procs, local = cluster_launch.sizes()
    with presenter.picture(slot):
        grids.show(*clusterview.plan_grid(procs, local))
    st.code(clusterview.worker_code(procs, local), language="python")
    cluster_launch.show(procs, local, crash)
    cluster_result.show()
with real:
    report_view.show(*cluster_open.show())
with lines:
    cluster_lines.show()
cluster_launch.save()
url_state.share_link("cluster")

st.subheader("What changes on a real cluster")
cluster_lines.explain()
