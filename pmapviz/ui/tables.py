"""Tables, drawn once pandas is fully imported: Streamlit imports it inside, and two sessions
importing it at once raced (:mod:`pmapviz.warmup`). Every table of the app goes through here."""

from __future__ import annotations

import streamlit as st

from pmapviz import warmup


def show(data) -> None:
    """``st.dataframe`` without the index, full width."""
    warmup.pandas()
    st.dataframe(data, hide_index=True, width="stretch")


def static(data) -> None:
    """``st.table``: every row at once, nothing to scroll or sort."""
    warmup.pandas()
    st.table(data)


def frame(rows):
    """A pandas DataFrame of ``rows`` (for :func:`show`), pandas imported once as above."""
    return warmup.pandas().DataFrame(rows)
