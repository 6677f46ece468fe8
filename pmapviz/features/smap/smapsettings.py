"""How the explorer's settings are called as ``jax.smap``: the one-axis mesh (how many devices,
its axis type) and the three things a call can leave out (``jax.set_mesh``, ``in_axes``, the
``jax.reshard`` of each input), each a typed, bounded setting (:data:`schema`).

Explicit axes by default, and why: ``jax.make_mesh`` makes Explicit axes unless told otherwise,
so it is the mesh a learner meets first; with Explicit axes the sharding is part of each
array's type (``jax.typeof(x)`` prints ``float32[8@i,3]``), so the inputs must be
``jax.reshard``-ed to ``P('i')`` before the call and the types show what each device holds.
Auto is one click away: its types carry no sharding, smap splits plain inputs itself, and it
needs ``in_axes`` (it cannot infer them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pmapviz.core.base import settings, valuetext

EXPLICIT, AUTO = "Explicit", "Auto"
MODES = (EXPLICIT, AUTO)
P = "sm_"  # the widgets' key prefix


@dataclass(frozen=True)
class SmapSettings:
    """The smap call: a mesh of ``mesh_devices`` devices (None: the plan's device count) with
    axes of ``mode``, and whether it sets the mesh, gives in_axes and reshards the inputs."""

    mesh_devices: int | None = None
    mode: str = EXPLICIT
    set_mesh: bool = True
    in_axes: bool = True
    reshard: bool = True

    def devices_for(self, n_devices: int) -> int:
        """The mesh's device count for a plan of ``n_devices`` devices."""
        return n_devices if self.mesh_devices is None else self.mesh_devices

    @property
    def explicit(self) -> bool:
        """Whether the mesh axis is Explicit (the inputs are resharded, if ``reshard``)."""
        return self.mode == EXPLICIT

    @property
    def resharded(self) -> bool:
        """Whether the call reshards its inputs (only Explicit axes take a PartitionSpec)."""
        return self.explicit and self.reshard

    def changed(self, changes: Mapping[str, Any]) -> SmapSettings:
        """These settings with ``changes`` (field name -> value)."""
        return replace(self, **dict(changes))

    def mistakes(self) -> tuple[str, ...]:
        """What the call leaves out, in words ('' when nothing)."""
        out = []
        if not self.set_mesh:
            out.append("no jax.set_mesh")
        if not self.in_axes:
            out.append("in_axes left out")
        if self.explicit and not self.reshard:
            out.append("inputs not resharded")
        return tuple(out)


def schema(n_devices: int) -> settings.Schema:
    """The widgets' settings on a server of ``n_devices`` devices (keys without the prefix)."""
    return settings.Schema(
        (
            settings.int_field("mesh", "Mesh devices", 1, max(1, n_devices), max(1, n_devices)),
            settings.choice_field("mode", "Mesh axis type", MODES, EXPLICIT),
            settings.flag_field("setmesh", "Call under jax.set_mesh", True),
            settings.flag_field("inaxes", "Give in_axes", True),
            settings.flag_field("reshard", "jax.reshard the inputs", True),
        )
    )


FIELDS = {"mesh": "mesh_devices", "mode": "mode", "setmesh": "set_mesh", "inaxes": "in_axes"}
FIELDS["reshard"] = "reshard"


def from_texts(texts: Mapping[str, Any], n_devices: int) -> tuple[SmapSettings, list[str]]:
    """Settings from the widgets' values (keys without the prefix), each parsed by
    :func:`schema`; a bad value keeps its default, with one message saying so."""
    values, errors = schema(n_devices).parse(dict(texts))
    chosen = {FIELDS[k]: v for k, v in values.items()}
    return SmapSettings(**chosen), errors


def to_texts(s: SmapSettings, n_devices: int) -> dict[str, Any]:
    """The widgets' values for ``s`` (keys without the prefix): the inverse of
    :func:`from_texts`."""
    return {
        "mesh": s.devices_for(n_devices),
        "mode": s.mode,
        "setmesh": s.set_mesh,
        "inaxes": s.in_axes,
        "reshard": s.reshard,
    }


def describe(s: SmapSettings, n_devices: int) -> str:
    """The settings in one line: 'a mesh of 8 devices, Explicit; no jax.set_mesh'."""
    m = s.devices_for(n_devices)
    said = f"a mesh of {valuetext.counted(m, 'device')}, {s.mode} axis"
    return said + ("; " + ", ".join(s.mistakes()) if s.mistakes() else "")
