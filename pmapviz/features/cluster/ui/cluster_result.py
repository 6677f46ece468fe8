"""A cluster's result (``cl_result``, a ``cluster.ClusterResult``): each process and its local
devices on the global axis, what every process computed, the check against numpy, and the
timings beside one process with all the devices."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.drawing import gridhtml
from pmapviz.core.ui import grids, tables
from pmapviz.features.cluster import clusterview


def show() -> None:
    """The last launch's result of this session, if it succeeded."""
    res = st.session_state.get("cl_result")
    if res is None:
        return
    g = res.global_devices
    st.subheader(f"{res.processes} processes x {res.local_devices} devices = {g} global devices")
    grids.show(process_rows(res), clusterview.picture_label(res))
    st.caption(
        "Each row is one process and its local devices; the colour is the device's position on "
        "the global axis (its axis_index). Device ids come from JAX: process i's devices are "
        "numbered from i x 2048 on CPU."
    )
    check = clusterview.check_result(res)
    tables.show(
        [
            {
                "process": pp["process_index"],
                "local devices": str(pp["local_device_ids"]),
                "sees global devices": pp["global_devices"],
                "local x": str(pp["local_inputs"]),
                "psum": pp["psum"],
                "all_gather": str(pp["all_gather"]),
                "init (s)": round(pp["init_s"], 3),
                "first call (ms)": round(pp["first_call_s"] * 1e3, 1),
                "steady call (ms)": round(pp["steady_s"] * 1e3, 3),
            }
            for pp in res.per_process
        ]
    )
    (st.success if check.ok else st.error)(
        f"psum = {res.per_process[0]['psum']:g} and all_gather = 1..{g} in **every** process"
        + (
            f", equal to numpy (sum 1..{g} = {check.expect_sum:g})."
            if check.correct
            else ": WRONG."
        )
        + ("" if check.identical else " The processes DISAGREE."),
        icon=":material/check_circle:" if check.ok else ":material/error:",
    )
    if single := res.single_process:
        st.markdown(
            f"**Timings.** Joining the cluster took {check.init_s:.2f} s. A steady call of the "
            f"same pmap: {check.steady_s * 1e3:.2f} ms across {res.processes} processes, versus "
            f"{single['steady_s'] * 1e3:.2f} ms in one process with all {g} devices (first "
            f"call {single['first_call_s'] * 1e3:.0f} ms). Across processes, every collective "
            "goes through gloo over the loopback network."
        )


def process_rows(res) -> gridhtml.Rows:
    """One grid row per process: its local devices, coloured by their global axis_index."""
    rows = []
    for pp in res.per_process:
        cells = []
        for j, (dev_id, idx) in enumerate(
            zip(pp["local_device_ids"], pp["axis_index"], strict=True)
        ):
            label = gridhtml.titled(
                f"id {dev_id}", f"axis_index {idx} · x={pp['local_inputs'][j]:g}"
            )
            tip = f"process {pp['process_index']}, local device {j}, global device id {dev_id}"
            cells.append((label, idx, tip))
        rows.append((f"process {pp['process_index']}", cells))
    return rows
