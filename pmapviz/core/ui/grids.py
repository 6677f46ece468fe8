"""Device-aligned grids on a page (the HTML itself: :mod:`pmapviz.core.drawing.gridhtml`)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.devices import jaxstartup
from pmapviz.core.drawing.gridhtml import Rows, block_grid, device_rows


def show(rows: Rows, label: str) -> None:
    """Draw :func:`block_grid` rows, a picture that ``label`` describes."""
    st.markdown(block_grid(rows, label), unsafe_allow_html=True)


def device_set(report: jaxstartup.DeviceReport, per_row: int = 8) -> None:
    """Every device in mesh order, rows of ``per_row``, labelled and coloured from JAX."""
    show(*device_rows(report.facts, per_row))
