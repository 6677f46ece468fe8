"""Hello, pmap: ``pmap(lambda x: x * 2)`` on ``arange(n)``, run on every device, each device's
x and the x * 2 it computed read from the output's shards."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.devices import deviceset
from pmapviz.core.ui import grids, presenter, recompute
from pmapviz.features.home import pmapdemos


@st.cache_resource(max_entries=4, show_spinner=False)
def _hello_program(device_set: str, n: int):
    return pmapdemos.hello_program(n)


def warm(n: int) -> pmapdemos.HelloResult:
    """Hello-pmap compiled and run once on ``n`` devices, its program kept for Home's first
    visit (a server's warm-up: ``pmapviz.app.warmup``). The run."""
    return pmapdemos.run_hello(_hello_program(deviceset.current(), n), n)


def show(n: int, slot) -> None:
    """The code, the run, and its picture (in the presenter's ``slot``)."""
    st.subheader("Hello, pmap")
    st.code(
        f"x = jnp.arange({n})            # one element per device\n"
        "y = jax.pmap(lambda x: x * 2)(x)\n"
        "for s in y.addressable_shards:  # which device computed what\n"
        "    print(s.device, s.index, s.data)",
        language="python",
    )
    with recompute.working("Compiling and running on every device..."):
        hello = pmapdemos.run_hello(_hello_program(deviceset.current(), n), n)
    with presenter.picture(slot):
        grids.show(
            pmapdemos.hello_rows(hello),
            f"pmap(lambda x: x * 2) on arange({n}): each device's x and the x * 2 it "
            "computed, read from the output's shards",
        )
    st.caption(
        f"Every cell is read from the arrays' `addressable_shards` (device, `index`, `data`). "
        f"`y.sharding` is `{hello.sharding}`: pmap's output is an ordinary `jax.Array` split "
        "over a one-axis mesh."
    )
