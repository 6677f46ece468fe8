"""The three boxes that pick a collective run, shared by the Collectives playground and the
Compiled page: which collective, on how many devices, how many elements each (widgets
``prefix`` + ``c``, ``n``, ``m``)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.expressions import collectivedefs


def boxes(which, devices, elements, prefix: str, n_all: int) -> collectivedefs.Collective:
    """The collective's select box in column ``which``, the device and element counts in
    ``devices`` and ``elements``; returns the chosen collective's record."""
    which.selectbox(
        "Collective",
        [c.key for c in collectivedefs.COLLECTIVES],
        key=prefix + "c",
        format_func=lambda k: collectivedefs.BY_KEY[k].label,
    )
    devices.text_input("Devices", key=prefix + "n", max_chars=6, help=f"1 to {n_all}")
    elements.text_input("Elements per device", key=prefix + "m", max_chars=6, help="1 to 64")
    return collectivedefs.BY_KEY[st.session_state[prefix + "c"]]
