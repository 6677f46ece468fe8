"""f traced on the per-device blocks, and the plan's rules on its output.

:func:`infer_output` traces the per-device program with ``jax.vmap(f, axis_name=...)`` on
abstract values (``jax.eval_shape``), which has pmap's shape semantics (and binds the same
collectives) without needing the devices, reads in the same trace which output leaves vmap
batched (they differ from device to device), and spreads out_axes over f's output; or it returns
the problem, when f rejects those values. The rules on the output (``rule_*``,
:data:`OUTPUT_RULES`) then check what pmap adds: out_axes=None only for outputs equal on every
device, no negative out_axes, out_axes in range, and an output of at most 2**40 elements.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.base.valueparse import MAX_ELEMENTS
from pmapviz.core.base.valuetext import fmt_count, fmt_shape, whole_message
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planfacts import Normalised, OutLeaf, Output, Problem, Rule


# ---------------------------------------------------------------- tracing f
@functools.lru_cache(maxsize=1024)
def _trace(fn: Callable, structs: tuple, in_axes: tuple, axis_name: str | None):
    """Global output (device axis at 0) and, per output leaf, whether it differs from device to
    device: JAX's own batching says so, read in the same trace (:func:`_batched_flags`)."""
    import jax

    flags: dict[int, bool] = {}
    out = jax.eval_shape(
        jax.vmap(_batched_flags(fn, flags), in_axes=in_axes, out_axes=0, axis_name=axis_name),
        *structs,
    )
    return out, tuple(flags.get(i, False) for i in range(len(jax.tree.leaves(out))))


def _batched_flags(fn: Callable, flags: dict[int, bool]) -> Callable:
    """f with each output array passed through an identity whose batching rule
    (``jax.custom_batching.custom_vmap``) records into ``flags[i]`` whether vmap batched leaf
    i: it differs from device to device exactly when vmap would refuse out_axes=None for it.
    A leaf vmap never batched never reaches its rule (False). One trace instead of a second
    one with out_axes=None whose refusal, an exception, JAX filters frame by frame (together
    5 ms, against 2 ms for one trace, under Streamlit's deep stack)."""
    import jax

    def probe(i: int) -> Callable:
        @jax.custom_batching.custom_vmap
        def same(x):
            return x

        @same.def_vmap
        def rule(axis_size, in_batched, x):
            flags[i] = bool(in_batched[0])
            return x, in_batched[0]

        return same

    def traced(*xs):
        leaves, tree = jax.tree.flatten(fn(*xs))
        marked = [probe(i)(v) if isinstance(v, jax.Array) else v for i, v in enumerate(leaves)]
        return jax.tree.unflatten(tree, marked)

    return traced


def _rejected(n: Normalised, err: Exception) -> Problem:
    """f rejects the per-device blocks: JAX's message whole, and the fix it points at."""
    shown = ", ".join(f"{leaf.name} {fmt_shape(leaf.local_shape)}" for leaf in n.leaves)
    message = f"Each device would call f with {shown}, and f cannot take that: "
    message += whole_message(err)
    if any(w in str(err) for w in SHARD_MAP_WORDS):
        return Problem("function_rejects_shapes", message, SHARD_MAP_ONLY)
    if "vmap got inconsistent sizes" in str(err) and (fix := _inner_vmap_fix(n)):
        return Problem("function_rejects_shapes", message, fix[0], new_shapes=fix[1])
    return Problem(
        "function_rejects_shapes",
        message,
        "Change the shapes (or in_axes) so that one device's slice is what f expects.",
    )


def _inner_vmap_fix(n: Normalised) -> tuple[str, dict | None] | None:
    """f's own vmap maps the first axis of each device's block: those sizes must match. The
    fix makes each the first argument's size there (in the argument's own shape: the block's
    first axis is the argument's axis 0, or 1 where 0 is the one pmap maps)."""
    blocks = [leaf for leaf in n.leaves if leaf.local_shape]
    if len({leaf.local_shape[0] for leaf in blocks}) <= 1:
        return None
    size = blocks[0].local_shape[0]
    fixes = {}
    for k, leaf in enumerate(n.leaves):
        if leaf.local_shape and leaf.local_shape[0] != size:
            g = 1 if leaf.axis == 0 else 0
            fixes[k] = leaf.shape[:g] + (size,) + leaf.shape[g + 1 :]
    sizes = ", ".join(f"{leaf.name} {leaf.local_shape[0]:,}" for leaf in blocks)
    changes = "; ".join(
        f"{n.leaves[k].name} {fmt_shape(n.leaves[k].shape)} -> {fmt_shape(v)}"
        for k, v in fixes.items()
    )
    return (
        f"f vmaps over the first axis of each device's block, so those sizes must be equal "
        f"({sizes}). Make them {size:,}, like {blocks[0].name}: {changes}.",
        n.per_argument(fixes),
    )


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
        return _rejected(n, err)
    flat, treedef = jax.tree.flatten(out)  # shapes are pytrees too: work on flat leaves
    axes, unfit = _out_axes_per_leaf(n.out_axes, out)
    leaves = tuple(
        OutLeaf(name, tuple(a.shape[1:]), str(a.dtype), ax, differs)
        for name, a, ax, differs in zip(_out_names(out), flat, axes, varies, strict=True)
    )
    return Output(treedef, leaves, unfit)


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
    return [o.name for o in out.leaves if o.axis is None and o.varies]


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
