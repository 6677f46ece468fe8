"""The typed program on the page: the grid first (the presenter's picture: a column per mode,
a row per equation, every type coloured by the mesh axes it is split over), then what the
colours and marks mean, JAX's words where a mode refuses the program, and how each mode is
written. Only the open modes are compiled, each once (kept for the next run)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import presenter, recompute
from pmapviz.features.types import typedhtml, typedprogram
from pmapviz.features.types.typedmodes import MODES, TITLES
from pmapviz.features.types.typedprogram import TypedView
from pmapviz.features.types.typedsources import TypedSource


def views(source: TypedSource, modes: list[str]) -> dict[str, TypedView]:
    """The open modes, typed and compiled (each once: kept for later runs)."""
    names = ", ".join(TITLES[m] for m in modes)
    with recompute.working(f"Tracing and compiling {names}..."):
        return {m: typedprogram.typed(source, m) for m in modes}


def show(source: TypedSource, modes: list[str], slot) -> dict[str, TypedView]:
    """The grid (in the presenter's slot), the legend, each mode's refusal and code."""
    typed = views(source, modes)
    columns = {m: typed.get(m) for m in MODES}
    label = typedhtml.describe(typed, source.label)
    with presenter.picture(slot):
        st.html(typedhtml.grid_html(columns, source.mesh, label))
    st.caption(f"The program: {source.label}")
    for mode, view in typed.items():
        if view.error:
            st.error(
                f"**{TITLES[mode]}**: JAX refused this mode while it "
                f"{'traced' if view.stage == 'trace' else 'compiled'} it; in its own words:",
                icon=":material/block:",
            )
            st.code(view.error, language=None, wrap_lines=True)
            if view.error.startswith("AssertionError"):
                st.caption(
                    "An assertion inside JAX, not a message written for users: this JAX "
                    "version cannot lower the program in this mode. The other modes write "
                    "the same computation."
                )
    if "auto" in typed:
        st.info(
            "Auto's types carry no sharding: JAX prints the same type however the compiler "
            "splits the value. What XLA chose is read from the compiled module (after its "
            "sharding propagation) and shown under each type as a PartitionSpec.",
            icon=":material/info:",
        )
    st.html(typedhtml.legend_html(source.mesh))
    with st.expander("How each mode is written"):
        for mode, view in typed.items():
            st.markdown(f"**{TITLES[mode]}** ({view.mesh_words})")
            st.code(view.code, language="python", wrap_lines=True)
    return typed
