"""Where a page compiles: this machine, or a TPU slice named in the link (``?pod=v5e:4x4``).

The one field every page with a target shares (:func:`pod_field`), so each page's schema holds
it beside its own settings and one codec reads and writes it. Empty means this machine.
"""

from __future__ import annotations

from dataclasses import replace

from pmapviz.core.base import settings, valueparse
from pmapviz.core.pods import tpuchips

KEY = "pod"
HERE = ""  # the field's value for "this machine"
HERE_LABEL = "this machine"
# several slices over the data-center network, offered where a page compiles for them
MULTISLICE = ("2 x v5e:2x4", "2 x v5e:4x4", "4 x v5e:4x4", "2 x v5e:8x16")


def pod_field(default: str = HERE, multislice: bool = False) -> settings.Field:
    """``pod``: empty (this machine) or a topology name such as ``v5e:4x4``, with the hosts as
    rented where they are not libtpu's default (``v5e:2x4 on 8-chip hosts``); with
    ``multislice``, also several slices over the data-center network (``2 x v5e:4x4``)."""

    def check(text: str, name: str) -> str:
        raw = text.strip()
        return raw if raw == HERE else tpuchips.parse_topology(raw, name, multislice).name

    field = settings.text_field(
        KEY, "the target", default, check, max_len=tpuchips.MAX_TARGET_LEN, typed=True
    )
    return replace(field, default_words=HERE_LABEL if default == HERE else "")


def choices() -> tuple[str, ...]:
    """The target list: this machine first, then every offered slice."""
    return (HERE, *tpuchips.OFFERED)


def label(value: str) -> str:
    """'this machine', 'TPU v5e 4x4 (16 chips)', for Cloud's name in a link 'TPU v5e 4x4
    (16 chips; v5litepod-16 = v5e:4x4)', for several slices '2 x TPU v5e 4x4 (32 chips in 2
    slices over the data-center network)', with hosts as rented 'TPU v5e 2x4 (8 chips; 8-chip
    hosts, ct5lp-hightpu-8t)'."""
    if value == HERE:
        return HERE_LABEL
    try:
        topo = tpuchips.parse_topology(value, multislice=True)
    except valueparse.SettingError:  # not a topology name: shown as it is
        return str(value)
    shape = "x".join(map(str, topo.shape))
    hosts = (
        f"; {topo.host_chips}-chip hosts, {topo.host_layout.machine_type}"
        if topo.host_chips
        else ""
    )
    if topo.slices > 1:
        return (
            f"{topo.slices} x {topo.generation.title} {shape} ({topo.total_chips} chips in "
            f"{topo.slices} slices over the data-center network{hosts})"
        )
    cloud = tpuchips.cloud_words(value)
    return (
        f"{topo.generation.title} {shape} ({topo.chips} chips{f'; {cloud}' if cloud else ''}"
        f"{hosts})"
    )


def pmap_words(value: str) -> str:
    """What a page's ``jax.pmap`` is on the target ``value`` (a slice or several), in a sentence
    or three, as markdown."""
    topo = tpuchips.parse_topology(value, multislice=True)
    said = (
        f"The same `jax.pmap`, over the devices of {label(value)}: the mapped axis becomes "
        "their count, one block a device."
    )
    if topo.slices > 1:
        said += (
            f" Its one axis runs over all {topo.slices} slices, so the compiler splits each "
            "collective between ICI and the data-center network (DCN): the note below says in "
            "which order the slices' devices are mapped, and what the program is on a mesh."
        )
    return said + " The TPU compiler (libtpu) compiles it here; **nothing runs**."
