"""Where ``NamedSharding(mesh, spec)`` puts each block of an array: which device (at which
mesh coordinates) holds which block.

``place(mesh, shape, spec)`` reads it from ``NamedSharding(...).devices_indices_map`` on this
process's devices; for a mesh bigger than this process (planning for N devices) it gives the
same placement by index arithmetic, checked against JAX in tests for every mesh this process
can build. ``jax_mesh`` makes the JAX mesh of a :class:`pmapviz.features.meshes.meshspecs.Mesh`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pmapviz.core.devices import devicefacts
from pmapviz.features.meshes.meshspecs import Entry, Mesh, axes_of


@dataclass(frozen=True)
class MeshBlock:
    """One device's block of an array: the device, its mesh coordinates and its index."""

    device: int  # the device's id
    coords: tuple[int, ...]  # its place on the mesh
    index: tuple[tuple[int, int], ...]  # [start, stop) of each dimension


@dataclass(frozen=True)
class Placement:
    """Where an array goes under ``NamedSharding(mesh, spec)``: each device's block, the block
    shape, and the axes it is replicated over."""

    mesh: Mesh
    shape: tuple[int, ...]
    spec: tuple[Entry, ...]
    local_shape: tuple[int, ...]
    replicated_over: tuple[str, ...]  # mesh axes no dimension is split over
    blocks: tuple[MeshBlock, ...]  # one per device, in mesh order
    from_jax: bool  # read from NamedSharding (else: planned for more devices than this has)

    def to_dict(self) -> dict:
        """The CLI's JSON for one argument (tuples of axes as lists)."""
        devices = [
            {"id": b.device, "coords": list(b.coords), "index": [list(i) for i in b.index]}
            for b in self.blocks
        ]
        return {
            "shape": list(self.shape),
            "spec": [list(e) if isinstance(e, tuple) else e for e in self.spec],
            "local_shape": list(self.local_shape),
            "replicated_over": list(self.replicated_over),
            "devices": devices,
        }


def local_shape(mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...]) -> tuple[int, ...]:
    """Each device's block of an array of ``shape`` placed by ``spec`` (which must divide it)."""
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    return tuple(
        d // math.prod(mesh.size[a] for a in axes_of(e)) for d, e in zip(shape, full, strict=True)
    )


def place(
    mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...], devices: list | None = None
) -> Placement:
    """Where ``NamedSharding(mesh, spec)`` puts each block of an array of ``shape``; the spec
    must have no problems. ``jaxstartup``: JAX devices for the mesh (default: this process's
    first ones, when it has enough); without enough, the same placement is planned."""
    used = {a for e in spec for a in axes_of(e)}
    replicated = tuple(n for n in mesh.names if n not in used)
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    local = local_shape(mesh, shape, spec)
    jax_devices = devices if devices is not None else _local_devices(mesh.devices)
    if jax_devices is not None:
        blocks = _blocks_from_jax(mesh, shape, spec, jax_devices)
    else:
        blocks = _blocks_planned(mesh, shape, full)
    return Placement(
        mesh, tuple(shape), tuple(spec), local, replicated, blocks, jax_devices is not None
    )


def device_grid(mesh: Mesh, blocks: tuple[MeshBlock, ...]) -> list:
    """The devices' ids laid out as the mesh (nested lists), from a placement's blocks."""
    flat = [b.device for b in blocks]

    def nest(items: list, shape: tuple[int, ...]) -> list:
        if len(shape) <= 1:
            return items
        step = len(items) // shape[0]
        return [nest(items[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]

    return nest(flat, mesh.shape)


def _local_devices(n: int) -> list | None:
    """The first ``n`` devices of the current device set, or None when it has fewer."""
    devs = devicefacts.local_devices_for_work()
    return devs[:n] if len(devs) >= n else None


def jax_mesh(mesh: Mesh, devices: list):
    """The JAX mesh on ``devices`` with the mesh's axis types (default: Explicit, as
    ``jax.make_mesh`` makes them); a Manual axis is Explicit here (``jax.set_mesh`` refuses a
    Manual axis: ``jax.shard_map`` makes an axis Manual inside it)."""
    import jax

    return jax.make_mesh(
        mesh.shape,
        mesh.names,
        devices=devices[: mesh.devices],
        axis_types=jax_axis_types(mesh.axis_types),
    )


def jax_axis_types(types: tuple[str, ...]) -> tuple:
    """``jax.sharding.AxisType`` per axis for a mesh outside ``jax.shard_map``: Manual as
    Explicit (see :func:`jax_mesh`)."""
    from jax.sharding import AxisType

    named = {"auto": AxisType.Auto, "explicit": AxisType.Explicit, "manual": AxisType.Explicit}
    return tuple(named[t] for t in types)


def _blocks_from_jax(mesh: Mesh, shape, spec, devices: list) -> tuple[MeshBlock, ...]:
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    m = jax_mesh(mesh, devices)
    where = NamedSharding(m, PartitionSpec(*spec)).devices_indices_map(tuple(shape))
    grid = np.asarray(m.devices)
    out = []
    for coords in np.ndindex(*mesh.shape):
        dev = grid[coords]
        index = tuple(s.indices(n)[:2] for s, n in zip(where[dev], shape, strict=True))
        out.append(MeshBlock(dev.id, tuple(int(c) for c in coords), index))
    return tuple(out)


def _blocks_planned(mesh: Mesh, shape, full) -> tuple[MeshBlock, ...]:
    """Index arithmetic for a mesh bigger than this process: dimension d split over axes
    (a1, ..., ak) puts block number sum(coord[aj] * prod(size[a(j+1)..ak])) (a1 the most
    significant, as JAX does) on the device at those coordinates; ids in row-major order."""
    out = []
    for dev, coords in enumerate(_ndindex(mesh.shape)):
        at = dict(zip(mesh.names, coords, strict=True))
        index = []
        for d, e in zip(shape, full, strict=True):
            k, parts = 0, 1
            for a in axes_of(e):
                k, parts = k * mesh.size[a] + at[a], parts * mesh.size[a]
            block = d // parts
            index.append((k * block, (k + 1) * block))
        out.append(MeshBlock(dev, coords, tuple(index)))
    return tuple(out)


def _ndindex(shape: tuple[int, ...]):
    if not shape:
        yield ()
        return
    for head in range(shape[0]):
        for rest in _ndindex(shape[1:]):
            yield (head, *rest)
