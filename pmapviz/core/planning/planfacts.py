"""What the plan's rules read and return: f's arguments normalised once, and a Problem.

:func:`normalise` is the one step of planning that works things out: it flattens the pytree
arguments into :class:`Leaf` records (one array each, named like ``params['b']``), spreads each
argument's in_axes prefix over its leaves as ``jax.pmap`` does, normalises every axis (negative
axes, None, out of range) and finds the mapped size. The result, :class:`Normalised`, is frozen;
once f is traced it also holds f's :class:`Output`. Each rule
(:mod:`pmapviz.core.planning.planinputrules`,
:mod:`pmapviz.core.planning.planoutputrules`) only reads it and returns a :class:`Problem`, several,
or nothing (:data:`Rule`, :func:`as_list`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.base.valuetext import is_shape
from pmapviz.core.devices import devicefacts


# ---------------------------------------------------------------- what a plan is made of
@dataclass(frozen=True)
class Problem:
    """Something pmap would reject or get wrong: the message, a fix, and what "apply" changes."""

    code: str
    message: str
    fix: str
    arg: int | None = None  # which argument it is about, if one
    # a concrete change that fixes it, for an "apply" button: {arg index: new shape / axis}
    new_shapes: dict[int, tuple[int, ...]] | None = None
    new_axes: dict[int, int] | None = None


@dataclass(frozen=True)
class Argument:
    """One argument of f as the user gave it: one array, or a dict / tuple of arrays."""

    index: int
    name: str  # x, params
    shape_tree: Any  # its shape, or its tree of shapes (see pmapviz.core.base.pytrees)
    dtype: str  # every leaf of the argument has it
    in_axes: Any = 0  # its in_axes entry as given: an axis, or a prefix of shape_tree

    @property
    def is_tree(self) -> bool:
        """Is it a dict or tuple of arrays (not one array)?"""
        return not is_shape(self.shape_tree)

    @property
    def skeleton(self) -> Any:
        """Its structure (:func:`pmapviz.core.base.pytrees.skeleton`)."""
        return pytrees.skeleton(self.shape_tree)


@dataclass(frozen=True)
class Leaf:
    """One array pmap maps: a plain argument, or one leaf of a pytree argument."""

    argument: int  # the index of the Argument it belongs to
    name: str  # as a user indexes it: x, params['b'], pair[0]
    shape: tuple[int, ...]
    dtype: str
    given_axis: int | None  # its in_axes as given (spread from the argument's prefix)
    axis: int | None  # normalised: non-negative; None when not mapped (or not a valid axis)
    local_shape: tuple[int, ...] | None  # the block f gets on each device: the axis removed


# ---------------------------------------------------------------- what the rules read
@dataclass(frozen=True)
class OutLeaf:
    """One array of f's output, as one device returns it."""

    name: str  # out, out[0], out['s']
    shape: tuple[int, ...]  # per device
    dtype: str
    axis: int | None  # its out_axes (out_axes may be a prefix of the output)
    varies: bool = False  # differs from device to device (vmap batched it)


@dataclass(frozen=True)
class Output:
    """f traced on abstract per-device blocks: what the rules on the output read."""

    treedef: Any  # the output's structure (JAX's)
    leaves: tuple[OutLeaf, ...]
    unfit: str | None = None  # why out_axes does not fit the output (then no leaf has an axis)

    @property
    def varies(self) -> bool:
        """Does any output leaf differ from device to device?"""
        return any(leaf.varies for leaf in self.leaves)


@dataclass(frozen=True)
class Normalised:
    """The settings flattened and normalised once, by :func:`normalise`; rules only read it.

    ``leaves`` is empty when the in_axes do not fit the arguments (a wrong count, or a prefix
    that is not a prefix: ``unfit`` says which argument, and why). ``output`` is filled in
    once f is traced (:func:`pmapviz.core.planning.planoutputrules.infer_output`)."""

    fn: Any
    arguments: tuple[Argument, ...]
    in_axes_given: tuple  # per argument, as given (the count may be wrong)
    leaves: tuple[Leaf, ...]
    unfit: tuple[tuple[int, str], ...] = ()  # (argument index, why its prefix does not fit)
    out_axes: Any = 0
    axis_name: str | None = None
    n_devices: int = 1
    output: Output | None = None

    @property
    def mapped(self) -> tuple[tuple[int, Leaf], ...]:
        """``(leaf index, leaf)`` for every leaf with a (valid) mapped axis."""
        return tuple((k, leaf) for k, leaf in enumerate(self.leaves) if leaf.axis is not None)

    def per_argument(self, per_leaf: dict[int, Any]) -> dict[int, Any] | None:
        """Fixes per leaf (leaf index -> new shape or axis) as fixes per argument, for an
        "apply" button; None unless every argument they touch is one plain array."""
        owners = {k: self.leaves[k].argument for k in per_leaf}
        if not per_leaf or any(self.arguments[a].is_tree for a in owners.values()):
            return None
        return {owners[k]: v for k, v in per_leaf.items()}

    @property
    def size(self) -> int | None:
        """The mapped size, i.e. the devices used: the one size every mapped axis has (None
        when no axis is mapped, or their sizes differ)."""
        sizes = {leaf.shape[leaf.axis] for _, leaf in self.mapped}
        return sizes.pop() if len(sizes) == 1 else None

    @property
    def traced(self) -> bool:
        """Is f traced, with out_axes that fit its output?"""
        return self.output is not None and self.output.unfit is None

    @property
    def out_leaves(self) -> tuple[OutLeaf, ...]:
        """f's output leaves, once traced with out_axes that fit (else none)."""
        return self.output.leaves if self.traced else ()


