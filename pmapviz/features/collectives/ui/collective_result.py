"""One collective, run for real (``collectiveruns.CollectiveOutcome``): every device before
and after, where each piece came from or which devices it combines, the communication it
costs, and what XLA compiles it to."""

from __future__ import annotations

import functools

import streamlit as st

from pmapviz.core.devices import deviceset, devicewords, jaxstartup
from pmapviz.core.drawing import permutationfigure
from pmapviz.core.expressions import collectivedefs
from pmapviz.core.ui import compiled_analysis, grids, presenter, queue_display, recompute
from pmapviz.features.collectives import (
    collectiveanalysis,
    collectivechoices,
    collectivegrids,
    collectiveruns,
)


@st.cache_resource(max_entries=64, show_spinner=False)
def _compiled(device_set, key, n, groups, perm):
    """Compiled for ``device_set``'s devices (its name keys the cache)."""
    return collectiveruns.compile_collective(key, n, groups, perm)


def run(
    coll: collectivedefs.Collective,
    n: int,
    m: int,
    kind: str,
    choice: collectivechoices.CollectiveChoice,
) -> collectiveruns.CollectiveOutcome | None:
    """The collective on ``n`` devices, ``m`` elements each, after its turn for memory; None
    when the wait ended without room (said where it waited)."""
    groups = [list(g) for g in choice.groups] if choice.groups else None
    perm = [tuple(p) for p in choice.perm] if choice.perm else None
    cache = functools.partial(_compiled, deviceset.current())  # this set's programs

    def action(on_wait):
        return collectiveruns.run(
            coll.key, n, m, kind, groups=groups, perm=perm, program_cache=cache, on_wait=on_wait
        )

    with recompute.working(f"Running `{coll.key}` on {n} devices..."):
        return queue_display.queued(action)


def show(
    out: collectiveruns.CollectiveOutcome,
    choice: collectivechoices.CollectiveChoice,
    m: int,
    report: jaxstartup.DeviceReport,
    slot,
) -> None:
    """The call on ``out.n`` devices, ``m`` elements each; the picture (in the presenter's
    ``slot``), the warnings, the permutation, the communication, and the compiled program on
    request."""
    coll, n = out.collective, out.n
    labels = report.labels
    st.code(
        f"y = jax.pmap(lambda x: {out.code}, axis_name='i')(x)   # x: ({n}, {m})", language="python"
    )
    with presenter.picture(slot):
        grids.show(collectivegrids.rows(out, labels), collectiveruns.picture_label(out))
    for warning in out.warnings:
        st.warning(warning, icon=":material/warning:")
    if coll.picture == "arrows":
        st.plotly_chart(
            permutationfigure.permutation_figure(labels[:n], out.perm),
            config={"displayModeBar": False},
        )
        idle = sorted(set(range(n)) - {d for _, d in out.perm})
        if idle:
            st.info(
                f"Device(s) {idle} are no pair's destination, so they receive **zeros**.",
                icon=":material/info:",
            )
    sent, recv = out.cost["sent"], out.cost["received"]
    st.markdown(
        f"**Communication**: each device sends about **{sent:,.0f} bytes** and receives about "
        f"**{recv:,.0f} bytes** for {n} devices x {m} float32 elements. Model: {out.model}. "
        + devicewords.say(report.facts, "wire")
    )
    with st.expander("What XLA compiles this to", icon=":material/memory_alt:"):
        if st.toggle("Compile it and read the HLO", key="co_xla"):
            with recompute.working("Lowering and compiling..."):
                analysis = collectiveanalysis.analyse_collective(
                    coll.key, n, m, choice.groups, choice.perm
                )
            compiled_analysis.show(analysis, labels)
