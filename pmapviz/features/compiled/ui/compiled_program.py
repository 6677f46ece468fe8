"""Which program the Compiled page reads back from XLA: the explorer's settings, a collective
(the playground's own settings, widgets ``cp_`` + the URL key) or a training step; the
choice and its link, and the program lowered and compiled (cached per collective), here or,
with a TPU slice picked (``?pod=v5e:4x4``, or several: ``?pod=2 x v5e:2x4``), by libtpu for it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from pmapviz.core.devices import deviceset
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.pods import podprograms, podtarget
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.running import programanalysis
from pmapviz.core.ui import collective_picker, pod_report, recompute, url_state
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
        pod_report.target_picker(P + podtarget.KEY, more=podtarget.MULTISLICE)
    explored = url_state.explorer_scenario(n_all)  # read before the URL is rewritten below
    pod = [podtarget.KEY] if st.session_state[P + podtarget.KEY] else []  # this machine: no pod=
    if src == "collective":
        url_state.save(P, schema, COLLECTIVE_KEYS + pod)
    else:
        url_state.save(
            P,
            schema,
            ["src", *pod],
            also=url_state.scenario_query(explored, n_all) if src == "explorer" else None,
        )
    return src, explored


def analyse(src: str, explored: Scenario, n_all: int):
    """``(analysis, the collective's call or None)`` for the chosen program, lowered and
    compiled; on settings that do not make one, the page says why and stops."""
    planned = _explorer_plan(explored, n_all) if src == "explorer" else None  # or stops
    try:
        call = _call(n_all) if src == "collective" else None
        with recompute.working("Lowering and compiling (first time for these settings only)..."):
            if call is not None:
                analysis = _collective(
                    deviceset.current(), call.key, call.n, call.m, call.groups, call.perm
                )
            elif planned is not None:
                analysis = programanalysis.analyse_plan(*planned)
            else:
                analysis = traininganalysis.analyse_training(_training_config(n_all))
    except collectivechoices.CollectiveError as err:
        st.error(str(err), icon=":material/block:")
        st.stop()  # outside the notice's block: a stop leaves no notice behind
    return analysis, call


def _explorer_plan(explored: Scenario, n_all: int):
    """The explorer's program and its valid plan; else the page says where to fix it, stops."""
    program, plan, errors = explored.plan(n_all)
    if url_state.show_errors(errors) or plan is None or not plan.ok:
        st.info(
            "Fix the explorer's settings first (Shapes & sharding page).",
            icon=":material/grid_view:",
        )
        st.stop()
    return program, plan


def _training_config(n_all: int) -> trainingmodel.Config:
    return trainingmodel.Config("linear", n_all, 32 * n_all)


def on_slice(src: str, explored: Scenario, n_all: int, slot) -> bool:
    """With a TPU slice picked: the chosen program compiled for it by libtpu (nothing runs), its
    report in the presenter's ``slot``; True then (this machine's analysis is not shown)."""
    topology = url_state.parsed(P, compiledsettings.schema(n_all), [podtarget.KEY])[podtarget.KEY]
    if not topology:
        return False
    st.subheader(f"Compiled for {podtarget.label(topology)}")
    try:
        program = _slice_program(src, explored, n_all)
    except collectivechoices.CollectiveError as err:
        st.error(str(err), icon=":material/block:")
        return True
    st.markdown(
        podtarget.pmap_words(topology) + " Pick *this machine* above for what XLA made of it here."
    )
    pod_report.program_and_report(program, topology, "cp_pod", slot)
    return True


def _slice_program(src: str, explored: Scenario, n_all: int) -> PodProgram:
    """The chosen program's pmap target, re-pointed at a slice (raises CollectiveError)."""
    if src == "collective":
        call = _call(n_all)
        target = collectiveanalysis.collective_target(
            call.key, call.n, call.m, call.groups, call.perm
        )
        said = repr(call)
    elif src == "explorer":
        target = programanalysis.plan_target(*_explorer_plan(explored, n_all))
        said = repr(sorted(explored.texts().items()))
    else:
        cfg = _training_config(n_all)
        target, said = traininganalysis.training_target(cfg), repr(cfg)
    digest = hashlib.sha1(f"{n_all}:{said}".encode()).hexdigest()[:12]
    return podprograms.from_target(target, f"cp:{src}:{digest}")


def _call(n_all: int) -> Call:
    """The collective the boxes describe (raises ``collectivechoices.CollectiveError``)."""
    v = url_state.parsed(P, compiledsettings.schema(n_all), ["c", "n", "m"])
    target = collectivechoices.playground_choice(
        v["c"], v["n"], st.session_state[P + "g"], st.session_state[P + "pairs"]
    )
    return Call(v["c"], v["n"], v["m"], target.groups, target.perm)
