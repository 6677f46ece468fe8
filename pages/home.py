"""Home: what pmap does, the device set, and a live hello-pmap."""

import streamlit as st

from pmapviz import devicefacts, programs, ui

ui.ensure_routed()

ui.set_url({})
ui.share_link("home")
report = ui.device_report()
n = report.count

st.title("pmapviz: see what `jax.pmap` does")
slot = ui.picture_slot()  # presenter mode: the live hello-pmap first
st.markdown(
    f"This server has **{n} {report.platform} devices**. Every diagram, shape and number in "
    "this app comes from real JAX arrays on them."
)

left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader("What pmap does")
    st.markdown(
        """
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
    )
with right:
    st.subheader("When to use it, today")
    st.markdown(
        """
- **Learning and legacy code:** pmap makes the per-device view explicit, which is why this
  app is built around it.
- **New code:** since JAX 0.8, pmap is implemented as `jit(shard_map(...))` and is in
  maintenance mode. Write per-device code with **`jax.shard_map`**, or global-view code with
  **`jax.jit` + `NamedSharding`**. Pages here show the same computation in all three.
- **Nested pmap is gone;** `pmap(vmap(f))`, `jit(pmap(f))` and `grad` inside pmap still work.
"""
        + f"- **Honesty about speed:** {devicefacts.say(report.facts, 'honesty')}"
    )

st.subheader("Your device set")
st.caption(
    "In mesh order, from `jax.devices()`. Each device keeps its colour on every page; "
    "hover a block for details."
)
ui.device_set_grid(report)


@st.cache_resource(max_entries=4, show_spinner=False)
def _hello_program():
    return programs.hello_program()


st.subheader("Hello, pmap")
st.code(
    f"x = jnp.arange({n})            # one element per device\n"
    "y = jax.pmap(lambda x: x * 2)(x)\n"
    "for s in y.addressable_shards:  # which device computed what\n"
    "    print(s.device, s.index, s.data)",
    language="python",
)
with st.spinner("Compiling and running on every device..."):
    hello = programs.run_hello(_hello_program(), n)


with ui.picture(slot):
    ui.grid(programs.hello_rows(hello), f"pmap(lambda x: x * 2) on arange({n}): each "
            "device's x and the x * 2 it computed, read from the output's shards")  # fmt: skip
st.caption(
    f"Every cell is read from the arrays' `addressable_shards` (device, `index`, `data`). "
    f"`y.sharding` is `{hello.sharding}`: pmap's output is an ordinary `jax.Array` split "
    "over a one-axis mesh."
)

st.subheader("Pages")
cols = st.columns(2)
for k, info in enumerate(ui.PAGES[1:]):
    with cols[k % 2]:
        st.page_link(info.path, label=info.title, icon=info.icon)
        st.caption(info.blurb)
