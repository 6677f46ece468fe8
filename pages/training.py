"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/training.py",
    [
        "A small model trained with pmap: sharded batches, replicated parameters.",
        "Gradients all-reduced with pmean; proof that every replica holds the same parameters.",
        "The same training on one device, overlaid.",
    ],
)
