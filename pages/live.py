"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/live.py",
    [
        "Run pmap on real values and see each device's input and output block.",
        "Check the result against jit(vmap(f)) on one device.",
        "The seed's 10,000,000-pair dot product, reshaped to (8, 1_250_000, 3), at full size.",
    ],
)
