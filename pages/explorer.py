"""Shapes & sharding explorer: settings -> pmapviz.plan -> diagrams, per-device table, code."""

import streamlit as st

from pmapviz.core.base import valuetext
from pmapviz.core.planning import scenarios
from pmapviz.core.ui import plan_cards, presenter, shell, url_state
from pmapviz.features.explorer import presets
from pmapviz.features.explorer.ui import explorer_form, plan_code, plan_verdict
from pmapviz.features.meshes.ui import migration_view
from pmapviz.features.smap.ui import smap_view

shell.ensure_routed()

report = shell.device_report()
n = report.count

st.title("Shapes & sharding")
st.markdown(
    "Set a function's input shapes and axes and see, before anything runs, exactly how "
    "`jax.pmap` splits the work across this server's "
    f"**{valuetext.counted(n, 'device')}**. Everything below comes from `pmapviz.plan` "
    "(abstract shapes, `jax.eval_shape`) and JAX's own shardings."
)
url_state.load(explorer_form.P, scenarios.schema(n))
explorer_form.presets_row(n)


@shell.fragment
def _explorer() -> None:
    """Everything an edit changes: the settings, the verdict, the diagrams, the table and the
    code. An edit reruns only this fragment, not the title, the presets or the sidebar."""
    slot = presenter.picture_slot()  # presenter mode: the diagrams above the settings
    current = explorer_form.show(n)
    url_state.save_scenario(current, n)
    program, plan, errors = current.plan(n, use_pn=True)
    elsewhere = bool(current.plans_elsewhere(n))
    lesson = presets.is_lesson(current, n)
    problem = bool(errors) or plan is None or not plan.ok
    with presenter.picture(slot if problem else None):  # presenting: a problem before its form
        stop = url_state.show_errors(errors) or not plan_verdict.show(
            program, plan, n, elsewhere, lesson
        )
    if stop:
        smap_view.show(program, plan, report)  # what smap does with settings pmap refuses
        return
    with presenter.picture(slot):
        inputs, outputs = plan_cards.show(
            plan, "How the arrays are split", plan_cards.intro(elsewhere)
        )
    plan_cards.device_table(plan, inputs, outputs, "What each device holds and computes")
    plan_code.show(program, plan, report)
    migration_view.show(program, plan, report)
    smap_view.show(program, plan, report)


_explorer()
url_state.share_link(
    "explorer"
)  # after the fragment: on a full run, the link has this run's settings
