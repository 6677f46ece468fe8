"""The explorer's settings as a ``jax.smap`` call, both as a function JAX traces and runs and as
the lines of code a person writes (the same choices, so the words JAX says about one are the
words the other gets).

``jax.smap(f_block, in_axes, out_axes, axis_name)`` hands each instance a BLOCK of the mapped
axis, where pmap hands f one slice with the axis removed. So the per-device function is:

* a block of one element (the mesh has one device per element, as pmap has): squeeze the axis
  off, call f, put the axis back: exactly what pmap does inside its shard_map (see its jaxpr,
  :mod:`pmapviz.features.smap.pmappipeline`);
* a block of several (a mapped axis larger than the mesh, which pmap refuses): ``jax.vmap`` f
  over the block, pmap(vmap(f)) in one call.

The call runs under ``jax.set_mesh`` on a one-axis mesh named after pmap's axis_name ('i' when
it has none); with Explicit axes each mapped input is first ``jax.reshard``-ed to its
PartitionSpec. Each of those can be switched off (:mod:`pmapviz.features.smap.smapsettings`),
to meet JAX's refusal.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.features.smap.pmappipeline import (
    Pipeline,
    abstract_args,
    function_of,
    leaf_names,
    not_here,
    trace,
)
from pmapviz.features.smap.smapsettings import SmapSettings


def axis_name(plan: Plan) -> str:
    """The mesh axis: pmap's axis_name, or 'i' when it has none (a mesh axis has a name)."""
    return plan.axis_name or "i"


def mapped_size(plan: Plan) -> int | None:
    """The size of the mapped axes when they agree (None when they differ or none is known)."""
    sizes = {leaf.shape[leaf.axis] for leaf in plan.leaves if leaf.axis is not None}
    return next(iter(sizes)) if len(sizes) == 1 else None


def block(plan: Plan, mesh_devices: int) -> int | None:
    """The block of the mapped axis each instance gets (None when the mesh does not divide it)."""
    size = mapped_size(plan)
    if size is None or mesh_devices < 1 or size % mesh_devices:
        return None
    return size // mesh_devices


def spec(axis: int | None, ndim: int, name: str) -> tuple:
    """The PartitionSpec entries of an array of ``ndim`` axes mapped at ``axis`` (may be
    negative): ``name`` at that axis (``()`` when not mapped)."""
    if axis is None:
        return ()
    return (None,) * (axis % ndim) + (name,)


# ---------------------------------------------------------------- the call, as a function
def _on_prefix(prefix: Any, tree: Any, leaf_fn: Callable[[Any, int], Any]) -> Any:
    """``leaf_fn(leaf, axis)`` on every leaf of ``tree`` that ``prefix`` maps (its in_axes or
    out_axes prefix); a leaf it does not map (None) as it is."""
    import jax

    def one(ax: Any, sub: Any) -> Any:
        return sub if ax is None else jax.tree.map(lambda leaf: leaf_fn(leaf, ax), sub)

    return jax.tree.map(one, prefix, tree, is_leaf=lambda x: x is None)


def block_function(f: Callable, plan: Plan, size: int | None, names: tuple[str, ...]) -> Callable:
    """``f_block``, smap's per-device function (see the module doc), with f's parameter names
    (so JAX's words name them as the script does)."""
    import jax
    import jax.numpy as jnp

    in_axes, out_axes = tuple(plan.in_axes_given), plan.out_axes
    if size == 1:

        def f_block(*blocks):
            args = [_on_prefix(a, b, jnp.squeeze) for a, b in zip(in_axes, blocks, strict=True)]
            return _on_prefix(out_axes, f(*args), jnp.expand_dims)

    else:

        def f_block(*blocks):
            return jax.vmap(f, in_axes=in_axes, out_axes=out_axes)(*blocks)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    f_block.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    return f_block


def make_mesh(s: SmapSettings, m: int, name: str):
    """The one-axis mesh of this process's first ``m`` devices, axes of ``s.mode``."""
    import jax
    from jax.sharding import AxisType

    kind = AxisType.Explicit if s.explicit else AxisType.Auto
    devices = devicefacts.local_devices_for_work()[:m]
    return jax.make_mesh((m,), (name,), axis_types=(kind,), devices=devices)


def mesh_context(s: SmapSettings, mesh: Any):
    """``jax.set_mesh(mesh)``, or nothing when the call leaves it out."""
    import jax

    return jax.set_mesh(mesh) if s.set_mesh else contextlib.nullcontext()


def place(plan: Plan, s: SmapSettings, args: list, mesh: Any) -> list:
    """The inputs as the call hands them to smap: with Explicit axes each mapped leaf
    ``jax.reshard``-ed to its PartitionSpec (``reshard``); else as they are."""
    import jax
    from jax.sharding import PartitionSpec

    if not s.resharded:
        return list(args)
    name = axis_name(plan)

    def one(leaf: Any, ax: int) -> Any:
        return jax.reshard(leaf, PartitionSpec(*spec(ax, leaf.ndim, name)))

    return [_on_prefix(a, x, one) for a, x in zip(plan.in_axes_given, args, strict=True)]


