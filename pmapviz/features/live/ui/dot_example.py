"""The seed's worked example at full size: 10,000,000 pairs of 3-vectors (the largest multiple
of the device count up to that, :mod:`pmapviz.core.planning.seedpairs`), reshaped to one block
per device, ``pmap(vmap(dot))``, reshaped back (the result drawn by
:mod:`pmapviz.features.live.ui.dot_result`, kept in ``dot_result``)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import valuetext
from pmapviz.core.budgets import memorypool
from pmapviz.core.planning import seedpairs
from pmapviz.core.ui import queue_display, recompute, shared_run, shell
from pmapviz.features.live import dotproduct
from pmapviz.features.live.ui import dot_result


def show(n: int) -> None:
    """The example's explanation, and its section with the Run button and the result."""
    st.header("The seed's worked example, at full size")
    seed = seedpairs.split(n, dotproduct.DEFAULT_PAIRS)
    st.markdown(
        f"Pairs of 3-vectors, split across {valuetext.counted(n, 'device')}. The mapped axis "
        f"may not exceed the device count, so the inputs are **reshaped to ({n}, pairs / {n}, "
        f"3)**; `jax.pmap(jax.vmap(dot))` gives ({n}, pairs / {n}); **reshaping back** gives "
        "one dot product per pair, equal to `jit(vmap(dot))` on one device. For the seed's "
        f"{seed.pairs:,} pairs: {seed.reshape_words()}."
    )
    _example(n, seed)


@shell.fragment  # pressing Run reruns this section only, not the rest of the page
def _example(n: int, seed: seedpairs.SeedSplit) -> None:
    limit = dotproduct.max_pairs(memorypool.budget(), n)
    if limit < seed.used:  # the box cannot start at the seed's size: say so, in its numbers
        st.caption(
            f"This server's memory budget takes at most {limit:,} pairs on {n} devices, so "
            f"the box starts there, not at the seed's {seed.used:,}."
        )
    c1, c2 = st.columns([2, 1])
    pairs = c1.number_input(
        f"Pairs ({dotproduct.MIN_PAIRS:,} to {limit:,}, a multiple of {n})",
        min_value=dotproduct.MIN_PAIRS,
        max_value=limit,
        value=min(seed.used, limit),
        step=n * 125_000,
        key="dot_pairs",
    )
    c2.write("")
    go = c2.button("Run the example", type="primary", icon=":material/play_arrow:", key="dot_run")
    key = shared_run.key("live/dot", {"pairs": int(pairs)}, n)
    if go:
        _run(key, int(pairs), n, limit)
    elif (entry := shared_run.kept(key)) is not None:  # anyone's run of these pairs, kept
        st.session_state[SHOWN] = entry
    if (entry := st.session_state.get(SHOWN)) is not None:
        shared_run.caption(entry)
        dot_result.show(entry.value)


SHOWN = "_dot_shared"  # the shared result this section shows (its value: ``dot_result``)


def _run(key, pairs: int, n: int, limit: int) -> None:
    """Run the example for ``key`` (or take the same run kept or under way, shared with the
    room: :mod:`pmapviz.core.ui.shared_run`); its result is this section's from now on."""
    bar = st.progress(0.0, text="Starting")
    try:
        with recompute.working(f"Running the dot product of {pairs:,} pairs..."):
            entry = queue_display.queued(
                lambda on_wait: shared_run.run(
                    key,
                    lambda: dotproduct.run_dot(
                        pairs,
                        n,
                        progress=lambda text, frac: bar.progress(frac, text=text),
                        limit=limit,
                        on_wait=on_wait,
                    ),
                    on_wait,
                )
            )
    except dotproduct.DotError as err:
        entry = None
        st.error(str(err), icon=":material/error:")
    bar.empty()
    st.session_state[SHOWN] = entry
    st.session_state["dot_result"] = None if entry is None else entry.value
