"""What pmap does and when to use it today: Home's two columns of prose."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.planning import seedpairs

WHAT_PMAP_DOES = """
`jax.pmap(f)` runs **the same program on several devices at once** (SPMD: single program,
multiple data):

1. **Compile** `f` once with XLA, for one device's share of the work. No separate `jax.jit`
   is needed: pmap compiles.
2. **Replicate** the compiled program onto every device.
3. **Split** each input along its mapped axis (`in_axes`, 0 by default): device *i* gets slice
   *i*, with that axis removed. An input of shape `({n}, 128)` shows `f` a
   `(128,)` value.
4. **Run** every replica on its own device, in parallel; collectives such as `lax.psum` over
   `axis_name` let replicas exchange values.
5. **Stack** the per-device results along `out_axes` into one global array.

The mapped axis must not be larger than the number of devices ({n} here). For the seed's
10,000,000 pairs of 3-vectors: {reshape}, and `pmap(vmap(f))` over it.
"""

WHEN_TO_USE_IT = """
- **Learning and legacy code:** pmap makes the per-device view explicit, which is why this
  app is built around it.
- **New code:** since JAX 0.8, pmap is implemented as `jit(shard_map(...))` and is in
  maintenance mode. Write per-device code with **`jax.shard_map`**, or global-view code with
  **`jax.jit` + `NamedSharding`**. Pages here show the same computation in all three.
- **Nested pmap is gone;** `pmap(vmap(f))`, `jit(pmap(f))` and `grad` inside pmap still work.
"""


def what_pmap_does(n: int) -> str:
    """The left column's text on ``n`` devices: its example input and the seed's reshape in
    this count's numbers (:func:`pmapviz.core.planning.seedpairs.split`)."""
    return WHAT_PMAP_DOES.format(n=n, reshape=seedpairs.split(n).reshape_words())


def show(facts: devicefacts.Facts) -> None:
    """Home's two columns: what pmap does (on the page's devices, ``facts.devices``: the count
    the page says), and when to use it today."""
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.subheader("What pmap does")
        st.markdown(what_pmap_does(len(facts.devices)))
    with right:
        st.subheader("When to use it, today")
        st.markdown(
            WHEN_TO_USE_IT + f"- **Honesty about speed:** {devicewords.say(facts, 'honesty')}"
        )