def smap_of(fn: Program | Callable, plan: Plan, s: SmapSettings, m: int) -> Callable:
    """``jax.smap(f_block, in_axes=..., out_axes=..., axis_name=...)`` for these settings."""
    import jax

    name = axis_name(plan)
    f = function_of(fn, name)
    f_block = block_function(f, plan, block(plan, m), tuple(a.name for a in plan.arguments))
    kwargs = {"out_axes": plan.out_axes, "axis_name": name}
    if s.in_axes:
        kwargs["in_axes"] = tuple(plan.in_axes_given)
    return jax.smap(f_block, **kwargs)


def smap_pipeline(fn: Program | Callable, plan: Plan, s: SmapSettings) -> Pipeline:
    """The whole call (reshard, then smap) traced on abstract inputs under the mesh as set: its
    pipeline, or JAX's refusal in its own words, exactly what the script meets (nothing is
    allocated)."""
    devices = devicefacts.local_devices_for_work()
    m = s.devices_for(plan.n_devices)
    if not 1 <= m <= len(devices):
        return Pipeline("smap", refused=not_here(m, len(devices)))
    mesh = make_mesh(s, m, axis_name(plan))
    args = abstract_args(plan)
    names = leaf_names([a.name for a in plan.arguments], args)
    with mesh_context(s, mesh):
        sm = smap_of(fn, plan, s, m)
        return trace("smap", lambda *xs: sm(*place(plan, s, list(xs), mesh)), args, names)


def vmap_pipeline(fn: Program | Callable, plan: Plan) -> Pipeline:
    """``jax.vmap(f)`` with the settings as given, traced on abstract inputs: jit(vmap)'s
    output shapes (the reference the runs are checked against), or its refusal (then f itself
    refuses these settings, whatever maps it)."""
    import jax

    name = axis_name(plan)
    f = function_of(fn, name)
    vm = jax.vmap(f, in_axes=tuple(plan.in_axes_given), out_axes=plan.out_axes, axis_name=name)
    args = abstract_args(plan)
    return trace("vmap", vm, args, leaf_names([a.name for a in plan.arguments], args))


# ---------------------------------------------------------------- the call, as code
def spec_text(leaf, name: str) -> str:
    """A leaf's PartitionSpec as written: ``P('i')``, ``P(None, 'i')``."""
    return f"P({', '.join(map(repr, spec(leaf.axis, len(leaf.shape), name)))})"


def _tuple_text(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def mesh_line(s: SmapSettings, m: int, name: str, n_local: int | None = None) -> str:
    """``mesh = jax.make_mesh(...)`` as written (the devices named when not all are used)."""
    args = f"({m},), ({name!r},)"
    if not s.explicit:
        args += ", axis_types=(AxisType.Auto,)"
    if n_local is None or m < n_local:
        args += f", devices=jax.devices()[:{m}]"
    note = "Explicit axes: make_mesh's default" if s.explicit else "Auto axes"
    return f"mesh = jax.make_mesh({args})  # {note}"


def reshard_lines(plan: Plan, s: SmapSettings) -> list[str]:
    """One ``x = jax.reshard(x, P('i'))`` per argument with a mapped leaf (a tree: rebuilt
    with its mapped leaves resharded)."""
    if not s.resharded:
        return []
    name, lines = axis_name(plan), []
    for arg in plan.arguments:
        texts = [
            leaf.name if leaf.axis is None else f"jax.reshard({leaf.name}, {spec_text(leaf, name)})"
            for leaf in plan.leaves
            if leaf.argument == arg.index
        ]
        source = pytrees.render(arg.skeleton, texts)
        if "jax.reshard" in source:  # an argument with no mapped leaf is passed as it is
            lines.append(f"{arg.name} = {source}")
    return lines


def call_text(plan: Plan, s: SmapSettings) -> str:
    """``jax.smap(f_block, in_axes=..., out_axes=..., axis_name=...)`` as written."""
    parts = ["f_block"]
    if s.in_axes:
        parts.append("in_axes=" + _tuple_text([pytrees.fmt_prefix(a) for a in plan.in_axes_given]))
    parts += [f"out_axes={pytrees.fmt_prefix(plan.out_axes)}", f"axis_name={axis_name(plan)!r}"]
    return f"jax.smap({', '.join(parts)})"


def call_lines(plan: Plan, s: SmapSettings, n_local: int | None = None) -> list[str]:
    """The mesh, the context, the reshards and the call, as the script writes them."""
    m = s.devices_for(plan.n_devices)
    args = ", ".join(a.name for a in plan.arguments)
    body = [*reshard_lines(plan, s), f"out = {call_text(plan, s)}({args})"]
    if s.set_mesh:
        body = ["with jax.set_mesh(mesh):", *(f"    {line}" for line in body)]
    return [mesh_line(s, m, axis_name(plan), n_local), *body]
