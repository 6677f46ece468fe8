"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/cluster.py",
    [
        "Several processes joined with jax.distributed on this machine.",
        "Local versus global devices, and collectives across processes.",
    ],
)
