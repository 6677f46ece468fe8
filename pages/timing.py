"""Stub: built by a later issue (see the notice on the page)."""

from pmapviz import ui

ui.ensure_routed()

ui.coming_soon(
    "pages/timing.py",
    [
        "pmap over 1, 2, 4, ... devices against jit(vmap(f)), jit + NamedSharding, "
        "shard_map and numpy.",
        "Compile, transfer and compute measured separately, with the spread of repeated runs.",
        "This machine's measured memory bandwidth as the physical floor.",
    ],
)
