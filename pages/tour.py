"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/tour.py",
    [
        "A step-by-step workshop path through pmap, each step with a live demo.",
        "Presenter mode and share links.",
    ],
)
