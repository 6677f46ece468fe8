"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/explorer.py",
    [
        "Pick a function from a catalog (elementwise, x + y, dot, batched dot, matmul, sums, "
        "psum normalisation).",
        "Type shapes, dtypes, in_axes, out_axes and axis_name; mistakes are caught before "
        "anything runs, with a fix.",
        "Diagrams of how every input is split across devices, from real JAX shardings.",
        "A runnable script for the settings, with pmap and with jax.shard_map.",
    ],
)
