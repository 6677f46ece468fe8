"""The pmap migration's traps, run on the explorer's settings: a sibling of "Open as shard_map".
Drawn only while its section is open; the traps run on a button
(:mod:`pmapviz.features.meshes.migrationtraps`), and each shows what was run, what happened
(names from the settings as code spans), JAX's own words (code blocks) and the fix."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.ui import queue_display, recompute
from pmapviz.features.meshes import migrationtraps

CLUSTER = page_file("cluster")


def show(program: Program, plan: Plan, report: jaxstartup.DeviceReport) -> None:
    """The section: what the guide's traps are, a button that runs them on these settings,
    and each one's result."""
    box = st.expander(
        "The pmap migration's traps, run on these settings",
        icon=":material/report:",
        key="ex_tr_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        st.markdown(
            "Since JAX 0.8, `jax.pmap` is `jax.jit` of `jax.shard_map`, and JAX's migration "
            "guide (docs/migrate_pmap.md) lists what that changed. Each trap below is run on "
            "these settings and read from the run: `out[0]` on a split output, "
            "`out_axes=None`, nested pmap, the old placement functions, and host-local "
            "against global arrays."
        )
        if plan.devices_used > report.count:
            st.info(
                f"Planned for {plan.devices_used} devices; this server has {report.count}: "
                "run them on a machine with enough devices.",
                icon=":material/info:",
            )
            return
        if not st.button("Run the traps", icon=":material/play_arrow:", key="ex_tr_run"):
            return
        with recompute.working("Running the migration's traps on these settings..."):
            res = queue_display.queued(
                lambda on_wait: migrationtraps.run_traps(program, plan, on_wait=on_wait)
            )
        if res is None:
            return
        for k, trap in enumerate(res.traps, start=1):
            _trap(k, trap)
        st.page_link(
            CLUSTER,
            label="Multi-process: real jax.distributed clusters, local against global devices",
            icon=":material/hub:",
        )


def _trap(k: int, trap: migrationtraps.Trap) -> None:
    """One trap: its code, what happened, JAX's words, the fix and what the fix did."""
    mark = "" if trap.applies else " (not met by these settings)"
    st.markdown(f"**{k}. {trap.title}**{mark}")
    st.code(trap.code, language="python", wrap_lines=True)
    st.markdown(trap.said)
    if trap.jax_words:
        st.code(trap.jax_words, language=None, wrap_lines=True)
    if trap.fix_code:
        st.markdown("**Fix:**")
        st.code(trap.fix_code, language="python", wrap_lines=True)
    if trap.fix_said:
        st.caption(trap.fix_said)
