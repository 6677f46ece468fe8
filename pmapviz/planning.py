"""Planning and validation: what ``jax.pmap`` will do with given shapes, before anything runs.

:func:`plan` works from abstract shapes only (``jax.ShapeDtypeStruct`` + ``jax.eval_shape``), so
planning a (10_000_000, 3) input allocates nothing. The per-device program is traced with
``jax.vmap(f, axis_name=...)``, which has pmap's shape semantics (and binds the same collectives)
without needing the devices; the rules pmap adds on top (mapped axis <= device count, no
negative axes, out_axes=None only for outputs equal on every device) are checked here, with a
message in the user's own shapes and a fix. ``tests/core/test_planning.py`` proves the result
against real ``jax.pmap``.

First normalise, then check with pure rules:

* :func:`normalise` is the one step that works things out: it flattens the pytree arguments
  into :class:`Leaf` records (one array each, named like ``params['b']``), spreads each
  argument's in_axes prefix over its leaves as ``jax.pmap`` does, normalises every axis
  (negative axes, None, out of range) and finds the mapped size. The result,
  :class:`Normalised`, is frozen.
* each check is a small named rule (``rule_*``) that only reads it and returns a
  :class:`Problem`, several, or nothing, in the user's own names, shapes and numbers;
* :func:`infer_output` traces f on the per-device blocks (and spreads out_axes over f's
  output), for the rules on the output;
* :func:`plan` runs them in order and returns a :class:`Plan`.

Parsing what a user types lives in :mod:`pmapviz.settings`.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmapviz import devicefacts, pytrees
from pmapviz.catalog import Program
from pmapviz.settings import (
    DTYPES,
    MAX_ELEMENTS,
    first_line,
    fmt_count,
    fmt_int,
    fmt_shape,
    is_shape,
    quote,
)

# ---------------------------------------------------------------- the plan


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
    shape_tree: Any  # its shape, or its tree of shapes (see pmapviz.pytrees)
    dtype: str  # every leaf of the argument has it
    in_axes: Any = 0  # its in_axes entry as given: an axis, or a prefix of shape_tree

    @property
    def is_tree(self) -> bool:
        """Is it a dict or tuple of arrays (not one array)?"""
        return not is_shape(self.shape_tree)

    @property
    def skeleton(self) -> Any:
        """Its structure (:func:`pmapviz.pytrees.skeleton`)."""
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


@dataclass(frozen=True)
class Plan:
    """What ``jax.pmap`` does with these settings: ``ok``, or the ``problems`` it would hit.

    ``arguments`` are f's arguments as given; ``leaves`` are the arrays pmap maps, in JAX's
    order (one per plain argument, one per leaf of a dict / tuple argument). A plan that stops
    at a problem reports what the checks before it established: ``leaves`` is empty when the
    in_axes do not fit the arguments, a leaf's ``axis`` is None until the axes are checked,
    and ``devices_used`` and each leaf's ``local_shape`` are known once the mapped axes agree
    and fit the devices.
    """

    ok: bool
    problems: tuple[Problem, ...]
    n_devices: int
    devices_used: int
    arguments: tuple[Argument, ...]
    leaves: tuple[Leaf, ...]
    in_axes_given: tuple  # per argument as typed (for shown code), even when the count is wrong
    out_axes: Any  # as given: an axis, or a prefix of f's output
    axis_name: str | None
    out_shapes: Any = None  # tuple, or a pytree of tuples
    per_device_out_shapes: Any = None
    out_dtypes: Any = None
    out_varies: bool | None = None  # does the output differ from device to device?
    out_leaf_axes: tuple = ()  # per output leaf: its out_axes (out_axes may be a prefix)
    notes: tuple[str, ...] = ()

    @property
    def leaf_axes(self) -> tuple[int | None, ...]:
        """Per leaf, its normalised in_axes: what ``jax.pmap`` / ``jax.vmap`` of
        :meth:`leaf_fn` take."""
        return tuple(leaf.axis for leaf in self.leaves)

    @property
    def has_trees(self) -> bool:
        """Is any argument a dict or tuple of arrays?"""
        return any(a.is_tree for a in self.arguments)

    @property
    def skeletons(self) -> tuple:
        """Per argument: its structure (:func:`pmapviz.pytrees.skeleton`)."""
        return tuple(a.skeleton for a in self.arguments)

    @property
    def key(self) -> tuple:
        """The settings as given, hashable (a cache key): argument trees, one dtype per
        argument, in_axes and out_axes as given, axis name, device count. :func:`replan`
        turns it back into this plan."""
        trees = tuple(a.shape_tree for a in self.arguments)
        return (
            pytrees.freeze(trees),
            tuple(a.dtype for a in self.arguments),
            pytrees.freeze(self.in_axes_given),
            pytrees.freeze(self.out_axes),
            self.axis_name,
            self.n_devices,
        )

    def leaf_fn(self, fn: Callable) -> Callable:
        """``fn`` taking one array per leaf (``fn`` itself when no argument is a tree)."""
        if not self.has_trees:
            return fn
        return pytrees.flat_function(fn, self.skeletons)

    def leaf_rows(self) -> list[tuple[str, Any, int | None]]:
        """``(name, shape, normalised axis)`` per leaf; per argument (its shape as given, no
        axis) when its in_axes could not be spread over the arguments."""
        if self.leaves:
            return [(leaf.name, leaf.shape, leaf.axis) for leaf in self.leaves]
        return [(a.name, a.shape_tree, None) for a in self.arguments]

    def to_json(self) -> str:
        """The plan as JSON text: what ``python -m pmapviz plan --json`` prints."""
        rows = self.leaf_rows()
        blocks = [leaf.local_shape for leaf in self.leaves if leaf.local_shape is not None]
        data = {
            "ok": self.ok,
            "problems": [
                {"code": q.code, "message": q.message, "fix": q.fix} for q in self.problems
            ],
            "devices_used": self.devices_used,
            "n_devices": self.n_devices,
            "arg_names": [name for name, _, _ in rows],  # per leaf: x, params['b'], ...
            "arguments": [
                {"name": a.name, "shape": a.shape_tree, "in_axes": a.in_axes}
                for a in self.arguments
            ],
            "arg_shapes": [list(shape) for _, shape, _ in rows],
            "in_axes": [axis for _, _, axis in rows],
            "out_axes": self.out_axes,
            "axis_name": self.axis_name,
            "per_device_in_shapes": [list(s) for s in blocks],
            "out_shapes": self.out_shapes,
            "per_device_out_shapes": self.per_device_out_shapes,
            "out_dtypes": self.out_dtypes,
            "notes": list(self.notes),
        }
        return json.dumps(data, indent=2)


# ---------------------------------------------------------------- what the rules read
@dataclass(frozen=True)
class OutLeaf:
    """One array of f's output, as one device returns it."""

    name: str  # out, out[0], out['s']
    shape: tuple[int, ...]  # per device
    dtype: str
    axis: int | None  # its out_axes (out_axes may be a prefix of the output)


