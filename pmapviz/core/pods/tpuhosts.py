"""Hosts as Cloud rents them: how many chips a host (VM) holds, per TPU generation, as libtpu's
``chips_per_host_bounds`` and Cloud's machine type, and the words of a target that asks for them
(``v5e:2x4 on 8-chip hosts``). Pure data (no JAX); :mod:`tpuchips` reads a target with it.

Sources, read 2026-12-07: the v5e page (``docs.cloud.google.com/tpu/docs/v5e``, "VM types":
``ct5lp-hightpu-1t``, ``-4t`` and ``-8t``, VMs of 1, 4 or 8 chips; its slice table counts 8-chip
hosts: 4x4 on 2 hosts, 16x16 on 32); the v6e page (``/tpu/docs/v6e``: 8 chips a host) with
GKE's machine types ``ct6e-standard-4t`` and ``-8t``; the v5p page (2x2x1: 4 chips on 1 host)
and the v4 page, with GKE's ``ct5p-hightpu-4t`` and ``ct4p-hightpu-4t``. The GKE names were
checked on 2026-12-08 against public GKE tooling that provisions them: xpk's system table
(``v4-8``: topology 2x2x1, ``tpu-v4-podslice``, ``ct4p-hightpu-4t``, 4 chips a VM), GKE node-pool
commands (``--machine-type=ct5p-hightpu-4t --tpu-topology=8x8x8 --num-nodes=128``: 4 chips a
node) and v6e serving recipes (``ct6e-standard-8t`` for 2x4 on one node, ``ct6e-standard-4t``
for 4 chips). libtpu 0.0.42 laid every bounds that divides the slice (1-chip hosts,
8-chip v5p hosts too) and refused the others ("not divisible by the given chips_per_host_bounds");
pmapviz offers what Cloud rents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmapviz.core.base import valueparse
from pmapviz.core.base.valuetext import quote


@dataclass(frozen=True)
class HostLayout:
    """A host (VM) as Cloud rents it: how many chips, their block in the slice (libtpu's
    ``chips_per_host_bounds``), and Cloud's machine type for it."""

    chips: int
    bounds: tuple[int, int, int]
    machine_type: str

    def block(self, dims: int) -> str:
        """One host's block of chips, a slice shape of ``dims`` axes: '2x4' ('2x2x1' in 3-D)."""
        return "x".join(map(str, self.bounds[:dims]))


# per generation, libtpu's default first
HOST_LAYOUTS = {
    "v5e": (
        HostLayout(4, (2, 2, 1), "ct5lp-hightpu-4t"),
        HostLayout(8, (2, 4, 1), "ct5lp-hightpu-8t"),
    ),
    "v6e": (
        HostLayout(4, (2, 2, 1), "ct6e-standard-4t"),
        HostLayout(8, (2, 4, 1), "ct6e-standard-8t"),
    ),
    "v5p": (HostLayout(4, (2, 2, 1), "ct5p-hightpu-4t"),),
    "v4": (HostLayout(4, (2, 2, 1), "ct4p-hightpu-4t"),),
}
_HOST_CHIPS = re.compile(r"^([0-9]{1,6})(?:[- ]chips?[- ]hosts?)?$")


def layout(generation: str, chips: int) -> HostLayout:
    """The layout of ``chips``-chip hosts (0, or none such: libtpu's default)."""
    layouts = HOST_LAYOUTS[generation]
    return next((h for h in layouts if h.chips == chips), layouts[0])


def divides(shape: tuple[int, ...], host: HostLayout) -> bool:
    """Whether a slice of ``shape`` divides into such hosts, as libtpu asks."""
    return all(n % b == 0 for n, b in zip((*shape, 1, 1)[:3], host.bounds, strict=True))


def choices(generation: str, shape: tuple[int, ...]) -> tuple[HostLayout, ...]:
    """The host layouts a slice of ``shape`` can be rented as (libtpu's default first)."""
    return tuple(h for h in HOST_LAYOUTS[generation] if divides(shape, h))


def read(generation: str, title: str, shape: tuple[int, ...], hosts: str, said: str) -> int:
    """The chips a host of ``hosts`` ('8-chip hosts', '8' or Cloud's 'ct5lp-hightpu-8t') holds,
    0 for libtpu's default; or a SettingError, ``said`` naming the target as typed."""
    layouts = HOST_LAYOUTS[generation]
    hosts = hosts.strip()
    m = _HOST_CHIPS.match(hosts)
    chips = int(m[1]) if m else next((h.chips for h in layouts if h.machine_type == hosts), None)
    host = next((h for h in layouts if h.chips == chips), None)
    if host is None:
        raise valueparse.SettingError(
            f"{said}: {quote(hosts[:30])} is not a host {title} is rented as; "
            f"{_fix(generation, title, len(shape))}."
        )
    if not divides(shape, host):
        raise valueparse.SettingError(
            f"{said}: {generation}:{'x'.join(map(str, shape))} does not divide into "
            f"{host.chips}-chip hosts ({host.block(len(shape))} chips each); "
            f"{_fix(generation, title, len(shape))}."
        )
    return 0 if host is layouts[0] else host.chips


def _fix(generation: str, title: str, dims: int) -> str:
    """'TPU v5e is rented as 4-chip hosts (ct5lp-hightpu-4t) or 8-chip hosts
    (ct5lp-hightpu-8t), e.g. v5e:2x4 on 8-chip hosts'."""
    layouts = HOST_LAYOUTS[generation]
    named = " or ".join(f"{h.chips}-chip hosts ({h.machine_type})" for h in layouts)
    last = layouts[-1]
    example = f"{generation}:{last.block(dims)} on {last.chips}-chip hosts"
    return f"{title} is rented as {named}, e.g. {example}"
