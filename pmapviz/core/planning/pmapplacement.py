"""Which device holds which slice: read from JAX's own shardings, never hand-computed.

pmap places a mapped axis of size k on the first k devices, one index each, and its outputs
carry ``NamedSharding(Mesh(devices[:k], axis), P(... axis at out_axes ...))``. This module
builds exactly that sharding and asks it ``devices_indices_map(shape)``, which works on the
global shape alone: no array is allocated, so a (8, 1_250_000, 3) layout costs nothing.
Tests check it against the ``addressable_shards`` of real pmap inputs and outputs.

Planning for a bigger machine than this one (more devices than the process has) cannot build a real
mesh, so there the same placement is computed by index arithmetic (:func:`pmap_indices`: device k
holds index k of the split axis, everything else whole), with hypothetical devices named ``device
k``; tests check that arithmetic against ``devices_indices_map`` for every count this process can
build.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmapviz.core.base import pytrees
from pmapviz.core.base.valuetext import fmt_shape, fmt_tree
from pmapviz.core.devices import devicefacts
from pmapviz.core.planning.planning import Plan


def index_text(index: tuple) -> str:
    """(slice(0, 2), slice(None)) -> '[0:2, :]', as you would index the global array."""

    def one(s) -> str:
        if isinstance(s, slice):
            start = "" if s.start is None else s.start
            stop = "" if s.stop is None else s.stop
            return f"{start}:{stop}"
        return str(s)

    return "[" + ", ".join(one(s) for s in index) + "]"


@dataclass(frozen=True)
class Piece:
    """One device's part of an array: the device, its place in the mesh, the index it holds."""

    position: int  # the device's place in the mesh (its colour)
    device: str  # "cpu:3"
    index: tuple  # the global index this device holds

    @property
    def index_text(self) -> str:
        """The index as you would write it on the global array: '[0:2, :]'."""
        return index_text(self.index)


@dataclass(frozen=True)
class ArrayLayout:
    """How one array is spread over devices: shape, dtype, split axis and each device's piece."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    split_axis: int | None  # the axis spread over devices; None: every device holds it all
    pieces: tuple[Piece, ...]

    @property
    def local_shape(self) -> tuple[int, ...]:
        """The shape each device holds: the split axis removed (the whole shape when not split)."""
        if self.split_axis is None:
            return self.shape
        return self.shape[: self.split_axis] + self.shape[self.split_axis + 1 :]


def pmap_sharding(rank: int, split_axis: int | None, n_used: int, axis_name: str = "i"):
    """The NamedSharding pmap uses for an array of this rank split along ``split_axis``."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devicefacts.local_devices_for_work()[:n_used]), (axis_name,))
    spec = [None] * rank
    if split_axis is not None:
        spec[split_axis] = axis_name
    return NamedSharding(mesh, PartitionSpec(*spec))


def pmap_indices(rank: int, split_axis: int | None, n_used: int) -> list[tuple]:
    """The index each of ``n_used`` devices holds, by arithmetic: what ``devices_indices_map``
    of :func:`pmap_sharding` gives (tested), without needing the devices. One device holds
    all of the split axis, which JAX writes as a whole slice."""
    whole = slice(None, None, None)
    split = split_axis if n_used > 1 else None
    return [
        tuple(slice(k, k + 1, None) if a == split else whole for a in range(rank))
        for k in range(n_used)
    ]


def array_layout(
    name: str, shape: tuple[int, ...], dtype: str, split_axis: int | None, n_used: int
) -> ArrayLayout:
    """Which device holds which slice of array ``name`` split along ``split_axis`` over
    ``n_used`` devices (by index arithmetic when this process has fewer)."""

    if n_used > devicefacts.facts().local_count:  # a bigger machine than this one: arithmetic
        where = pmap_indices(len(shape), split_axis, n_used)
        pieces = tuple(Piece(k, f"device {k}", where[k]) for k in range(n_used))
        return ArrayLayout(name, tuple(shape), dtype, split_axis, pieces)
    sharding = pmap_sharding(len(shape), split_axis, n_used)
    where = sharding.devices_indices_map(tuple(shape))
    devices = list(sharding.mesh.devices.flat)
    pieces = tuple(Piece(k, str(d), tuple(where[d])) for k, d in enumerate(devices))
    return ArrayLayout(name, tuple(shape), dtype, split_axis, pieces)


def plan_layouts(p: Plan) -> tuple[list[ArrayLayout], list[ArrayLayout]]:
    """Layouts of every input and output of a valid :class:`pmapviz.core.planning.planning.Plan`
    (for
    more devices than this process has: by index arithmetic, see :func:`pmap_indices`)."""
    import jax

    if not p.ok:
        raise ValueError("only a valid plan has a layout")
    inputs = [
        array_layout(leaf.name, leaf.shape, leaf.dtype, leaf.axis, p.devices_used)
        for leaf in p.leaves
    ]
    named = pytrees.leaves(p.out_shapes, "out")  # out, or out[0], out['b'], ...
    dt_leaves = jax.tree.leaves(p.out_dtypes)
    axes = p.out_leaf_axes  # one per output leaf (a valid plan was traced)
    outputs = [
        array_layout(name, shape, dt, ax, p.devices_used)
        for (name, shape), dt, ax in zip(named, dt_leaves, axes, strict=True)
    ]
    return inputs, outputs


def used_pieces(p, inputs: list[ArrayLayout], outputs: list[ArrayLayout]) -> tuple[Piece, ...]:
    """The devices a valid plan uses, in mesh order (as the first array's pieces: its device's
    name and position)."""
    return (inputs or outputs)[0].pieces[: p.devices_used]


def device_rows(
    p: Plan, inputs: list[ArrayLayout], outputs: list[ArrayLayout]
) -> list[dict[str, str]]:
    """What each device of a valid plan holds and computes, one row per used device in mesh
    order: its name, its slice of every input and output (from the layouts, i.e. from JAX's
    shardings), and the shapes f receives and returns there."""
    receives = ", ".join(fmt_shape(leaf.local_shape) for leaf in p.leaves)
    returns = fmt_tree(p.per_device_out_shapes)
    rows = []
    for k, piece in enumerate(used_pieces(p, inputs, outputs)):
        row = {"device": piece.device}
        row.update({f"{lay.name} slice": lay.pieces[k].index_text for lay in inputs})
        row.update({"f receives": receives, "f returns": returns})
        row.update({f"{lay.name} slice": lay.pieces[k].index_text for lay in outputs})
        rows.append(row)
    return rows
