"""Tables, drawn once pandas is fully imported: Streamlit imports it inside, and two sessions
importing it at once raced (:mod:`pmapviz.core.base.heavyimports`). Every table of the app goes
through here."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import heavyimports


def show(data) -> None:
    """``st.dataframe`` without the index, full width."""
    heavyimports.pandas()
    st.dataframe(data, hide_index=True, width="stretch")


def static(data) -> None:
    """``st.table``: every row at once, nothing to scroll or sort."""
    heavyimports.pandas()
    st.table(data)


def frame(rows):
    """A pandas DataFrame of ``rows`` (for :func:`show`), pandas imported once as above."""
    return heavyimports.pandas().DataFrame(rows)
