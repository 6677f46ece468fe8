"""Hidden communication on the Compiled page: ordinary-looking lines that communicate
without saying so, compiled and timed beside their fixes on request."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import recompute, tables
from pmapviz.features.compiled import hiddencomm


def show(n_all: int) -> None:
    """ "Hidden communication": ordinary-looking lines that communicate without saying so,
    each compiled and timed beside its fix (on request; kept for the session)."""
    st.subheader("Hidden communication")
    st.markdown(
        "Some ordinary-looking lines communicate without saying so. Each is compiled and its "
        "collectives read from the HLO, then timed beside its fix:"
    )
    if st.button("Compile and time them", key="cp_hidden", icon=":material/visibility:"):
        with recompute.working("Compiling and timing..."):
            st.session_state["cp_hidden_rows"] = hiddencomm.hidden_table(n_all)
    if st.session_state.get("cp_hidden_rows"):
        tables.show(st.session_state["cp_hidden_rows"])
