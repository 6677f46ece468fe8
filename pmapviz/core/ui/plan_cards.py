"""A valid plan drawn: one card per array (every input leaf, then every output leaf), split
as JAX splits it, and a table of what each device holds and computes."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.drawing import arrayhtml
from pmapviz.core.planning import pmapplacement
from pmapviz.core.planning.planning import Plan
from pmapviz.core.ui import tables

MAIN_WIDTH_PX = 820  # the wide main column beside the sidebar on a 1280-pixel screen
HTML_TABLE_ROWS = 64  # up to this many rows: a static HTML table (one light element per edit)


def array_cards(cards: list[tuple], per_row: int, title: str, intro: str) -> None:
    """A section with one card per array (every leaf of a pytree argument, every output leaf):
    its name, shape, dtype, how it is split, and its block diagram; rows of ``per_row``. The
    heading, the ``intro`` line and every card are ONE ``st.html`` element (an edit redraws
    them all; each separate element costs the browser milliseconds). ``cards``: ``(layout,
    axis, is_output)``. Not cached: drawing them takes well under a millisecond, less than
    hashing them for a cache would."""
    cards_html = arrayhtml.cards_html(cards, per_row, MAIN_WIDTH_PX // per_row - 16)
    st.html(arrayhtml.section_html(title, cards_html, intro))


def show(plan: Plan, title: str, intro: str) -> tuple[list, list]:
    """The arrays of a valid plan as cards (every input leaf, then every output leaf), split
    as JAX splits them; returns the layouts (inputs, outputs)."""
    inputs, outputs = pmapplacement.plan_layouts(plan)
    cards = [
        *((lay, ax, False) for lay, ax in zip(inputs, plan.leaf_axes, strict=True)),
        *((lay, ax, True) for lay, ax in zip(outputs, plan.out_leaf_axes, strict=True)),
    ]
    array_cards(cards, min(4, len(cards)), title, intro)
    return inputs, outputs


def device_table(plan: Plan, inputs: list, outputs: list, title: str) -> None:
    """A section with one row per device of a valid plan (``pmapplacement.device_rows``). Up to
    ``HTML_TABLE_ROWS`` rows: its heading and a static HTML table as one element, each device
    marked with its colour (a dataframe, redrawn on an edit, cost the browser ~35 ms); more
    (a plan for a bigger machine): a heading and a scrollable, sortable dataframe."""
    rows = pmapplacement.device_rows(plan, inputs, outputs)
    positions = [p.position for p in pmapplacement.used_pieces(plan, inputs, outputs)]
    if len(rows) <= HTML_TABLE_ROWS:
        st.html(arrayhtml.section_html(title, arrayhtml.table_html(rows, title, positions)))
    else:
        st.subheader(title)
        tables.show(rows)


def intro(elsewhere: bool) -> str:
    """The explorer's line above its cards: where the blocks come from (JAX's shardings on this
    server, or index arithmetic for a planned bigger machine)."""
    return (
        "Blocks are coloured by device (the same colours on every page) and labelled; hover for "
        "the exact slice. "
        + (
            "Computed by index arithmetic for the planned devices (tested against JAX's "
            "`devices_indices_map` on real ones); more than 32 blocks are drawn as groups."
            if elsewhere
            else "Read from JAX's `NamedSharding.devices_indices_map`, the sharding "
            "pmap gives its arrays; no array is allocated."
        )
        + " Axis lengths are drawn on a log scale."
    )
