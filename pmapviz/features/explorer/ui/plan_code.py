"""The code of a valid plan: the jax.pmap script and what XLA compiles,
drawn only while their section is open, and then only the open tab."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import programanalysis
from pmapviz.core.ui import compiled_analysis, recompute
from pmapviz.features.explorer import codegen


def show(program: Program, plan: Plan, report: jaxstartup.DeviceReport) -> None:
    """The section (the call itself is always shown, above it, by the verdict). The same
    settings with jax.shard_map, beside this script, are in the Open as shard_map section."""
    box = st.expander(
        "The code: jax.pmap and what XLA compiles",
        icon=":material/code:",
        key="ex_code_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        tab_pmap, tab_xla = st.tabs(
            ["jax.pmap", "What XLA compiles"], key="ex_code", on_change="rerun"
        )
        if tab_pmap.open:
            with tab_pmap:
                st.code(codegen.pmap_script(program, plan), language="python", line_numbers=True)
        if tab_xla.open:
            with tab_xla:
                _compiled(program, plan, report)


def _compiled(program: Program, plan: Plan, report: jaxstartup.DeviceReport) -> None:
    if plan.devices_used > report.count:
        st.info(
            "Planned for more devices than this server has: compile it on a machine with "
            f"{plan.devices_used} devices.",
            icon=":material/info:",
        )
    elif st.toggle("Compile it and show the collectives XLA emits", key="ex_xla"):
        with recompute.working("Lowering and compiling..."):
            analysis = programanalysis.analyse_plan(program, plan)
        compiled_analysis.show(analysis, report.labels)
        st.page_link(
            page_file("compiled"),
            label="More on the Compiled program page",
            icon=":material/memory_alt:",
        )
