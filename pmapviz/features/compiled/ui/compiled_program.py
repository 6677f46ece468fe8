"""Which program the Compiled page reads back from XLA: the explorer's settings, a collective
(the playground's own settings, widgets ``cp_`` + the URL key) or a training step; the
choice and its link, and the program lowered and compiled (cached per collective)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from pmapviz.core.devices import deviceset
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import programanalysis
from pmapviz.core.ui import collective_picker, url_state
from pmapviz.features.collectives import collectiveanalysis, collectivechoices
from pmapviz.features.compiled import compiledsettings
from pmapviz.features.training import traininganalysis, trainingmodel

P = "cp_"
SOURCE_LABELS = {
    "explorer": "Explorer's settings",
    "collective": "A collective",
    "training": "Training step",
}
COLLECTIVE_KEYS = ["src", "c", "n", "m", "g", "pairs"]  # the link of a collective's program


@dataclass(frozen=True)
class Call:
    """One collective call: its key, devices, elements per device, groups and pairs."""

    key: str
    n: int
    m: int
    groups: tuple | None
    perm: tuple | None


@st.cache_resource(max_entries=32, show_spinner=False)
def _collective(device_set, key, n, m, groups, perm):
    """Compiled for ``device_set``'s devices (its name keys the cache)."""
    return collectiveanalysis.analyse_collective(key, n, m, groups, perm)


def form(n_all: int) -> tuple[str, Scenario]:
    """``(source, the explorer's scenario)``: the choice's widgets, seeded from the link and
    written back to it (with the explorer's settings when they are the program)."""
    schema = compiledsettings.schema(n_all)
    url_state.load(P, schema)
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
        c1.radio(
            "Program",
            compiledsettings.SOURCES,
            key=P + "src",
            horizontal=True,
            format_func=lambda s: SOURCE_LABELS.get(s, s),
        )
        src = st.session_state[P + "src"]
        if src == "collective":
            chosen = collective_picker.boxes(c2, c3, c4, P, n_all)
            if chosen.uses_groups:
                st.text_input(
                    "axis_index_groups (optional)",
                    key=P + "g",
                    max_chars=400,
                    placeholder="e.g. 0 1 | 2 3",
                )
            if chosen.takes_pairs:
                st.text_input(
                    "Pairs source->destination (empty: ring right)", key=P + "pairs", max_chars=400
                )
    explored = url_state.explorer_scenario(n_all)  # read before the URL is rewritten below
    if src == "collective":
        url_state.save(P, schema, COLLECTIVE_KEYS)
    else:
        url_state.save(
            P,
            schema,
            ["src"],
            also=url_state.scenario_query(explored, n_all) if src == "explorer" else None,
        )
    return src, explored


def analyse(src: str, explored: Scenario, n_all: int):
    """``(analysis, the collective's call or None)`` for the chosen program, lowered and
    compiled; on settings that do not make one, the page says why and stops."""
    call = None
    with st.spinner("Lowering and compiling (first time for these settings only)..."):
        try:
            if src == "collective":
                call = _call(n_all)
                analysis = _collective(
                    deviceset.current(), call.key, call.n, call.m, call.groups, call.perm
                )
            elif src == "explorer":
                program, plan, errors = explored.plan(n_all)
                if url_state.show_errors(errors) or plan is None or not plan.ok:
                    st.info(
                        "Fix the explorer's settings first (Shapes & sharding page).",
                        icon=":material/grid_view:",
                    )
                    st.stop()
                analysis = programanalysis.analyse_plan(program, plan)
            else:
                analysis = traininganalysis.analyse_training(
                    trainingmodel.Config("linear", n_all, 32 * n_all)
                )
        except collectivechoices.CollectiveError as err:
            st.error(str(err), icon=":material/block:")
            st.stop()
    return analysis, call


def _call(n_all: int) -> Call:
    """The collective the boxes describe (raises ``collectivechoices.CollectiveError``)."""
    v = url_state.parsed(P, compiledsettings.schema(n_all), ["c", "n", "m"])
    target = collectivechoices.playground_choice(
        v["c"], v["n"], st.session_state[P + "g"], st.session_state[P + "pairs"]
    )
    return Call(v["c"], v["n"], v["m"], target.groups, target.perm)
