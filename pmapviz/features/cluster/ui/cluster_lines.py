"""The launch lines for a real cluster (:mod:`pmapviz.features.cluster.launchlines`) from the user's
numbers (nodes, processes per node, devices per process, GPUs or CPU devices: page settings, in the
link), and what changes on a real cluster."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import url_state
from pmapviz.features.cluster import clustersettings, launchlines

P = "cl_"
KEYS = ["nodes", "ppn", "dpp", "kind"]
KIND_LABELS = {"gpu": "GPUs", "cpu": "CPU devices (--local-devices)"}


def show() -> None:
    """The numbers, then one command per launcher with what it starts."""
    c1, c2, c3, c4 = st.columns(4)
    c1.text_input("Nodes (hosts)", key=P + "nodes", max_chars=8)
    c2.text_input("Processes per node", key=P + "ppn", max_chars=8)
    c3.text_input("Devices per process", key=P + "dpp", max_chars=8)
    c4.selectbox(
        "Device kind", launchlines.KINDS, key=P + "kind", format_func=KIND_LABELS.__getitem__
    )
    texts = {k: st.session_state.get(P + k) for k in KEYS}
    values, errors = clustersettings.schema().parse(texts, KEYS)
    if url_state.show_errors(errors):
        return
    for launch in launchlines.all_launches(
        values["nodes"], values["ppn"], values["dpp"], values["kind"]
    ):
        st.markdown(f"**{launch.title}**")
        st.code(launch.command, language="bash", wrap_lines=True)
        st.caption(launch.explains)
    st.markdown(
        f"Process 0 writes `{launchlines.REPORT}` on its host; open it in the **Show a report** "
        "tab. Every process says in one line which environment JAX detected and what is missing "
        "when it cannot join, and stops within `--timeout` seconds (default 120) instead of "
        "hanging; add `--json` to print the report as one JSON object."
    )


def explain() -> None:
    """What changes on a real cluster (the page's closing section)."""
    st.markdown(
        """
- **One process per host, or one per GPU.** On a TPU slice every host runs one process that
  drives all of its chips. Under Slurm and Open MPI, JAX assumes one process per GPU: it sets
  `local_device_ids=[local rank]`, so process *r* of a node sees only GPU *r*. A process that
  should drive several GPUs gets `JAX_LOCAL_DEVICE_IDS` (the launch lines do it). On CPU that
  default changes nothing: each process has the CPU devices it asked for.
- **Which devices are local.** `jax.local_devices()` are this process's devices, on its own
  host; `jax.devices()` lists every process's, and the pmap axis runs over them in that order.
  Each process passes only its local slice (leading axis `jax.local_device_count()`), and a
  collective such as `psum` spans them all.
- **Finding each other.** `jax.distributed.initialize()` with no arguments reads the launcher's
  variables: the process count, this process's id and the coordinator (process 0's host;
  Slurm's port is `SLURM_JOB_ID % 4096 + 61440`). `JAX_COORDINATOR_PORT` moves it, and
  `JAX_COORDINATOR_BIND_ADDRESS` takes a host **and** a port (`127.0.0.1:61586`): with the
  host alone the processes wait forever.
- **The network.** Between processes, CPU collectives go through gloo over TCP, GPUs through
  NCCL, TPUs over their interconnect. A process whose peers never arrive is aborted by JAX
  after `initialization_timeout` (300 s), with no Python error to catch.
- **Data.** Every process runs the same program; give each its own shard of the data
  (`jax.process_index()`), not a copy of all of it.
"""
    )
