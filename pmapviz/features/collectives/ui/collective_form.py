"""The Collectives playground's settings: which collective, on how many devices, how many
elements each, which values, and its groups or pairs (widgets ``co_`` + the URL key, seeded
from the link and written back to it)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.expressions import collectivedefs
from pmapviz.core.ui import collective_picker, url_state
from pmapviz.features.collectives import collectivechoices

P = "co_"


def show(n_all: int) -> collectivedefs.Collective:
    """The settings' boxes; returns the chosen collective."""
    schema = collectivechoices.schema(n_all)
    url_state.load(P, schema)
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
        coll = collective_picker.boxes(c1, c2, c3, P, n_all)
        c4.radio(
            "Values",
            collectivechoices.VALUE_KINDS,
            key=P + "v",
            format_func=collectivechoices.value_label,
            help=collectivechoices.VALUE_HELP,
        )
        st.caption(coll.explain)
        if coll.uses_groups:
            st.text_input(
                "axis_index_groups (optional)",
                key=P + "g",
                max_chars=400,
                placeholder="e.g. 0 1 | 2 3   (empty: all devices in one group)",
                help="Groups of devices that reduce among themselves; they must split all "
                "devices. Unequal sizes run on CPU (pmean then divides by the first group's "
                "size, wrongly; TPUs refuse them).",
            )
        if coll.takes_pairs:
            p1, p2 = st.columns([1, 2])
            p1.radio("Permutation", collectivechoices.PERMUTATIONS, key=P + "p")
            if st.session_state[P + "p"] == "custom":
                p2.text_input(
                    "Pairs source->destination",
                    key=P + "pairs",
                    max_chars=400,
                    help="e.g. 0->1, 1->2. Devices that no pair sends to get zeros.",
                )
    url_state.save(P, schema)
    return coll


def sizes(n_all: int) -> tuple[int, int]:
    """(devices, elements per device), parsed (the page stops on bad text)."""
    values = url_state.parsed(P, collectivechoices.schema(n_all), ["n", "m"])
    return values["n"], values["m"]


def value_kind() -> str:
    """Which values each device starts with: 'arange' (1, 2, 3, ...) or 'random', as the link
    says it."""
    return st.session_state[P + "v"]


def choice(coll: collectivedefs.Collective, n: int) -> collectivechoices.CollectiveChoice:
    """The groups and pairs the boxes describe (raises ``collectivechoices.CollectiveError``)."""
    state = st.session_state
    return collectivechoices.playground_choice(
        coll.key, n, state[P + "g"], state[P + "pairs"], state[P + "p"]
    )