Rule = Callable[[Normalised], "Problem | list[Problem] | None"]


def as_list(found) -> list[Problem]:
    """What a rule found, as a list of problems (none, one or several)."""
    if found is None:
        return []
    return list(found) if isinstance(found, list) else [found]


# ---------------------------------------------------------------- normalise
def _arg_names(fn: Any, n: int) -> tuple[str, ...]:
    names = getattr(fn, "arg_names", None)
    if names and len(names) == n:
        return tuple(names)
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return tuple(params) if len(params) == n else tuple(f"arg{k}" for k in range(n))


def _as_tree(x: Any) -> Any:
    """A shape (any sequence of ints) as a tuple; a dict / tuple / list of them as a tree."""
    if isinstance(x, dict):
        return {str(k): _as_tree(v) for k, v in x.items()}
    items = list(x)
    if not any(isinstance(v, (dict, list, tuple)) for v in items):  # sizes: int, np.int64, ...
        return tuple(int(v) for v in items)
    return tuple(_as_tree(v) for v in items)


def infer_arguments(
    fn: Any, arg_shapes: Sequence, in_axes: Any, dtypes: str | Sequence[str] | None
) -> tuple[tuple[Argument, ...], tuple]:
    """f's arguments as given, and the in_axes as given per argument (one in_axes for all
    of them is repeated; a tuple is kept as typed, even with the wrong count). An argument
    without an in_axes entry gets None."""
    trees = tuple(_as_tree(s) for s in arg_shapes)
    n_args = len(trees)
    if dtypes is None or isinstance(dtypes, str):
        dts = (dtypes or "float32",) * n_args
    else:
        dts = tuple(str(t) for t in dtypes)
    if len(dts) != n_args:
        raise ValueError(f"dtypes has {len(dts)} entries for {n_args} arguments")
    given = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * n_args
    names = _arg_names(fn, n_args)
    arguments = tuple(
        Argument(k, names[k], trees[k], dts[k], given[k] if k < len(given) else None)
        for k in range(n_args)
    )
    return arguments, given


def infer_leaf(arg: Argument, name: str, shape: tuple[int, ...], given_axis: Any) -> Leaf:
    """One leaf with its axis normalised: a negative axis counted from the end, None for an
    axis that is None, out of range, or on a scalar (the rules say why)."""
    rank = len(shape)
    valid = given_axis is not None and rank > 0 and -rank <= given_axis < rank
    axis = given_axis % rank if valid else None
    local = shape if axis is None else shape[:axis] + shape[axis + 1 :]
    return Leaf(arg.index, name, shape, arg.dtype, given_axis, axis, local)


def infer_leaves(arguments: tuple[Argument, ...]) -> tuple[tuple[Leaf, ...], tuple]:
    """Every argument's leaves in JAX's order, each with its in_axes from the argument's
    prefix (as ``jax.pmap`` spreads it); and ``(argument, why)`` for each argument whose
    prefix does not fit it (JAX: "in_axes specification must be a tree prefix"), in which
    case there are no leaves."""
    leaves, unfit = [], []
    for arg in arguments:
        try:
            axes = pytrees.broadcast(arg.in_axes, arg.skeleton, arg.name)
        except pytrees.TreeError as err:
            unfit.append((arg.index, str(err)))
            continue
        pairs = pytrees.leaves(arg.shape_tree, arg.name)
        leaves += [
            infer_leaf(arg, name, shape, ax) for (name, shape), ax in zip(pairs, axes, strict=True)
        ]
    return (() if unfit else tuple(leaves)), tuple(unfit)


def normalise(
    fn: Callable,
    arg_shapes: Sequence[Any],
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: str | None = None,
    n_devices: int | None = None,
    dtypes: str | Sequence[str] | None = None,
) -> Normalised:
    """The settings as the rules read them: arguments as given, their leaves with normalised
    axes and per-device blocks (none when the in_axes count is wrong or a prefix does not
    fit), the mapped size (:attr:`Normalised.size`). Raises only for a wrong dtypes count."""
    arguments, given = infer_arguments(fn, arg_shapes, in_axes, dtypes)
    if n_devices is None:  # the devices of the set this runs on
        n_devices = devicefacts.facts().local_count
    leaves, unfit = infer_leaves(arguments) if len(given) == len(arguments) else ((), ())
    return Normalised(
        fn=fn,
        arguments=arguments,
        in_axes_given=given,
        leaves=leaves,
        unfit=unfit,
        out_axes=out_axes,
        axis_name=axis_name,
        n_devices=n_devices,
    )
