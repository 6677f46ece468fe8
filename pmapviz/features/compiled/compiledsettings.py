"""The Compiled program page's settings: what to compile (src), for a collective the
playground's own settings, and where to compile it (this machine or a TPU slice); its URL
schema."""

from __future__ import annotations

from pmapviz.core.base import settings
from pmapviz.core.pods import podtarget
from pmapviz.features.collectives import collectivechoices

SOURCES = ("explorer", "collective", "training")


def schema(n_devices: int) -> settings.Schema:
    """The Compiled program page: what to compile (src), for a collective the playground's
    own settings (c, n, m, g, p, pairs), and pod (empty: this machine, else a TPU slice or
    several)."""
    return settings.Schema(
        (
            settings.choice_field("src", "Program", SOURCES, "collective"),
            *collectivechoices.schema(n_devices).fields,
            podtarget.pod_field(multislice=True),
        )
    )