@dataclass(frozen=True)
class Output:
    """f traced on abstract per-device blocks: what the rules on the output read."""

    fn: Callable  # f taking one array per leaf
    structs: tuple  # the abstract inputs, one per leaf
    treedef: Any  # the output's structure (JAX's)
    leaves: tuple[OutLeaf, ...]
    varies: bool  # does any output leaf differ from device to device?
    unfit: str | None = None  # why out_axes does not fit the output (then no leaf has an axis)


@dataclass(frozen=True)
class Normalised:
    """The settings flattened and normalised once, by :func:`normalise`; rules only read it.

    ``leaves`` is empty when the in_axes do not fit the arguments (a wrong count, or a prefix
    that is not a prefix: ``unfit`` says which argument, and why). ``output`` is filled in
    once f is traced (:func:`infer_output`)."""

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


def _as_list(found) -> list[Problem]:
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


# ---------------------------------------------------------------- rules on the inputs
def _fixes(n: Normalised, per_leaf: dict[int, Any]) -> dict[int, Any] | None:
    """Fixes per leaf (leaf index -> new shape or axis) as fixes per argument, for an
    "apply" button; None unless every argument they touch is one plain array."""
    owners = {k: n.leaves[k].argument for k in per_leaf}
    if not per_leaf or any(n.arguments[a].is_tree for a in owners.values()):
        return None
    return {owners[k]: v for k, v in per_leaf.items()}


