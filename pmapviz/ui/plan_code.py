"""The code of a valid plan: the jax.pmap and jax.shard_map scripts and what XLA compiles,
drawn only while their section is open, and then only the open tab."""

from __future__ import annotations

import streamlit as st

from pmapviz import codegen, compiled, devices
from pmapviz.catalog import Program
from pmapviz.planning import Plan
from pmapviz.ui import compiled_analysis


def show(program: Program, plan: Plan, report: devices.DeviceReport) -> None:
    """The section (the call itself is always shown, above it, by the verdict)."""
    box = st.expander("The code: jax.pmap, jax.shard_map and what XLA compiles",
                      icon=":material/code:", key="ex_code_open", on_change="rerun")  # fmt: skip
    if not box.open:
        return
    with box:
        tab_pmap, tab_sm, tab_xla = st.tabs(
            ["jax.pmap", "jax.shard_map (today's API)", "What XLA compiles"], key="ex_code",
            on_change="rerun",
        )  # fmt: skip
        if tab_pmap.open:
            with tab_pmap:
                st.code(codegen.pmap_script(program, plan), language="python", line_numbers=True)
        if tab_sm.open:
            with tab_sm:
                _shard_map_code(program, plan)
        if tab_xla.open:
            with tab_xla:
                _compiled(program, plan, report)
        st.caption("Both scripts are tested to give equal results (tests/core/test_codegen.py).")


def _shard_map_code(program: Program, plan: Plan) -> None:
    st.markdown(
        "`shard_map` is **rank-preserving**: each device's block keeps the mapped axis (here of "
        "size 1), where pmap's per-device view drops it. With shard_map you can also skip the "
        "manual reshape: `in_specs=P('i')` on a `(10_000_000, 3)` array gives each of "
        f"{plan.n_devices:,} devices a `({10_000_000 // plan.n_devices:_}, 3)` block directly."
    )
    st.code(codegen.shard_map_script(program, plan), language="python", line_numbers=True)


def _compiled(program: Program, plan: Plan, report: devices.DeviceReport) -> None:
    if plan.devices_used > report.count:
        st.info("Planned for more devices than this server has: compile it on a machine with "
                f"{plan.devices_used} devices.", icon=":material/info:")  # fmt: skip
    elif st.toggle("Compile it and show the collectives XLA emits", key="ex_xla"):
        with st.spinner("Lowering and compiling..."):
            compiled_analysis.show(compiled.analyse_plan(program, plan), report.labels)
        st.page_link("pages/compiled.py", label="More on the Compiled program page",
                     icon=":material/memory_alt:")  # fmt: skip
