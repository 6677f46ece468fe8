"""A real ``jax.distributed`` cluster on this machine: its settings (widgets ``cl_`` + the
URL key, and the link), the launch (after its turn in the queue), and, when it fails, what
each worker printed last. The result is kept in ``cl_result`` (drawn by
:mod:`pmapviz.features.cluster.ui.cluster_result`), a failure in ``cl_error``."""

from __future__ import annotations

import os
import signal
import time

import streamlit as st

from pmapviz.core.devices import devicefacts
from pmapviz.core.ui import queue_display, recompute, url_state
from pmapviz.features.cluster import cluster, clustersettings

P = "cl_"


def form() -> bool:
    """The cluster's settings, seeded from the link (the whole page's: call it first, and
    :func:`save` after the page's last widget); True when the launch should kill worker 1 (to
    show how a failure is handled; not part of the link)."""
    url_state.load(P, clustersettings.schema())
    with st.container(border=True):
        c1, c2, c3 = st.columns([1, 1, 2])
        c1.selectbox(
            "Processes", [str(v) for v in range(2, clustersettings.MAX_PROCESSES + 1)], key=P + "p"
        )
        c2.selectbox(
            "CPU devices per process",
            [str(v) for v in range(1, clustersettings.MAX_LOCAL + 1)],
            key=P + "d",
        )
        crash = c3.checkbox(
            "Kill worker 1 right after launch (to see how a failure is handled)", key=P + "crash"
        )
    return crash


def save() -> None:
    """The page's settings (this launch's, the report path, the launch lines' numbers) into
    the link: once, after all of their widgets."""
    url_state.save(P, clustersettings.schema())


def sizes() -> tuple[int, int]:
    """(processes, devices per process), parsed (the page stops on bad text)."""
    v = url_state.parsed(
        P, clustersettings.schema(), ["p", "d"]
    )  # the launch lines parse their own
    return int(v["p"]), int(v["d"])


def kill_worker_1(workers) -> None:
    """The launch's fault: worker 1 killed soon after it started."""
    time.sleep(0.3)
    os.kill(workers[1].pid, signal.SIGKILL)


def show(procs: int, local: int, crash: bool) -> None:
    """The launch button; a launch's failure, if the last one failed. Where the machine
    forbids local sockets, why there is no launch here (the lines for a real cluster below
    still work)."""
    if why := devicefacts.no_local_sockets():
        st.info(f"No local cluster on this machine: {why}", icon=":material/block:")
    if st.button(
        f"Launch {procs} processes x {local} devices",
        type="primary",
        icon=":material/rocket_launch:",
        key="cl_go",
        disabled=bool(why),
    ):
        _launch(procs, local, crash)
    if "cl_error" in st.session_state:
        msg, details = st.session_state["cl_error"]
        st.error(f"**The cluster failed**: {msg}", icon=":material/error:")
        st.markdown("The dashboard keeps serving. What each process printed last:")
        for i, lines in details.items():
            st.code(f"process {i}:\n" + "\n".join(lines[-6:] or ["(no output)"]), language="text")


def _launch(procs: int, local: int, crash: bool) -> None:
    on_wait, clear_wait = queue_display.show(stop_key="cl_stop")
    with recompute.working(
        f"Starting {procs} workers (waits its turn if another launch is under way)..."
    ):
        try:
            st.session_state["cl_result"] = cluster.launch(
                procs,
                local,
                timeout=30,
                fault=kill_worker_1 if crash else None,
                on_wait=on_wait,
            )
            st.session_state.pop("cl_error", None)
        except (cluster.ClusterError, ValueError, OSError) as err:
            st.session_state.pop("cl_result", None)
            st.session_state["cl_error"] = (str(err), getattr(err, "details", {}))
    clear_wait()