def rule_in_axes_length(n: Normalised) -> Problem | None:
    """in_axes has exactly one entry per argument of f."""
    n_args, given = len(n.arguments), len(n.in_axes_given)
    if given == n_args:
        return None
    return Problem(
        "in_axes_length",
        f"in_axes has {given} entr{'y' if given == 1 else 'ies'} but f takes "
        f"{n_args} argument{'' if n_args == 1 else 's'} "
        f"({', '.join(a.name for a in n.arguments)}).",
        f"Give one entry per argument, e.g. in_axes={tuple([0] * n_args)}.",
    )


def rule_in_axes_structure(n: Normalised) -> list[Problem]:
    """An argument's in_axes prefix must fit its tree (one axis, or exactly its structure)."""
    return [
        Problem(
            "in_axes_structure",
            why,
            "Give the argument one in_axes (e.g. 0 or None) "
            "or a dict / tuple with exactly its keys.",
            arg=k,
        )
        for k, why in n.unfit
    ]


def rule_dtypes(n: Normalised) -> list[Problem]:
    """Every leaf has a dtype pmapviz supports (:data:`DTYPES`)."""
    return [
        Problem(
            "dtype",
            f"{leaf.name}: dtype {quote(leaf.dtype)} is not supported here.",
            f"Choose one of {', '.join(DTYPES)}.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if leaf.dtype not in DTYPES
    ]


def rule_sizes_fit(n: Normalised) -> list[Problem]:
    """No leaf has more than :data:`MAX_ELEMENTS` (2**40) elements."""
    return [
        Problem(
            "too_large",
            f"{leaf.name} {fmt_shape(leaf.shape)} has {fmt_count(math.prod(leaf.shape))} elements; "
            f"pmapviz plans arrays of at most {MAX_ELEMENTS:,} (2**40) elements.",
            "Use smaller sizes.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if math.prod(leaf.shape) > MAX_ELEMENTS
    ]


def rule_axes_in_range(n: Normalised) -> list[Problem]:
    """Every in_axes names an existing axis (scalars have none)."""
    found = []
    for leaf in n.leaves:
        ax, rank, name = leaf.given_axis, len(leaf.shape), leaf.name
        if ax is not None and rank == 0:
            found.append(
                Problem(
                    "axis_out_of_range",
                    f"{name} is a scalar (shape ()), so it has no axis {ax} to map over.",
                    f"Set in_axes for {name} to None to give every device the same value, "
                    f"or give {name} a leading axis, e.g. shape ({n.n_devices},).",
                    arg=leaf.argument,
                )
            )
        elif ax is not None and not -rank <= ax < rank:
            found.append(
                Problem(
                    "axis_out_of_range",
                    f"in_axes={ax} for {name}, but {name} has shape {fmt_shape(leaf.shape)} (rank "
                    f"{rank}): valid axes are 0 to {rank - 1}.",
                    f"Use in_axes={rank - 1} for the last axis, 0 for the first, or None to "
                    "broadcast it.",
                    arg=leaf.argument,
                )
            )
    return found


def rule_negative_in_axes(n: Normalised) -> list[Problem]:
    """JAX 0.10's pmap does not normalise a negative in_axes before sharding: it splits axis 0
    and then squeezes the axis the user named. That works only when the axis means axis 0, or
    when the mapped size is 1 (one device, nothing to split); otherwise it raises
    IndivisibleError or a squeeze ValueError. (Measured; tests/core/test_planning.py checks
    this against real pmap with the user's own axes.)"""
    if n.size is None or n.size <= 1:
        return []
    found = []
    for k, leaf in enumerate(n.leaves):
        ax, norm = leaf.given_axis, leaf.axis
        if ax is None or ax >= 0 or norm in (None, 0):
            continue
        found.append(
            Problem(
                "negative_in_axes",
                f"in_axes={ax} for {leaf.name} {fmt_shape(leaf.shape)} means axis {norm}, but "
                "pmap in JAX 0.10 does not normalise negative in_axes: it shards the wrong axis "
                "and fails with a misleading IndivisibleError or 'cannot select an axis to "
                "squeeze out' (only a negative axis that means axis 0 works).",
                f"Write the axis as a non-negative number: in_axes={norm} for {leaf.name}.",
                arg=leaf.argument,
                new_axes=_fixes(n, {k: norm}),
            )
        )
    return found


def rule_some_axis_mapped(n: Normalised) -> Problem | None:
    """At least one argument has a mapped axis (not every in_axes is None)."""
    if n.mapped:
        return None
    return Problem(
        "no_mapped_axis",
        "Every argument has in_axes=None, so there is nothing to split across devices "
        "(pmap says: 'pmap requires at least one argument with a mapped axis').",
        "Set in_axes of at least one argument to an axis, e.g. 0.",
    )


def rule_mapped_sizes_equal(n: Normalised) -> Problem | None:
    """Every mapped axis has the same size."""
    if len({leaf.shape[leaf.axis] for _, leaf in n.mapped}) <= 1:
        return None
    detail = ", ".join(
        f"{leaf.name} axis {leaf.axis} has {leaf.shape[leaf.axis]:,}" for _, leaf in n.mapped
    )
    first = n.mapped[0][1]
    return Problem(
        "mapped_sizes_differ",
        f"The mapped axes differ in size: {detail}. pmap gives each device one slice of "
        "every mapped axis, so they must all have the same size.",
        f"Make them equal (e.g. {first.shape[first.axis]:,} like {first.name}), or set in_axes "
        "to None for an argument every device should get whole.",
    )


def rule_mapped_axis_not_empty(n: Normalised) -> Problem | None:
    """The mapped axis is not of size 0."""
    if n.size != 0:
        return None
    leaf = n.mapped[0][1]
    return Problem(
        "mapped_axis_empty",
        f"The mapped axis has size 0 (axis {leaf.axis} of {leaf.name}, shape "
        f"{fmt_shape(leaf.shape)}): there is nothing to give the devices.",
        f"Use a size from 1 to {n.n_devices} for the mapped axis.",
        arg=leaf.argument,
    )


def _reshape_fix(shape: tuple[int, ...], axis: int, n: int) -> tuple[tuple[int, ...], str]:
    """Split axis `axis` (size S > n) into (d, S // d) with d <= n, d | S, as large as possible."""
    size = shape[axis]
    d = max(k for k in range(1, n + 1) if size % k == 0)
    new = shape[:axis] + (d, size // d) + shape[axis + 1 :]
    if d == n:
        how = ""
    elif d == 1:
        padded = -(-size // n) * n
        new = shape[:axis] + (n, padded // n) + shape[axis + 1 :]
        how = (
            f" ({fmt_int(size)} has no divisor between 2 and {n}: pad axis {axis} to "
            f"{fmt_int(padded)} first)"
        )
    else:
        how = f" (uses {d} of the {n} devices; pad to a multiple of {n} to use all)"
    return new, how


def rule_mapped_axis_fits(n: Normalised) -> Problem | None:
    """The mapped axis is at most the device count (the fix: reshape it into per-device blocks)."""
    if n.size is None or n.size <= n.n_devices:
        return None
    fixes, lines = {}, []
    for k, leaf in n.mapped:
        new, how = _reshape_fix(leaf.shape, leaf.axis, n.n_devices)
        fixes[k] = new
        lines.append(f"reshape {leaf.name} {fmt_shape(leaf.shape)} to {fmt_shape(new)}{how}")
    first = n.mapped[0][1]
    ax0 = first.axis
    return Problem(
        "mapped_axis_too_large",
        f"Axis {ax0} of {first.name} has {first.shape[ax0]:,} elements but there are "
        f"{n.n_devices} devices; pmap puts exactly one slice of the mapped axis on each device, "
        f"so it can be at most {n.n_devices}.",
        "; ".join(lines).capitalize() + f", and keep in_axes={ax0}: each device then gets a "
        "block and can vmap over it (pmap(vmap(f))).",
        arg=first.argument,
        new_shapes=_fixes(n, fixes),
    )


def rule_no_empty_blocks(n: Normalised) -> list[Problem]:
    """No device gets an empty block (a 0 in any leaf's per-device shape)."""
    return [
        Problem(
            "empty_block",
            f"{leaf.name} has shape {fmt_shape(leaf.shape)}, so every device would get an "
            f"empty block {fmt_shape(leaf.local_shape)} (0 elements). There is nothing to compute, "
            "and JAX 0.10 handles empty blocks inconsistently (a dot over length 0 even fails to "
            "compile), so pmapviz refuses them.",
            "Give every axis a size of at least 1.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if 0 in leaf.local_shape
    ]


def rule_axis_name_given(n: Normalised) -> Problem | None:
    """A catalog function that uses a collective has an axis_name to reduce over."""
    if not isinstance(n.fn, Program) or not n.fn.needs_axis_name or n.axis_name:
        return None
    return Problem(
        "needs_axis_name",
        f"{n.fn.body('axis_name')} uses a collective (lax.psum), which needs to know which "
        "mapped axis to reduce over, but axis_name is empty.",
        "Set axis_name, e.g. 'i' (pmap(f, axis_name='i')); the collective then names the same "
        "axis.",
    )


INPUT_RULES: tuple[Rule, ...] = (
    rule_in_axes_length,
    rule_in_axes_structure,
    rule_dtypes,
    rule_sizes_fit,
    rule_axes_in_range,
    rule_some_axis_mapped,
    rule_mapped_sizes_equal,
    rule_mapped_axis_not_empty,
    rule_mapped_axis_fits,
    rule_no_empty_blocks,
    rule_negative_in_axes,
    rule_axis_name_given,
)
"""Checked in order; the first rule that finds problems ends the plan there (it is the one a
person should fix first, and later rules assume it passed, e.g. a single mapped size)."""

AXES_CHECKED = INPUT_RULES.index(rule_axes_in_range)
"""A plan stopped at this rule or a later one reports its leaves' normalised axes."""
LAYOUT_CHECKED = INPUT_RULES.index(rule_mapped_axis_fits) + 1
"""A plan stopped after the mapped axes fit reports the devices used and each block."""


# ---------------------------------------------------------------- tracing f
@functools.lru_cache(maxsize=1024)
def _trace(fn: Callable, structs: tuple, in_axes: tuple, axis_name: str | None):
    """Global output (device axis at 0) and whether any output leaf varies per device."""
    import jax

    out = jax.eval_shape(jax.vmap(fn, in_axes=in_axes, out_axes=0, axis_name=axis_name), *structs)
    try:
        jax.eval_shape(jax.vmap(fn, in_axes=in_axes, out_axes=None, axis_name=axis_name), *structs)
        varies = False
    except ValueError as err:
        if "out_axes" not in str(err):
            raise
        varies = True
    return out, varies


def _leaf_function(n: Normalised) -> Callable:
    """f (built for the axis name) taking one array per leaf."""
    fn = n.fn.build(n.axis_name) if isinstance(n.fn, Program) else n.fn
    if any(a.is_tree for a in n.arguments):
        fn = pytrees.flat_function(fn, tuple(a.skeleton for a in n.arguments))
    return fn


def infer_output(n: Normalised) -> Output | Problem:
    """Run f on abstract per-device values (``jax.eval_shape``) and spread out_axes over its
    output; or the problem, when f rejects those values."""
    import jax
    import jax.numpy as jnp

    fn = _leaf_function(n)
    structs = tuple(jax.ShapeDtypeStruct(leaf.shape, jnp.dtype(leaf.dtype)) for leaf in n.leaves)
    try:
        out, varies = _trace(fn, structs, tuple(leaf.axis for leaf in n.leaves), n.axis_name)
    except NameError as err:
        m = re.search(r"unbound axis name: (\S+?)[\s.]", str(err) + " ")
        missing = m.group(1) if m else "?"
        return Problem(
            "unbound_axis_name",
            f"f uses a collective over axis {missing!r}, but pmap's axis_name is {n.axis_name!r}.",
            f"Pass axis_name={missing!r} to pmap (or use the same name in the collective).",
        )
    except Exception as err:  # the function rejects these per-device shapes
        shown = ", ".join(f"{leaf.name} {fmt_shape(leaf.local_shape)}" for leaf in n.leaves)
        return Problem(
            "function_rejects_shapes",
            f"Each device would call f with {shown}, and f cannot take that: {first_line(err)}",
            SHARD_MAP_ONLY
            if any(w in str(err) for w in SHARD_MAP_WORDS)
            else "Change the shapes (or in_axes) so that one device's slice is what f expects.",
        )
    flat, treedef = jax.tree.flatten(out)  # shapes are pytrees too: work on flat leaves
    axes, unfit = _out_axes_per_leaf(n.out_axes, out)
    leaves = tuple(
        OutLeaf(name, tuple(a.shape[1:]), str(a.dtype), ax)
        for name, a, ax in zip(_out_names(out), flat, axes, strict=True)
    )
    return Output(fn, structs, treedef, leaves, varies, unfit)


SHARD_MAP_WORDS = ("shard_map", "pvary", "ManualAxisType")  # JAX's words for shard_map-only parts
SHARD_MAP_ONLY = (
    "That belongs to jax.shard_map (e.g. lax.all_gather's to='invarying'), not to "
    "pmap: drop it here; the Meshes page runs f under shard_map."
)


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape")


def _out_names(out: Any) -> list[str]:
    return [name for name, _ in pytrees.leaves(out, "out", _is_array)]


def _out_axes_per_leaf(out_axes: Any, out: Any) -> tuple[list, str | None]:
    """out_axes (an axis, or a prefix of f's output) spread over the output's leaves; or
    (None per leaf, why it does not fit)."""
    skel = pytrees.skeleton(out, _is_array)
    try:
        return pytrees.broadcast(out_axes, skel, "f's output", "out_axes"), None
    except (pytrees.TreeError, TypeError) as err:
        return [None] * pytrees.count(skel), str(err).split(": an out_axes")[0] + "."


@functools.lru_cache(maxsize=1024)
def _leaf_varies(
    fn: Callable, structs: tuple, in_axes: tuple, axis_name: str | None, leaf: int
) -> bool:
    """Does output leaf ``leaf`` differ from device to device? (vmap refuses out_axes=None
    for it then.)"""
    import jax

    def one(*xs):
        return jax.tree.leaves(fn(*xs))[leaf]

    try:
        jax.eval_shape(jax.vmap(one, in_axes=in_axes, out_axes=None, axis_name=axis_name), *structs)
    except ValueError as err:
        if "out_axes" not in str(err):
            raise
        return True
    return False


# ---------------------------------------------------------------- rules on the output
def rule_out_axes_structure(n: Normalised) -> Problem | None:
    """out_axes must fit f's output (one axis, or exactly its structure)."""
    if n.output is None or n.output.unfit is None:
        return None
    return Problem(
        "out_axes_structure",
        n.output.unfit,
        "Give out_axes one axis (e.g. 0) or a dict / tuple with exactly the "
        "structure of f's output.",
    )


def _varying_none_leaves(n: Normalised) -> list[str]:
    """The output leaves given out_axes=None that differ from device to device."""
    out = n.output
    if not n.traced or not out.varies:
        return []
    if n.out_axes is None:
        return ["f's output"]
    in_axes = tuple(leaf.axis for leaf in n.leaves)
    return [
        o.name
        for i, o in enumerate(out.leaves)
        if o.axis is None and _leaf_varies(out.fn, out.structs, in_axes, n.axis_name, i)
    ]


def rule_out_axes_none_varies(n: Normalised) -> Problem | None:
    """out_axes=None only for outputs that are the same on every device."""
    varying = _varying_none_leaves(n)
    if not varying:
        return None
    what = (
        "f's output differs"
        if varying == ["f's output"]
        else (f"{', '.join(varying)} differ{'s' if len(varying) == 1 else ''}")
    )
    return Problem(
        "out_axes_none_varies",
        f"out_axes=None says every device returns the same value, but {what} from "
        "device to device. JAX 0.10 does not raise here: it silently returns device 0's value "
        "(jit(vmap(f)) would raise).",
        "Use out_axes=0 to stack every device's result, or make the output equal on every "
        "device with a collective such as lax.psum or lax.all_gather.",
    )


def _for_leaf(n: Normalised, leaf: OutLeaf) -> str:
    """' for out['b']' when out_axes is a prefix (several leaves), else ''."""
    return "" if pytrees.is_axis(n.out_axes) else f" for {leaf.name}"


def rule_negative_out_axes(n: Normalised) -> Problem | None:
    """No out_axes is negative (JAX 0.10 returns a wrongly shaped result for one)."""
    bad = [o for o in n.out_leaves if o.axis is not None and o.axis < 0]
    if not bad:
        return None
    o = bad[0]
    return Problem(
        "negative_out_axes",
        f"out_axes={o.axis}{_for_leaf(n, o)} is negative; pmap in JAX 0.10 does not support "
        "it and returns a wrongly shaped result instead of raising.",
        f"Use the non-negative axis, e.g. out_axes={o.axis % (len(o.shape) + 1)}{_for_leaf(n, o)}.",
    )


def rule_out_axes_in_range(n: Normalised) -> Problem | None:
    """Every out_axes is an axis of the stacked result (0 to the per-device rank)."""
    bad = [o for o in n.out_leaves if o.axis is not None and o.axis > len(o.shape)]
    if not bad:
        return None
    o, worst = bad[0], len(bad[0].shape)
    shapes = [leaf.shape for leaf in n.out_leaves]
    shown = fmt_shape(shapes[0]) if len(shapes) == 1 else str(n.output.treedef.unflatten(shapes))
    return Problem(
        "out_axes_out_of_range",
        f"out_axes={o.axis}{_for_leaf(n, o)}, but each device returns shape {shown}: the "
        f"stacked result has rank {worst + 1}, so out_axes can be 0 to {worst}"
        f"{_for_leaf(n, o)}.",
        f"Use out_axes between 0 and {worst}{_for_leaf(n, o)}.",
    )


def rule_output_fits(n: Normalised) -> Problem | None:
    """f's stacked result has at most :data:`MAX_ELEMENTS` (2**40) elements per output leaf."""
    size = n.size or 0
    sized = [(o.shape, 1 if o.axis is None else size) for o in n.out_leaves]
    huge = [(shape, c) for shape, c in sized if math.prod(shape) * c > MAX_ELEMENTS]
    if not huge:
        return None
    shape, copies = huge[0]
    return Problem(
        "output_too_large",
        f"f's result would have {fmt_count(math.prod(shape) * copies)} elements (each device "
        f"returns {fmt_shape(shape)}, on {size} devices); pmapviz refuses outputs above "
        f"{MAX_ELEMENTS:,} (2**40) elements, far below what XLA can index.",
        "Use smaller sizes: check which axes f combines (e.g. x @ w multiplies the rows of x by "
        "the columns of w).",
    )


OUTPUT_RULES: tuple[Rule, ...] = (
    rule_out_axes_none_varies,
    rule_negative_out_axes,
    rule_out_axes_in_range,
    rule_output_fits,
)
"""All checked, once out_axes fit the output (each looks at a different property of it)."""


# ---------------------------------------------------------------- plan()
def replan(fn: Callable, key: tuple) -> Plan:
    """The plan of ``fn`` for a :attr:`Plan.key` (how caches rebuild a plan from its key)."""
    trees, dtypes, in_axes, out_axes, axis_name, n = key
    thaw = pytrees.thaw
    return plan(
        fn,
        list(thaw(trees)),
        in_axes=thaw(in_axes),
        out_axes=thaw(out_axes),
        axis_name=axis_name,
        n_devices=n,
        dtypes=dtypes,
    )


def plan(
    fn: Callable,
    arg_shapes: Sequence[Sequence[int]],
    in_axes: int | None | Sequence[int | None] = 0,
    out_axes: int | None = 0,
    axis_name: str | None = None,
    n_devices: int | None = None,
    dtypes: str | Sequence[str] | None = None,
) -> Plan:
    """What ``jax.pmap(fn, in_axes, out_axes, axis_name)`` does with arguments of these shapes.

    ``fn`` is a callable or a :class:`pmapviz.catalog.Program`. ``n_devices`` defaults to the
    local device count and may be larger (planning for a bigger machine). Never raises for
    bad shapes or axes: they become ``problems``, each with a ``fix``. First :func:`normalise`,
    then the rules in order (:data:`INPUT_RULES`, :func:`infer_output`, :data:`OUTPUT_RULES`).
    """
    n = normalise(fn, arg_shapes, in_axes, out_axes, axis_name, n_devices, dtypes)
    for stop, rule in enumerate(INPUT_RULES):
        problems = _as_list(rule(n))
        if problems:
            return _finish(n, problems, stop)
    traced = infer_output(n)
    if isinstance(traced, Problem):
        return _finish(n, [traced], len(INPUT_RULES))
    n = replace(n, output=traced)
    problems = _as_list(rule_out_axes_structure(n))
    if not problems:
        problems = [q for rule in OUTPUT_RULES for q in _as_list(rule(n))]
    return _finish(n, problems, len(INPUT_RULES))


def _reported_leaves(n: Normalised, stop: int) -> tuple[Leaf, ...]:
    """The leaves as far as the checks got before ``stop`` (see :class:`Plan`)."""
    return tuple(
        replace(
            leaf,
            axis=leaf.axis if stop >= AXES_CHECKED else None,
            local_shape=leaf.local_shape if stop >= LAYOUT_CHECKED else None,
        )
        for leaf in n.leaves
    )


def _output_fields(n: Normalised, problems: list[Problem]) -> dict[str, Any]:
    """The Plan's output fields once f is traced with out_axes that fit."""
    out = n.output
    if not n.traced:
        return {"out_varies": None if out is None else out.varies}
    size = n.size or 0
    bad = any(
        q.code in ("negative_out_axes", "out_axes_out_of_range", "output_too_large")
        for q in problems
    )
    stacked = [
        o.shape if o.axis is None else o.shape[: o.axis] + (size,) + o.shape[o.axis :]
        for o in out.leaves
    ]
    return {
        "out_shapes": None if bad else out.treedef.unflatten(stacked),
        "per_device_out_shapes": out.treedef.unflatten([o.shape for o in out.leaves]),
        "out_dtypes": out.treedef.unflatten([o.dtype for o in out.leaves]),
        "out_varies": out.varies,
        "out_leaf_axes": tuple(o.axis for o in out.leaves),
    }


def _finish(n: Normalised, problems: list[Problem], stop: int) -> Plan:
    """The plan of ``n`` with ``problems`` found, the checks having stopped at input rule
    ``stop`` (``len(INPUT_RULES)``: every input rule passed)."""
    notes = []
    size = n.size or 0
    if n.traced and size < n.n_devices:
        notes.append(
            f"The mapped axis has {size} element(s), so pmap uses the first {size} of the "
            f"{n.n_devices} devices; the other {n.n_devices - size} stay idle."
        )
    return Plan(
        ok=not problems,
        problems=tuple(problems),
        n_devices=n.n_devices,
        devices_used=size if stop >= LAYOUT_CHECKED else 0,
        arguments=n.arguments,
        leaves=_reported_leaves(n, stop),
        in_axes_given=n.in_axes_given,
        out_axes=n.out_axes,
        axis_name=n.axis_name,
        notes=tuple(notes),
        **_output_fields(n, problems),
    )
