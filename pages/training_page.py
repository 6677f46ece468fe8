"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.coming_soon(
    "pages/training_page.py",
    [
        'A small model trained with pmap: sharded batches, replicated parameters.',
        'Gradients all-reduced with pmean; proof that every replica holds the same parameters.',
        'The same training on one device, overlaid.',
    ],
)
