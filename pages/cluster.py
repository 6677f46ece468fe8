"""Multi-process: a real jax.distributed cluster on this machine; local versus global devices."""

import streamlit as st

from pmapviz import cluster, devicefacts
from pmapviz.ui import cluster_launch, cluster_result, grids, presenter, shell, url_state

shell.ensure_routed()

st.title("Multi-process")
slot = presenter.picture_slot()  # presenter mode: the cluster, first
st.markdown(
    "Across hosts, each process sees only its **local** devices, while collectives run over "
    "the **global** devices of every process. Here that runs for real on this machine: "
    "worker processes on 127.0.0.1 join with `jax.distributed.initialize`, each runs a pmap over "
    "its local devices, and `psum`, `all_gather` and `axis_index` span all of them (CPU "
    "collectives go through gloo)."
)
if note := devicefacts.workers_note(shell.device_report().facts):
    st.info(note, icon=":material/info:")

crash = cluster_launch.form()
url_state.share_link("cluster")
procs, local = cluster_launch.sizes()
with presenter.picture(slot):
    grids.show(*cluster.plan_grid(procs, local))
st.code(cluster.worker_code(procs, local), language="python")

cluster_launch.show(procs, local, crash)
cluster_result.show()

st.subheader("On real clusters")
st.markdown(
    """
- **A multi-GPU host:** one process usually drives all its GPUs; no `jax.distributed` needed.
  `jax.devices()` lists them and `pmap` spans them. To run one process per GPU instead, give each
  `local_device_ids=[i]` in `jax.distributed.initialize`.
- **A TPU pod slice:** run the same program on every host (e.g. `gcloud compute tpus tpu-vm ssh
  NAME --worker=all --command="python train.py"`); `jax.distributed.initialize()` with no
  arguments detects the coordinator and process ids.
- **SLURM:** `srun --nodes=4 --ntasks-per-node=1 python train.py`, and in the script
  `jax.distributed.initialize()` with no arguments reads the SLURM environment. Each process
  feeds its local devices (`jax.local_devices()`); collectives span `jax.devices()`.
- **Everywhere:** pass each process only its own shard of the data (`jax.process_index()`), and
  expect a process whose peers never arrive to abort after `initialization_timeout` seconds.
"""
)
