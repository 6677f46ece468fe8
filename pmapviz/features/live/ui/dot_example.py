"""The seed's worked example at full size: 10,000,000 pairs of 3-vectors, reshaped to one
block per device, ``pmap(vmap(dot))``, reshaped back (the result drawn by
:mod:`pmapviz.features.live.ui.dot_result`, kept in ``dot_result``)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.budgets import memorypool
from pmapviz.core.ui import queue_display, shell
from pmapviz.features.live import dotproduct
from pmapviz.features.live.ui import dot_result


def show(n: int) -> None:
    """The example's explanation, and its section with the Run button and the result."""
    st.header("The seed's worked example, at full size")
    st.markdown(
        f"""
10,000,000 pairs of 3-vectors, split across {n} devices. The mapped axis may not exceed the
device count, so the inputs are **reshaped to ({n}, pairs / {n}, 3)**; `jax.pmap(jax.vmap(dot))`
gives ({n}, pairs / {n}); **reshaping back** gives one dot product per pair, equal to
`jit(vmap(dot))` on one device.
"""
    )
    _example(n)


@shell.fragment  # pressing Run reruns this section only, not the rest of the page
def _example(n: int) -> None:
    limit = dotproduct.max_pairs(memorypool.budget(), n)
    c1, c2 = st.columns([2, 1])
    pairs = c1.number_input(
        f"Pairs (1,000 to {limit:,}, a multiple of {n})",
        min_value=dotproduct.MIN_PAIRS,
        max_value=limit,
        value=min(dotproduct.DEFAULT_PAIRS - dotproduct.DEFAULT_PAIRS % n, limit),
        step=n * 125_000,
        key="dot_pairs",
    )
    c2.write("")
    go = c2.button("Run the example", type="primary", icon=":material/play_arrow:", key="dot_run")
    if go:
        bar = st.progress(0.0, text="Starting")
        try:
            st.session_state["dot_result"] = queue_display.queued(
                lambda on_wait: dotproduct.run_dot(
                    int(pairs),
                    n,
                    progress=lambda text, frac: bar.progress(frac, text=text),
                    limit=limit,
                    on_wait=on_wait,
                )
            )
        except dotproduct.DotError as err:
            st.session_state.pop("dot_result", None)
            st.error(str(err), icon=":material/error:")
    if (res := st.session_state.get("dot_result")) is not None:
        dot_result.show(res)
