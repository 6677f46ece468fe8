"""Open as shard_map: the explorer's valid pmap settings in today's API, side by side (the
mesh, each array's PartitionSpec and block, both scripts), both run on the same values, and a
way to carry the arrays to the Meshes page. Drawn only while its section is open; the pmap
migration's traps, run on the same settings, are its sibling section
(:mod:`pmapviz.features.meshes.ui.migration_traps`)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.ui import queue_display, recompute, tables
from pmapviz.features.explorer import codegen
from pmapviz.features.meshes import meshsettings, migration
from pmapviz.features.meshes.ui import mesh_form, migration_traps

MESHES = page_file("meshes")


def show(program: Program, plan: Plan, report: jaxstartup.DeviceReport) -> None:
    """The "Open as shard_map" section, then the migration's traps beside it."""
    _open_as_shard_map(program, plan, report)
    migration_traps.show(program, plan, report)


def _open_as_shard_map(program: Program, plan: Plan, report: jaxstartup.DeviceReport) -> None:
    """Both scripts, a run of both, and a way to Meshes."""
    box = st.expander(
        "Open as shard_map: these settings in today's API",
        icon=":material/swap_horiz:",
        key="ex_sm_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        eq = migration.equivalent(plan)
        st.markdown("\n".join(f"- {note}" for note in eq.notes))
        tables.static(migration.spec_rows(eq))
        left, right = st.columns(2)
        left.markdown("**jax.pmap**")
        left.code(codegen.pmap_script(program, plan), language="python", wrap_lines=True)
        right.markdown("**jax.shard_map** on a named mesh")
        right.code(codegen.shard_map_script(program, plan), language="python", wrap_lines=True)
        direct = migration.direct_split(eq)  # this plan's own input, or no sentence
        st.caption(
            "Both scripts are tested to give equal results "
            "(tests/features/explorer/test_codegen.py)." + (f" {direct.words()}" if direct else "")
        )
        if plan.devices_used > report.count:
            st.info(
                f"Planned for {plan.devices_used} devices; this server has "
                f"{report.count}: run both on a machine with enough devices.",
                icon=":material/info:",
            )
        elif st.button(
            "Run both on the same values", icon=":material/play_arrow:", key="ex_sm_run"
        ):
            _run(program, plan)
        _to_meshes(eq, program, report.count)


def _run(program: Program, plan: Plan) -> None:
    with recompute.working("Compiling and running pmap and shard_map..."):
        res = queue_display.queued(
            lambda on_wait: migration.run_both(program, plan, on_wait=on_wait)
        )
    if res is None:
        return
    shapes = ", ".join(str(s) for s in res.pmap_shapes)
    if res.refused:
        st.warning(res.refused, icon=":material/block:")
    elif res.agree:
        st.success(
            f"They agree: the same output{'s' * (len(res.pmap_shapes) > 1)} {shapes}, "
            f"differing by at most {res.max_abs_diff:.3g}.",
            icon=":material/check_circle:",
        )
    else:
        st.error(
            f"They differ: pmap gave {shapes}, shard_map "
            f"{', '.join(str(s) for s in res.shard_map_shapes)}; largest difference "
            f"{res.max_abs_diff}.",
            icon=":material/error:",
        )


def _to_meshes(eq: migration.Equivalent, program: Program, n_devices: int) -> None:
    found = migration.meshes_settings(eq, program, meshsettings.MAX_ARGS, n_devices)
    if found is None:
        st.caption(
            f"The Meshes page takes up to {meshsettings.MAX_ARGS} arrays; these settings have "
            f"{len(eq.inputs)}."
        )
        return
    if st.button(
        "Open these arrays on the Meshes page", icon=":material/grid_view:", key="ex_sm_meshes"
    ):
        for key, value in found.items():
            st.session_state[mesh_form.P + key] = value
        st.session_state[f"_{mesh_form.P}loaded"] = True  # these, not the Meshes link's values
        st.switch_page(MESHES)
