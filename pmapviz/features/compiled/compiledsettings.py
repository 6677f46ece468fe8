"""The Compiled program page's settings: what to compile (src) and, for a collective, the
playground's own settings; its URL schema."""

from __future__ import annotations

from pmapviz.core.base import settings
from pmapviz.features.collectives import collectivechoices

SOURCES = ("explorer", "collective", "training")


def schema(n_devices: int) -> settings.Schema:
    """The Compiled program page: what to compile (src) and, for a collective, the
    playground's own settings (c, n, m, g, p, pairs)."""
    return settings.Schema(
        (
            settings.choice_field("src", "Program", SOURCES, "collective"),
            *collectivechoices.schema(n_devices).fields,
        )
    )
