"""The collectives of a compiled SPMD program read back as mesh axes: each collective in
compiled HLO with its replica groups (or source-target pairs) turned into the mesh axes they
run over ("all-reduce over model: 2 groups of 4") and the device ids in each group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pmapviz.core.xla import hlo
from pmapviz.features.meshes.meshspecs import Mesh


@dataclass(frozen=True)
class AxisCollective:
    """One collective of a compiled program, its replica groups read back as mesh axes."""

    kind: str  # all-reduce, all-gather, ...
    axes: tuple[str, ...] | None  # mesh axes that vary within each group (None: no match)
    groups: int  # how many groups (collective-permute: how many pairs)
    group_size: int  # devices per group (collective-permute: 2)
    device_groups: tuple[tuple[int, ...], ...]  # device ids, through the mesh's devices
    sentence: str
    line: int  # in the HLO text

    def key(self) -> tuple:
        """(kind, axes, groups, group size): what identifies it, for comparing."""
        return (self.kind, self.axes, self.groups, self.group_size)


def collectives_on_axes(mesh, hlo_text: str) -> list[AxisCollective]:
    """Each collective of a compiled program (``jax.jit(...).lower(...).compile().as_text()``)
    with its replica groups read back as mesh axes. ``mesh``: the JAX mesh the program ran on
    (its ``jaxstartup`` array turns the HLO's device numbers, positions in the mesh, into device
    ids), or a :class:`pmapviz.features.meshes.meshspecs.Mesh` (ids in row-major order)."""
    names, shape, ids = _mesh_layout(mesh)
    out = []
    for c in hlo.parse_hlo(hlo_text).collectives:
        if c.source_target_pairs is not None:
            groups = tuple(tuple(p) for p in c.source_target_pairs)
        else:
            groups = c.replica_groups or ()
        axes = (
            _pair_axes(groups, names, shape)
            if c.source_target_pairs is not None
            else (group_axes(groups, names, shape))
        )
        size = len(groups[0]) if groups else 0
        dev_groups = tuple(tuple(int(ids[k]) for k in g) for g in groups)
        out.append(
            AxisCollective(
                c.kind,
                axes,
                len(groups),
                size,
                dev_groups,
                _sentence(c.kind, axes, groups, dev_groups, names),
                c.line,
            )
        )
    return out


def _mesh_layout(mesh) -> tuple[tuple[str, ...], tuple[int, ...], list[int]]:
    if isinstance(mesh, Mesh):
        return mesh.names, mesh.shape, list(range(mesh.devices))
    grid = np.asarray(mesh.devices)
    return tuple(mesh.axis_names), tuple(grid.shape), [d.id for d in grid.flat]


def group_axes(
    groups: Sequence[Sequence[int]], names: tuple[str, ...], shape: tuple[int, ...]
) -> tuple[str, ...] | None:
    """The mesh axes whose coordinates vary within each group while the others stay fixed;
    None when the groups are not whole lines of the mesh along the same axes (numbers are
    positions in the mesh, row-major)."""
    n = math.prod(shape)
    flat = sorted(d for g in groups for d in g)
    if not groups or flat != list(range(n)):
        return None
    found = None
    for g in groups:
        coords = np.array(np.unravel_index(list(g), shape)).T  # one row per device
        varying = tuple(a for k, a in enumerate(names) if len(set(coords[:, k])) > 1)
        if found is not None and varying != found:
            return None
        found = varying
        if len(g) != math.prod(s for a, s in zip(names, shape, strict=True) if a in varying):
            return None
    return found


def _pair_axes(pairs, names, shape) -> tuple[str, ...] | None:
    n = math.prod(shape)
    if not pairs or any(d >= n for p in pairs for d in p):
        return None
    moved = set()
    for a, b in pairs:
        ca, cb = np.unravel_index(a, shape), np.unravel_index(b, shape)
        moved |= {names[k] for k in range(len(names)) if ca[k] != cb[k]}
    return tuple(a for a in names if a in moved)


def _sentence(kind: str, axes, groups, dev_groups, names) -> str:
    shown = ", ".join("{" + ",".join(map(str, g)) + "}" for g in dev_groups[:4])
    shown += ", ..." if len(dev_groups) > 4 else ""
    if kind == "collective-permute":
        where = f"along {', '.join(axes)}" if axes else "between devices"
        return f"{kind} {where}: {len(groups)} device-to-device sends ({shown})."
    if axes is None:
        return (
            f"{kind} in {len(groups)} groups that are not lines of the mesh "
            f"({', '.join(names)}): {shown}."
        )
    if not axes:
        return f"{kind} within each device alone ({len(groups)} groups of 1): no communication."
    size = len(groups[0])
    many = "all devices" if len(groups) == 1 else "one group per position of the other axes"
    return (
        f"{kind} over {', '.join(axes)}: {len(groups)} group{'s' * (len(groups) > 1)} of "
        f"{size} ({many}): {shown}."
    )
