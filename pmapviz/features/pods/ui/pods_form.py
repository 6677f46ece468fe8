"""The Pods page's settings (widgets ``po_`` + the URL key), and the sweep's button and result
(kept in the session, so a rerun shows it again without compiling)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.pods import podsweep, tpuchips
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podreport import PodReport
from pmapviz.core.ui import pod_report, url_state
from pmapviz.features.pods import podsettings

P = "po_"
SWEPT = "_po_swept"  # (program key, batch, generation) -> reports


def form(n_devices: int) -> tuple[PodProgram, str]:
    """``(program, topology)`` from the widgets, seeded from and saved to the link."""
    schema = podsettings.schema(n_devices)
    url_state.load(P, schema)
    with st.container(border=True):
        c1, c2, c3 = st.columns([3, 2, 1])
        c1.radio(
            "Program",
            tuple(podsettings.PROGRAMS),
            key=P + "prog",
            format_func=podsettings.program_label,
            horizontal=True,
        )
        with c2:
            more = podsettings.RENTED + podsettings.MULTISLICE  # hosts as rented, several slices
            pod_report.target_picker(P + "pod", here=False, label="TPU slice", more=more)
        c3.text_input("Batch (0: its own)", key=P + "batch", max_chars=12)
    values = url_state.parsed(P, schema, ["pod", "prog", "batch"])
    url_state.save(P, schema)
    program = podsettings.program(values["prog"], values["batch"])
    return program, values["pod"]


def sweep() -> list[PodReport] | None:
    """The sweep's program and generation, its button, and its result (this session's, for
    these settings)."""
    c0, c1, c2 = st.columns([2, 1, 2])
    c0.selectbox(
        "Program to sweep",
        tuple(podsettings.PROGRAMS),
        key=P + "sprog",
        format_func=podsettings.program_label,
    )
    program = podsettings.program(st.session_state[P + "sprog"])
    c1.selectbox(
        "Generation",
        tuple(tpuchips.GENERATIONS),
        key=P + "gen",
        format_func=lambda g: getattr(tpuchips.GENERATIONS.get(g), "title", g),
    )
    gen = st.session_state[P + "gen"]
    sizes = podsweep.sizes(gen)
    c2.caption(
        f"{len(sizes)} compiles, {tpuchips.parse_topology(sizes[0]).chips} to "
        f"{tpuchips.parse_topology(sizes[-1]).chips} chips: "
        + ", ".join(sizes)
        + ". Each takes one to a few seconds on this machine."
    )
    key = (program.key, program.batch, gen)
    kept = st.session_state.setdefault(SWEPT, {})
    if st.button("Sweep the slice sizes", key=P + "sweep", icon=":material/stacked_line_chart:"):
        if pod_report.unavailable():
            return None
        try:
            kept[key] = pod_report.compiling(
                f"{len(sizes)} slice sizes", lambda step: podsweep.sweep(program, gen, on_step=step)
            )
        except ValueError as err:
            st.error(str(err), icon=":material/block:")
            return None
    return kept.get(key)
