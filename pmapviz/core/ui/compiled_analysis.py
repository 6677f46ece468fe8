"""What XLA compiled (a ``programanalysis.Analysis``): the collectives it emitted beside the ring
model, their groups and pairs on the devices, the program at three levels, cost and memory per
variant; and the hidden communication of ordinary-looking lines."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.drawing import gridhtml, permutationfigure, programtables
from pmapviz.core.ui import grids, tables


def show(a, labels: list[str]) -> None:
    """A compiled pmap program (pmapviz.core.running.programanalysis.Analysis): the collectives XLA
    emitted beside the ring model, their groups and pairs on the devices, the program at three
    levels, and
    cost and memory per variant."""
    st.caption(
        f"`{a.target.code}` on {a.target.n} device(s), compiled in {a.compile_s * 1e3:,.0f} ms."
    )
    if a.unparsed:
        st.warning(
            "Some collective lines of the HLO could not be read by this version of "
            "pmapviz; they are shown as text instead of being guessed.",
            icon=":material/help:",
        )
        st.code("\n".join(f"{k}: {t}" for k, t, _ in a.unparsed), language=None)
    if not a.rows:
        st.info(
            "XLA emitted no collective: every device computes on its own block.",
            icon=":material/info:",
        )
    else:
        tables.show(tables.frame(programtables.table_rows(a.rows)))
        for r in a.rows:
            _collective(r.hlo, labels, a.target.n)
    _levels(a)
    _variants(a)


def _collective(c, labels: list[str], n: int) -> None:
    """One emitted collective's pairs (a chart) or replica groups (a grid)."""
    if c.source_target_pairs:
        st.markdown(f"**{c.name}** ({c.kind}): source -> target pairs")
        fig = permutationfigure.permutation_figure(labels[:n], list(c.source_target_pairs))
        st.plotly_chart(fig, config={"displayModeBar": False}, key=f"perm_{c.name}")
    elif c.replica_groups and len(c.replica_groups) > 1:
        st.markdown(f"**{c.name}** ({c.kind}): replica groups")
        grids.show(
            [
                (
                    f"group {k}",
                    [(gridhtml.chips([d]), d, labels[d] if d < len(labels) else str(d)) for d in g],
                )
                for k, g in enumerate(c.replica_groups)
            ],
            f"{c.name} ({c.kind}) replica groups: "
            + "; ".join(" ".join(map(str, g)) for g in c.replica_groups),
        )


def _levels(a) -> None:
    lv = a.levels
    for title, text, lines in (
        ("jaxpr (pmap is jit of shard_map)", lv.jaxpr, lv.jaxpr_lines),
        ("StableHLO, as lowered", lv.stablehlo, lv.stablehlo_lines),
        ("HLO, as compiled by XLA", lv.hlo, lv.hlo_lines),
    ):
        with st.expander(
            f"{title}: {len(text.splitlines()):,} lines, collectives on lines "
            f"{', '.join(map(str, lines)) or 'none'}"
        ):
            marked = "\n".join(
                f"{'>>' if k in lines else '  '} {k:>4} {line}"
                for k, line in enumerate(text.splitlines(), 1)
            )
            st.code(marked[:200_000], language=None)


def _variants(a) -> None:
    st.markdown(
        "**The same computation, four ways** (per device; `bytes accessed` is each "
        "device's LOCAL memory traffic, not network bytes):"
    )
    rows, notes = programtables.variant_table(a)
    tables.show(tables.frame(rows))
    for note in notes:
        st.info(note, icon=":material/info:")
