"""Planning and validation: what ``jax.pmap`` will do with given shapes, before anything runs.

:func:`plan` works from abstract shapes only (``jax.ShapeDtypeStruct`` + ``jax.eval_shape``), so
planning a (10_000_000, 3) input allocates nothing. The per-device program is traced with
``jax.vmap(f, axis_name=...)``, which has pmap's shape semantics (and binds the same collectives)
without needing the devices; the rules pmap adds on top (mapped axis <= device count, no
negative axes, out_axes=None only for outputs equal on every device) are checked here, with a
message in the user's own shapes and a fix. ``tests/core/test_planning.py`` proves the result
against real ``jax.pmap``.

Each check is a small named rule (``rule_*``) returning a :class:`Problem`, several, or
nothing; :func:`plan` runs them in order. Parsing what a user types lives in
:mod:`pmapviz.settings`.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pmapviz import pytrees
from pmapviz.settings import DTYPES, MAX_ELEMENTS, fmt_count, fmt_int, fmt_shape, is_shape, quote

# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    fix: str
    arg: int | None = None  # which argument it is about, if one
    # a concrete change that fixes it, for an "apply" button: {arg index: new shape / axis}
    new_shapes: dict[int, tuple[int, ...]] | None = None
    new_axes: dict[int, int] | None = None


@dataclass(frozen=True)
class Plan:
    ok: bool
    problems: tuple[Problem, ...]
    n_devices: int
    devices_used: int
    arg_names: tuple[str, ...]
    arg_shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    in_axes: tuple[int | None, ...]  # normalised: non-negative, one per argument
    out_axes: int | None
    axis_name: str | None
    in_axes_typed: tuple[int | None, ...] = ()  # as the user gave them (for shown code)
    per_device_in_shapes: tuple[tuple[int, ...], ...] = ()
    out_shapes: Any = None  # tuple, or a pytree of tuples
    per_device_out_shapes: Any = None
    out_dtypes: Any = None
    out_varies: bool | None = None  # does the output differ from device to device?
    notes: tuple[str, ...] = field(default=())
    # pytree arguments: arg_names / arg_shapes / in_axes above are per LEAF (one array each);
    # these describe the arguments as given (see pmapviz.pytrees)
    arg_trees: tuple = ()  # per argument: its shape, or its tree of shapes
    given_names: tuple[str, ...] = ()  # per argument: its name (arg_names are per leaf)
    leaf_args: tuple[int, ...] = ()  # per leaf: which argument it belongs to
    in_axes_given: tuple = ()  # per argument: its in_axes as given (an axis or a prefix)
    out_leaf_axes: tuple = ()  # per output leaf: its out_axes (out_axes may be a prefix)

    @property
    def has_trees(self) -> bool:
        """Is any argument a dict or tuple of arrays?"""
        return any(not is_shape(t) for t in self.arg_trees)

    @property
    def skeletons(self) -> tuple:
        """Per argument: its structure (:func:`pmapviz.pytrees.skeleton`)."""
        return tuple(pytrees.skeleton(t) for t in self.arg_trees)

    @property
    def key(self) -> tuple:
        """The settings as given, hashable (a cache key): argument trees, one dtype per
        argument, in_axes and out_axes as given, axis name, device count. :func:`replan`
        turns it back into this plan."""
        first: dict[int, str] = {}
        for dt, k in zip(self.dtypes, self.leaf_args, strict=True):
            first.setdefault(k, dt)
        dtypes = tuple(first[k] for k in range(len(self.arg_trees)))
        return (pytrees.freeze(self.arg_trees), dtypes, pytrees.freeze(self.in_axes_given),
                pytrees.freeze(self.out_axes), self.axis_name, self.n_devices)  # fmt: skip

    def leaf_fn(self, fn: Callable) -> Callable:
        """``fn`` taking one array per leaf (``fn`` itself when no argument is a tree)."""
        if not self.has_trees:
            return fn
        return pytrees.flat_function(fn, self.skeletons)


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


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


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


# ---------------------------------------------------------------- what the rules read
@dataclass
class Draft:
    """What the rules read and fill in, in order: the user's inputs as given (``axes`` are the
    raw in_axes, one per argument), then normalised axes, the mapped size, per-device shapes,
    and the traced output. ``plan()`` turns it into a :class:`Plan`."""

    fn: Any
    shapes: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    dtypes: tuple[str, ...]
    raw_in_axes: Any
    axes: tuple = ()
    out_axes: int | None = 0
    axis_name: str | None = None
    n_devices: int = 1
    in_axes: tuple = ()  # normalised (non-negative) axes, None where not mapped
    size: int = 0  # the mapped axis' size: the devices used
    per_in: tuple = ()
    out_leaves: list = field(default_factory=list)  # per-device output shapes, flat
    treedef: Any = None
    varies: bool | None = None
    out_dtypes: Any = None
    # the arguments as given (trees of shapes, names, in_axes prefixes); rule_trees flattens
    # them into the per-leaf fields above
    trees: tuple = ()
    top_names: tuple[str, ...] = ()
    top_dtypes: tuple[str, ...] = ()
    top_axes: tuple = ()
    leaf_args: tuple[int, ...] = ()
    traced: Any = None  # (flat fn, abstract inputs) once traced
    out_names: list = field(default_factory=list)
    out_leaf_axes: list = field(default_factory=list)

    @property
    def mapped(self) -> list[tuple[int, int]]:
        return [(k, self.shapes[k][a]) for k, a in enumerate(self.in_axes) if a is not None]


Rule = Callable[[Draft], "Problem | list[Problem] | None"]


def _as_list(found) -> list[Problem]:
    if found is None:
        return []
    return list(found) if isinstance(found, list) else [found]


# ---------------------------------------------------------------- rules on the inputs
def rule_in_axes_length(d: Draft) -> Problem | None:
    n_args = len(d.trees)
    if len(d.axes) == n_args:
        return None
    return Problem(
        "in_axes_length",
        f"in_axes has {len(d.axes)} entr{'y' if len(d.axes) == 1 else 'ies'} but f takes "
        f"{n_args} argument{'' if n_args == 1 else 's'} ({', '.join(d.top_names)}).",
        f"Give one entry per argument, e.g. in_axes={tuple([0] * n_args)}.",
    )


def rule_trees(d: Draft) -> list[Problem]:
    """Flatten pytree arguments into one entry per leaf (an array), each named like
    ``params['b']``, with its in_axes from the argument's prefix; say where a prefix does not
    fit its argument (JAX: "in_axes specification must be a tree prefix")."""
    found, shapes, names, axes, dtypes, owners = [], [], [], [], [], []
    for k, (tree, prefix) in enumerate(zip(d.trees, d.axes, strict=True)):
        pairs = pytrees.leaves(tree, d.top_names[k])
        try:
            leaf_axes = pytrees.broadcast(prefix, pytrees.skeleton(tree), d.top_names[k])
        except pytrees.TreeError as err:
            found.append(Problem("in_axes_structure", str(err), "Give the argument one in_axes "
                                 "(e.g. 0 or None) or a dict / tuple with exactly its keys.",
                                 arg=k))  # fmt: skip
            continue
        names += [n for n, _ in pairs]
        shapes += [s for _, s in pairs]
        axes += leaf_axes
        dtypes += [d.top_dtypes[k]] * len(pairs)
        owners += [k] * len(pairs)
    if not found:
        d.shapes, d.names, d.axes = tuple(shapes), tuple(names), tuple(axes)
        d.dtypes = tuple(dtypes)
        d.leaf_args, d.in_axes = tuple(owners), (None,) * len(shapes)
    return found


def rule_dtypes(d: Draft) -> list[Problem]:
    return [Problem("dtype", f"{d.names[k]}: dtype {quote(dt)} is not supported here.",
                    f"Choose one of {', '.join(DTYPES)}.", arg=k)
            for k, dt in enumerate(d.dtypes) if dt not in DTYPES]  # fmt: skip


def rule_sizes_fit(d: Draft) -> list[Problem]:
    return [Problem(
        "too_large",
        f"{d.names[k]} {fmt_shape(s)} has {fmt_count(math.prod(s))} elements; pmapviz plans "
        f"arrays of at most {MAX_ELEMENTS:,} (2**40) elements.", "Use smaller sizes.", arg=k,
    ) for k, s in enumerate(d.shapes) if math.prod(s) > MAX_ELEMENTS]  # fmt: skip


def rule_axes_in_range(d: Draft) -> list[Problem]:
    """Every in_axes names an existing axis (scalars have none); fills ``d.in_axes``."""
    found, norm = [], []
    for k, (shape, ax) in enumerate(zip(d.shapes, d.axes, strict=True)):
        rank, name = len(shape), d.names[k]
        if ax is not None and rank == 0:
            found.append(Problem(
                "axis_out_of_range",
                f"{name} is a scalar (shape ()), so it has no axis {ax} to map over.",
                f"Set in_axes for {name} to None to give every device the same value, "
                f"or give {name} a leading axis, e.g. shape ({d.n_devices},).", arg=k,
            ))  # fmt: skip
        elif ax is not None and not -rank <= ax < rank:
            found.append(Problem(
                "axis_out_of_range",
                f"in_axes={ax} for {name}, but {name} has shape {fmt_shape(shape)} (rank "
                f"{rank}): valid axes are 0 to {rank - 1}.",
                f"Use in_axes={rank - 1} for the last axis, 0 for the first, or None to "
                "broadcast it.", arg=k,
            ))  # fmt: skip
        norm.append(None if ax is None or rank == 0 or not -rank <= ax < rank else ax % rank)
    d.in_axes = tuple(norm)
    return found


def rule_negative_in_axes(d: Draft) -> list[Problem]:
    """JAX 0.10's pmap does not normalise a negative in_axes before sharding: it splits axis 0
    and then squeezes the axis the user named. That works only when the axis means axis 0, or
    when the mapped size is 1 (one device, nothing to split); otherwise it raises
    IndivisibleError or a squeeze ValueError. (Measured; tests/core/test_planning.py checks
    this against real pmap with the user's own axes.)"""
    found = []
    for k, (ax, norm) in enumerate(zip(d.axes, d.in_axes, strict=True)):
        if ax is None or ax >= 0 or norm in (None, 0) or d.size <= 1:
            continue
        found.append(Problem(
            "negative_in_axes",
            f"in_axes={ax} for {d.names[k]} {fmt_shape(d.shapes[k])} means axis {norm}, but "
            "pmap in JAX 0.10 does not normalise negative in_axes: it shards the wrong axis "
            "and fails with a misleading IndivisibleError or 'cannot select an axis to "
            "squeeze out' (only a negative axis that means axis 0 works).",
            f"Write the axis as a non-negative number: in_axes={norm} for {d.names[k]}.",
            arg=k, new_axes={k: norm},
        ))  # fmt: skip
    return found


def rule_some_axis_mapped(d: Draft) -> Problem | None:
    if d.mapped:
        return None
    return Problem(
        "no_mapped_axis",
        "Every argument has in_axes=None, so there is nothing to split across devices "
        "(pmap says: 'pmap requires at least one argument with a mapped axis').",
        "Set in_axes of at least one argument to an axis, e.g. 0.",
    )


def rule_mapped_sizes_equal(d: Draft) -> Problem | None:
    sizes = {size for _, size in d.mapped}
    if len(sizes) == 1:
        d.size = sizes.pop()
        return None
    detail = ", ".join(f"{d.names[k]} axis {d.in_axes[k]} has {size:,}" for k, size in d.mapped)
    first_k, first = d.mapped[0]
    return Problem(
        "mapped_sizes_differ",
        f"The mapped axes differ in size: {detail}. pmap gives each device one slice of "
        "every mapped axis, so they must all have the same size.",
        f"Make them equal (e.g. {first:,} like {d.names[first_k]}), or set in_axes to None "
        "for an argument every device should get whole.",
    )


def rule_mapped_axis_not_empty(d: Draft) -> Problem | None:
    if d.size:
        return None
    k = d.mapped[0][0]
    return Problem(
        "mapped_axis_empty",
        f"The mapped axis has size 0 (axis {d.in_axes[k]} of {d.names[k]}, shape "
        f"{fmt_shape(d.shapes[k])}): there is nothing to give the devices.",
        f"Use a size from 1 to {d.n_devices} for the mapped axis.", arg=k,
    )  # fmt: skip


def rule_mapped_axis_fits(d: Draft) -> Problem | None:
    if d.size <= d.n_devices:
        return None
    fixes, lines = {}, []
    for k, _ in d.mapped:
        new, how = _reshape_fix(d.shapes[k], d.in_axes[k], d.n_devices)
        fixes[k] = new
        lines.append(f"reshape {d.names[k]} {fmt_shape(d.shapes[k])} to {fmt_shape(new)}{how}")
    k0 = d.mapped[0][0]
    ax0 = d.in_axes[k0]
    d.size = 0  # nothing runs
    return Problem(
        "mapped_axis_too_large",
        f"Axis {ax0} of {d.names[k0]} has {d.shapes[k0][ax0]:,} elements but there are "
        f"{d.n_devices} devices; pmap puts exactly one slice of the mapped axis on each device, "
        f"so it can be at most {d.n_devices}.",
        "; ".join(lines).capitalize() + f", and keep in_axes={ax0}: each device then gets a "
        "block and can vmap over it (pmap(vmap(f))).",
        arg=k0, new_shapes=fixes,
    )  # fmt: skip


def rule_no_empty_blocks(d: Draft) -> list[Problem]:
    d.per_in = tuple(s if a is None else s[:a] + s[a + 1 :]
                     for s, a in zip(d.shapes, d.in_axes, strict=True))  # fmt: skip
    return [Problem(
        "empty_block",
        f"{d.names[k]} has shape {fmt_shape(d.shapes[k])}, so every device would get an "
        f"empty block {fmt_shape(local)} (0 elements). There is nothing to compute, and JAX "
        "0.10 handles empty blocks inconsistently (a dot over length 0 even fails to "
        "compile), so pmapviz refuses them.", "Give every axis a size of at least 1.", arg=k,
    ) for k, local in enumerate(d.per_in) if 0 in local]  # fmt: skip


def rule_axis_name_given(d: Draft) -> Problem | None:
    from pmapviz.catalog import Program

    if not isinstance(d.fn, Program) or not d.fn.needs_axis_name or d.axis_name:
        return None
    return Problem(
        "needs_axis_name",
        f"{d.fn.body('axis_name')} uses a collective (lax.psum), which needs to know which "
        "mapped axis to reduce over, but axis_name is empty.",
        "Set axis_name, e.g. 'i' (pmap(f, axis_name='i')); the collective then names the same "
        "axis.",
    )


INPUT_RULES: tuple[Rule, ...] = (
    rule_in_axes_length, rule_trees, rule_dtypes, rule_sizes_fit, rule_axes_in_range,
    rule_some_axis_mapped, rule_mapped_sizes_equal, rule_mapped_axis_not_empty,
    rule_mapped_axis_fits, rule_no_empty_blocks, rule_negative_in_axes, rule_axis_name_given,
)  # fmt: skip
"""Checked in order; the first rule that finds problems ends the plan there (later rules rely
on what the earlier ones established, e.g. a single mapped size)."""


# ---------------------------------------------------------------- tracing f
def trace_output(d: Draft) -> Problem | None:
    """Run f on abstract per-device values (``jax.eval_shape``); explain what it rejects."""
    import jax
    import jax.numpy as jnp

    from pmapviz.catalog import Program

    fn = d.fn.build(d.axis_name) if isinstance(d.fn, Program) else d.fn
    if any(not is_shape(t) for t in d.trees):
        fn = pytrees.flat_function(fn, tuple(pytrees.skeleton(t) for t in d.trees))
    structs = tuple(jax.ShapeDtypeStruct(s, jnp.dtype(t))
                    for s, t in zip(d.shapes, d.dtypes, strict=True))  # fmt: skip
    d.traced = (fn, structs)
    try:
        out, d.varies = _trace(fn, structs, d.in_axes, d.axis_name)
    except NameError as err:
        m = re.search(r"unbound axis name: (\S+?)[\s.]", str(err) + " ")
        missing = m.group(1) if m else "?"
        return Problem(
            "unbound_axis_name",
            f"f uses a collective over axis {missing!r}, but pmap's axis_name is {d.axis_name!r}.",
            f"Pass axis_name={missing!r} to pmap (or use the same name in the collective).",
        )
    except Exception as err:  # the function rejects these per-device shapes
        shown = ", ".join(f"{n} {fmt_shape(s)}" for n, s in zip(d.names, d.per_in, strict=True))
        return Problem(
            "function_rejects_shapes",
            f"Each device would call f with {shown}, and f cannot take that: {_first_line(err)}",
            "Change the shapes (or in_axes) so that one device's slice is what f expects.",
        )
    leaves, d.treedef = jax.tree.flatten(out)  # shapes are pytrees too: work on flat leaves
    d.out_leaves = [tuple(leaf.shape[1:]) for leaf in leaves]
    d.out_dtypes = d.treedef.unflatten([str(leaf.dtype) for leaf in leaves])
    return _out_axes_per_leaf(d, out)


def _out_axes_per_leaf(d: Draft, out: Any) -> Problem | None:
    """Spread out_axes (an axis, or a prefix of f's output) over the output's leaves."""

    def is_leaf(x):
        return hasattr(x, "shape")

    d.out_names = [n for n, _ in pytrees.leaves(out, "out", is_leaf)]
    try:
        d.out_leaf_axes = pytrees.broadcast(d.out_axes, pytrees.skeleton(out, is_leaf),
                                            "f's output", "out_axes")  # fmt: skip
    except (pytrees.TreeError, TypeError) as err:
        return Problem("out_axes_structure", str(err).split(": an out_axes")[0] + ".",
                       "Give out_axes one axis (e.g. 0) or a dict / tuple with exactly the "
                       "structure of f's output.")  # fmt: skip
    return None


@functools.lru_cache(maxsize=1024)
def _leaf_varies(fn: Callable, structs: tuple, in_axes: tuple, axis_name: str | None,
                 leaf: int) -> bool:  # fmt: skip
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
def _varying_none_leaves(d: Draft) -> list[str]:
    """The output leaves given out_axes=None that differ from device to device."""
    if d.out_axes is None:
        return ["f's output"] if d.varies else []
    if not d.varies:
        return []
    fn, structs = d.traced
    return [name for i, (name, o) in enumerate(zip(d.out_names, d.out_leaf_axes, strict=True))
            if o is None and _leaf_varies(fn, structs, d.in_axes, d.axis_name, i)]  # fmt: skip


def rule_out_axes_none_varies(d: Draft) -> Problem | None:
    varying = _varying_none_leaves(d)
    if not varying:
        return None
    what = "f's output differs" if varying == ["f's output"] else (
        f"{', '.join(varying)} differ{'s' if len(varying) == 1 else ''}")  # fmt: skip
    return Problem(
        "out_axes_none_varies",
        f"out_axes=None says every device returns the same value, but {what} from "
        "device to device. JAX 0.10 does not raise here: it silently returns device 0's value "
        "(jit(vmap(f)) would raise).",
        "Use out_axes=0 to stack every device's result, or make the output equal on every "
        "device with a collective such as lax.psum or lax.all_gather.",
    )


def _for_leaf(d: Draft, i: int) -> str:
    """' for out['b']' when out_axes is a prefix (several leaves), else ''."""
    return "" if pytrees.is_axis(d.out_axes) else f" for {d.out_names[i]}"


def rule_negative_out_axes(d: Draft) -> Problem | None:
    bad = [(i, o) for i, o in enumerate(d.out_leaf_axes) if o is not None and o < 0]
    if not bad:
        return None
    i, o = bad[0]
    rank = len(d.out_leaves[i])
    return Problem(
        "negative_out_axes",
        f"out_axes={o}{_for_leaf(d, i)} is negative; pmap in JAX 0.10 does not support it and "
        "returns a wrongly shaped result instead of raising.",
        f"Use the non-negative axis, e.g. out_axes={o % (rank + 1)}{_for_leaf(d, i)}.",
    )


def rule_out_axes_in_range(d: Draft) -> Problem | None:
    bad = [i for i, o in enumerate(d.out_leaf_axes)
           if o is not None and o >= 0 and o > len(d.out_leaves[i])]  # fmt: skip
    if not bad:
        return None
    i = bad[0]
    o, worst = d.out_leaf_axes[i], len(d.out_leaves[i])
    per_out = d.treedef.unflatten(d.out_leaves)
    shown = fmt_shape(d.out_leaves[0]) if len(d.out_leaves) == 1 else str(per_out)
    return Problem(
        "out_axes_out_of_range",
        f"out_axes={o}{_for_leaf(d, i)}, but each device returns shape {shown}: the stacked "
        f"result has rank {worst + 1}, so out_axes can be 0 to {worst}{_for_leaf(d, i)}.",
        f"Use out_axes between 0 and {worst}{_for_leaf(d, i)}.",
    )


def rule_output_fits(d: Draft) -> Problem | None:
    sized = [(leaf, 1 if o is None else d.size)
             for leaf, o in zip(d.out_leaves, d.out_leaf_axes, strict=True)]  # fmt: skip
    huge = [(leaf, c) for leaf, c in sized if math.prod(leaf) * c > MAX_ELEMENTS]
    if not huge:
        return None
    leaf, copies = huge[0]
    return Problem(
        "output_too_large",
        f"f's result would have {fmt_count(math.prod(leaf) * copies)} elements (each device "
        f"returns {fmt_shape(leaf)}, on {d.size} devices); pmapviz refuses outputs above "
        f"{MAX_ELEMENTS:,} (2**40) elements, far below what XLA can index.",
        "Use smaller sizes: check which axes f combines (e.g. x @ w multiplies the rows of x by "
        "the columns of w).",
    )


OUTPUT_RULES: tuple[Rule, ...] = (
    rule_out_axes_none_varies, rule_negative_out_axes, rule_out_axes_in_range, rule_output_fits,
)  # fmt: skip
"""All checked (each looks at a different property of the output)."""


def _global_out(d: Draft) -> Any:
    return d.treedef.unflatten(
        [
            leaf if o is None else leaf[:o] + (d.size,) + leaf[o:]
            for leaf, o in zip(d.out_leaves, d.out_leaf_axes, strict=True)
        ]
    )


# ---------------------------------------------------------------- plan()
def replan(fn: Callable, key: tuple) -> Plan:
    """The plan of ``fn`` for a :attr:`Plan.key` (how caches rebuild a plan from its key)."""
    trees, dtypes, in_axes, out_axes, axis_name, n = key
    thaw = pytrees.thaw
    return plan(fn, list(thaw(trees)), in_axes=thaw(in_axes), out_axes=thaw(out_axes),
                axis_name=axis_name, n_devices=n, dtypes=dtypes)  # fmt: skip


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
    bad shapes or axes: they become ``problems``, each with a ``fix``. The checks are the
    rules above, run in order (:data:`INPUT_RULES`, tracing, :data:`OUTPUT_RULES`).
    """
    d = _draft(fn, arg_shapes, in_axes, out_axes, axis_name, n_devices, dtypes)
    for rule in INPUT_RULES:
        problems = _as_list(rule(d))
        if problems:
            return _finish(d, problems)
    problems = _as_list(trace_output(d))
    if problems:
        return _finish(d, problems)
    problems = [q for rule in OUTPUT_RULES for q in _as_list(rule(d))]
    return _finish(d, problems, traced=True)


def _as_tree(x: Any) -> Any:
    """A shape (any sequence of ints) as a tuple; a dict / tuple / list of them as a tree."""
    if isinstance(x, dict):
        return {str(k): _as_tree(v) for k, v in x.items()}
    items = list(x)
    if not any(isinstance(v, (dict, list, tuple)) for v in items):  # sizes: int, np.int64, ...
        return tuple(int(v) for v in items)
    return tuple(_as_tree(v) for v in items)


def _draft(fn, arg_shapes, in_axes, out_axes, axis_name, n_devices, dtypes) -> Draft:
    shapes = tuple(_as_tree(s) for s in arg_shapes)
    n_args = len(shapes)
    if n_devices is None:
        import jax

        n_devices = jax.local_device_count()
    if dtypes is None or isinstance(dtypes, str):
        dts = (dtypes or "float32",) * n_args
    else:
        dts = tuple(str(t) for t in dtypes)
    if len(dts) != n_args:
        raise ValueError(f"dtypes has {len(dts)} entries for {n_args} arguments")
    axes = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * n_args
    names = _arg_names(fn, n_args)
    return Draft(fn=fn, shapes=shapes, names=names, dtypes=dts,
                 raw_in_axes=in_axes, axes=axes, out_axes=out_axes, axis_name=axis_name,
                 n_devices=n_devices, in_axes=tuple([None] * n_args), trees=shapes,
                 top_names=names, top_dtypes=dts, top_axes=axes)  # fmt: skip


def _about_argument(d: Draft, q: Problem) -> Problem:
    """A problem found on a leaf, told about its argument: ``arg`` becomes the argument's
    index, and an automatic fix survives only where the argument is one plain array."""
    if not d.leaf_args or q.arg is None:
        return q

    def plain(k):
        return is_shape(d.trees[d.leaf_args[k]])

    def moved(fixes):
        if not fixes or not all(plain(k) for k in fixes):
            return None
        return {d.leaf_args[k]: v for k, v in fixes.items()}

    return replace(q, arg=d.leaf_args[q.arg], new_shapes=moved(q.new_shapes),
                   new_axes=moved(q.new_axes))  # fmt: skip


def _finish(d: Draft, problems: list[Problem], traced: bool = False) -> Plan:
    notes = []
    if traced and d.size < d.n_devices:
        notes.append(
            f"The mapped axis has {d.size} element(s), so pmap uses the first {d.size} of the "
            f"{d.n_devices} devices; the other {d.n_devices - d.size} stay idle."
        )
    bad_output = any(q.code in ("negative_out_axes", "out_axes_out_of_range", "output_too_large")
                     for q in problems)  # fmt: skip
    problems = [_about_argument(d, q) for q in problems]
    return Plan(
        ok=not problems, problems=tuple(problems), n_devices=d.n_devices,
        arg_names=d.names, arg_shapes=d.shapes, dtypes=d.dtypes, out_axes=d.out_axes,
        axis_name=d.axis_name, in_axes=d.in_axes, devices_used=d.size,
        in_axes_typed=tuple(d.axes),  # as typed, even when their count is wrong
        per_device_in_shapes=d.per_in,
        out_shapes=_global_out(d) if traced and not bad_output else None,
        per_device_out_shapes=d.treedef.unflatten(d.out_leaves) if traced else None,
        out_dtypes=d.out_dtypes if traced else None,
        out_varies=d.varies, notes=tuple(notes), arg_trees=d.trees,
        leaf_args=d.leaf_args or tuple(range(len(d.trees))), in_axes_given=d.top_axes,
        given_names=d.top_names,
        out_leaf_axes=tuple(d.out_leaf_axes) if traced else (),
    )  # fmt: skip
