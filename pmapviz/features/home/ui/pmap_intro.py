"""What pmap does and when to use it today: Home's two columns of prose."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.devices import devicefacts, devicewords

WHAT_PMAP_DOES = """
`jax.pmap(f)` runs **the same program on several devices at once** (SPMD: single program,
multiple data):

1. **Compile** `f` once with XLA, for one device's share of the work. No separate `jax.jit`
   is needed: pmap compiles.
2. **Replicate** the compiled program onto every device.
3. **Split** each input along its mapped axis (`in_axes`, 0 by default): device *i* gets slice
   *i*, with that axis removed. An `(8, 128)` input shows `f` a `(128,)` value.
4. **Run** every replica on its own device, in parallel; collectives such as `lax.psum` over
   `axis_name` let replicas exchange values.
5. **Stack** the per-device results along `out_axes` into one global array.

The mapped axis must not be larger than the number of devices: reshape
`(10_000_000, 3)` to `(8, 1_250_000, 3)` and `pmap(vmap(f))` over it.
"""

WHEN_TO_USE_IT = """
- **Learning and legacy code:** pmap makes the per-device view explicit, which is why this
  app is built around it.
- **New code:** since JAX 0.8, pmap is implemented as `jit(shard_map(...))` and is in
  maintenance mode. Write per-device code with **`jax.shard_map`**, or global-view code with
  **`jax.jit` + `NamedSharding`**. Pages here show the same computation in all three.
- **Nested pmap is gone;** `pmap(vmap(f))`, `jit(pmap(f))` and `grad` inside pmap still work.
"""


def show(facts: devicefacts.Facts) -> None:
    """Home's two columns: what pmap does, and when to use it today."""
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.subheader("What pmap does")
        st.markdown(WHAT_PMAP_DOES)
    with right:
        st.subheader("When to use it, today")
        st.markdown(
            WHEN_TO_USE_IT + f"- **Honesty about speed:** {devicewords.say(facts, 'honesty')}"
        )
