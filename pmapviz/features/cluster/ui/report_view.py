"""A real cluster's report, drawn: the hosts with their processes' devices at their global ids,
each process's local view, and the collectives checked against numpy
(:func:`pmapviz.features.cluster.clusterreport.check`)."""

from __future__ import annotations

import html

import streamlit as st

from pmapviz.core.base.valuetext import quote
from pmapviz.core.drawing import gridhtml
from pmapviz.core.ui import grids, tables
from pmapviz.features.cluster import clusterreport
from pmapviz.features.cluster.clusterreport import ClusterReport

MAX_ROWS, MAX_CELLS = 64, 64  # hosts drawn, devices per host drawn


def show(report: ClusterReport | None, source: str) -> None:
    """The report, or how to make one."""
    if report is None:
        st.info(
            "Open a report made on a cluster: every process runs `python -m pmapviz cluster "
            "--join --report cluster-report.json` (the **Launch lines** tab has the command "
            "for Slurm, Open MPI and a TPU pod), and process 0 writes the file.",
            icon=":material/upload_file:",
        )
        return
    hosts, g = report.hosts, len(report.devices)
    st.subheader(
        f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}, {report.process_count} "
        f"processes, {g} global devices"
    )
    st.markdown(origin(report, source))
    grids.show(*host_grid(report))
    cut = "" if len(hosts) <= MAX_ROWS else f" The first {MAX_ROWS} hosts are drawn."
    st.caption(
        "Each row is one host; each cell one device, with its global id and the process "
        "that holds it; the colour is its position on the global axis (axis_index)." + cut
    )
    st.markdown(
        "**Each process's local view**: its local devices, its inputs (one per local "
        "device), and what the collectives over all the devices gave it."
    )
    tables.show(process_table(report))
    check = clusterreport.check(report)
    (st.success if check.ok else st.error)(
        verdict(check, report), icon=":material/check_circle:" if check.ok else ":material/error:"
    )


def origin(report: ClusterReport, source: str) -> str:
    """Where the report came from: what JAX detected, its version, the platform and date."""
    env = report.environment
    name, cls, coord = (quote(env.get(k) or "?", 60) for k in ("name", "jax_class", "coordinator"))
    return (
        f"From {source}: {name} detected by JAX's {cls}, coordinator {coord}; JAX "
        f"{quote(report.jax_version or '?', 20)}, platform {quote(report.platform or '?', 20)}"
        f", made {quote(report.created or '?', 30)}."
    )


def host_grid(report: ClusterReport) -> tuple[gridhtml.Rows, str]:
    """(one grid row per host: its processes' devices, coloured by axis_index; the label)."""
    rows, said = [], []
    for host, procs in list(report.hosts.items())[:MAX_ROWS]:
        cells = []
        for p in procs:
            for dev, idx in zip(p.local_device_ids, p.axis_index, strict=True):
                cells.append(
                    (
                        gridhtml.titled(f"id {dev}", f"process {p.index} · axis {idx}"),
                        idx,
                        f"host {host}, process {p.index}, global device id {dev}, axis_index {idx}",
                    )
                )
        rows.append((_short(host), cells[:MAX_CELLS]))
        said.append(f"{host}: processes {', '.join(str(p.index) for p in procs)}")
    label = (
        f"{len(report.hosts)} hosts, {report.process_count} processes, "
        f"{len(report.devices)} global devices: " + "; ".join(said[:16])
    )
    return rows, label


def process_table(report: ClusterReport) -> list[dict]:
    """One row per process: its devices, inputs, collectives' results and timings."""

    def ms(s):
        return None if s is None else round(s * 1e3, 3)

    return [
        {
            "process": p.index,
            "host": p.hostname,
            "local devices": _few(p.local_device_ids),
            "sees global devices": p.sees,
            "local x": _few(p.local_inputs),
            "psum": p.psum,
            "all_gather": _few(p.all_gather),
            "axis_index": _few(p.axis_index),
            "join (s)": None if p.init_s is None else round(p.init_s, 3),
            "first call (ms)": ms(p.first_call_s),
            "steady call (ms)": ms(p.steady_s),
        }
        for p in report.processes
    ]


def verdict(check: clusterreport.ReportCheck, report: ClusterReport) -> str:
    """The check in words: psum, all_gather and axis_index against numpy."""
    g = len(report.devices)
    parts = [
        f"psum = {report.processes[0].psum:g} "
        + (
            "in **every** process"
            if check.psum_equal
            else "in process 0, but the processes DISAGREE"
        )
        + (
            f", equal to numpy's sum of the inputs ({check.expected_psum:g})"
            if check.psum_correct
            else f", NOT numpy's {check.expected_psum:g}"
        )
    ]
    parts.append(
        "all_gather equals numpy's array of the inputs in axis order"
        if check.gather_correct
        else "all_gather is WRONG in some process"
    )
    parts.append(
        f"axis_index covers 0..{g - 1} once each"
        if check.axis_complete
        else f"axis_index does NOT cover 0..{g - 1} once each"
    )
    return "; ".join(parts) + "."


def _few(values, most: int = 8) -> str:
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values[:most])
    return f"[{shown}{', ...' if len(values) > most else ''}]"


def _short(host: str) -> str:
    return html.escape(host if len(host) <= 24 else host[:23] + "…")
