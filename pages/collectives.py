"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/collectives.py",
    [
        "psum, pmean, pmax, pmin, all_gather, ppermute, psum_scatter, all_to_all, axis_index.",
        "Per device, the value before and after, drawn from the real result.",
        "What each collective costs in bytes sent and received.",
    ],
)
