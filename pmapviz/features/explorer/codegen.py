"""Code export: complete, runnable scripts for a plan, with ``jax.pmap``, with
``jax.shard_map`` and with ``jax.smap``. Each defines ``out``; tests run them and check they
agree.

Everything the user typed reaches the script only as numbers, as ``repr()`` of a validated
name, or -- for "your own f" -- as the canonical text of an expression that
:mod:`pmapviz.core.expressions.expr` parsed and checked against its allow-list
(``expr.python_source``); the
docstring never holds user text.
"""

from __future__ import annotations

from pmapviz.core.base import pytrees
from pmapviz.core.base.valuetext import fmt_int, fmt_shape
from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.expressions.expr import ExprProgram, python_source
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan

_HEADER = '''"""{title}

{about}
"""
import jax

{setup}

import jax.numpy as jnp
import numpy as np
from jax import lax
'''


def header(title: str, n: int, facts: devicefacts.Facts | None) -> str:
    """The script's docstring and device set-up, for the platform it was exported on: on CPU
    it emulates ``n`` devices; on GPUs or TPUs it uses the real ones (the emulation line is
    there, commented out, for a machine with fewer)."""
    about, setup = devicewords.export_header(facts or devicefacts.facts(), n)
    return _HEADER.format(title=title, about=about, setup=setup).rstrip("\n")


def _per_argument(p: Plan, leaf_texts: list[str]) -> list[tuple[str, str]]:
    """``(argument name, source)``: each argument's leaves' texts put back into its tree
    (a plain array argument is its one leaf's text)."""
    out = []
    for arg in p.arguments:
        mine = [
            t for t, leaf in zip(leaf_texts, p.leaves, strict=True) if leaf.argument == arg.index
        ]
        out.append((arg.name, pytrees.render(arg.skeleton, mine)))
    return out


def _names(p: Plan) -> tuple[str, ...]:
    return tuple(a.name for a in p.arguments)


def _random(shape: tuple[int, ...], dt: str) -> str:
    shp = fmt_shape(shape)
    if dt.startswith("int"):
        return f"rng.integers(-9, 10, size={shp}).astype(np.{dt})"
    if dt == "bool":
        return f"rng.random({shp}) > 0.5"
    if dt == "bfloat16":
        return f"rng.standard_normal({shp}).astype(jnp.bfloat16)"
    return f"rng.standard_normal({shp}).astype(np.{dt})"


def _inputs(p: Plan) -> list[str]:
    """One random input per leaf, in the plan's leaf order (so both scripts draw the same
    numbers), put together into each argument's tree."""
    texts = [_random(leaf.shape, leaf.dtype) for leaf in p.leaves]
    return [
        "",
        "rng = np.random.default_rng(0)",
        *(f"{name} = {src}" for name, src in _per_argument(p, texts)),
    ]


def _in_axes_text(p: Plan, compact: bool = False) -> str:
    """in_axes as the user wrote them: per argument, an axis or a pytree prefix (with
    ``compact``, one argument's plain axis bare, as in ``in_axes=-1``)."""
    typed = p.in_axes_given
    if compact and len(typed) == 1 and pytrees.is_axis(typed[0]):
        return repr(typed[0])
    return (
        "("
        + ", ".join(pytrees.fmt_prefix(a) for a in typed)
        + ("," if len(typed) == 1 else "")
        + ")"
    )


def pmap_call(p: Plan, compact: bool = False) -> str:
    """``jax.pmap(f, in_axes=..., out_axes=..., axis_name=...)`` as the user would write it."""
    return (
        f"jax.pmap(f, in_axes={_in_axes_text(p, compact)}, "
        f"out_axes={pytrees.fmt_prefix(p.out_axes)}, axis_name={p.axis_name!r})"
    )


def _print_out(p: Plan) -> str:
    if _is_shape(p.out_shapes):
        return f"print(out.shape, out.dtype)  # {fmt_shape(p.out_shapes)}"
    return f"print(jax.tree.map(lambda a: a.shape, out))  # {p.out_shapes}"


def _fn(program: Program, axis_name: str | None) -> list[str]:
    return ["", "", *python_source(program, axis_name).splitlines()]


def _title(program: Program) -> str:
    """The script's docstring title: never the user's text (it could close the docstring)."""
    return "your own f (see def f below)" if isinstance(program, ExprProgram) else program.label


def _out_leaf_axes(p: Plan) -> list:
    return list(p.out_leaf_axes) or [p.out_axes]


def _block_result(p: Plan, args: str) -> list[str]:
    """f_block's return: each output leaf gets its device axis back (a leaf with
    out_axes=None is the same on every device: its out_spec is P())."""
    if _is_shape(p.out_shapes):
        if p.out_axes is None:
            return [f"    return f({args})  # the same on every device: out_specs=P()"]
        return [f"    return jnp.expand_dims(f({args}), {p.out_axes})  # put the device axis back"]
    skel = pytrees.skeleton(p.out_shapes)
    names = [n for n, _ in pytrees.leaves(p.out_shapes, "o")]
    back = [
        n if a is None else f"jnp.expand_dims({n}, {a})"
        for n, a in zip(names, _out_leaf_axes(p), strict=True)
    ]
    return [
        f"    o = f({args})",
        f"    return {pytrees.render(skel, back)}  # each leaf gets its device axis back",
    ]


def _out_specs(p: Plan, name: str) -> str:
    if _is_shape(p.out_shapes):
        return _spec(p.out_axes, name)
    specs = [_spec(a, name) for a in _out_leaf_axes(p)]
    return pytrees.render(pytrees.skeleton(p.out_shapes), specs)


def _reshape_back(p: Plan) -> list[str]:
    per = p.per_device_out_shapes
    if p.out_axes is None or not pytrees.is_axis(p.out_axes):
        return []
    o = p.out_axes
    if not _is_shape(per) or o + 1 >= len(p.out_shapes):
        return []  # a pytree, or no block axis after the device axis: nothing to merge
    merged = p.out_shapes[:o] + (p.out_shapes[o] * p.out_shapes[o + 1],) + p.out_shapes[o + 2 :]
    return [
        "",
        f"# Reshape back: merge the device axis ({p.devices_used}) with the block axis "
        f"after it ({fmt_int(p.out_shapes[o + 1])}).",
        f"flat = out.reshape({fmt_shape(merged)})",
        f"print(flat.shape)  # {fmt_shape(merged)}",
    ]


def pmap_script(program: Program, p: Plan, facts: devicefacts.Facts | None = None) -> str:
    """The settings of ``p`` as a runnable ``jax.pmap`` script (for this server's platform,
    or ``facts``'s)."""
    if not p.ok:
        raise ValueError("export needs a valid plan")
    args = ", ".join(_names(p))
    lines = [
        header(f"pmap: {_title(program)}", p.n_devices, facts),
        *_fn(program, p.axis_name),
        *_inputs(p),
        "",
        f"# pmap compiles f once, runs one copy per device on the first {p.devices_used} "
        "device(s), and stacks the results.",
        f"out = {pmap_call(p)}({args})",  # the user's own axes, as they would write them
        _print_out(p),
        *_reshape_back(p),
    ]
    return "\n".join(lines) + "\n"


def _is_shape(x) -> bool:
    return isinstance(x, tuple) and all(isinstance(d, int) for d in x)


def _spec(axis: int | None, name: str) -> str:
    if axis is None:
        return "P()"
    return "P(" + ", ".join(["None"] * axis + [repr(name)]) + ")"


def _squeezes(p: Plan, comment: str) -> list[str]:
    """The lines of a per-block function that drop each mapped argument's block axis."""
    dropped = [
        leaf.name if leaf.axis is None else f"{leaf.name}.squeeze({leaf.axis})" for leaf in p.leaves
    ]
    return [f"    {n} = {src}  # {comment}" for n, src in _per_argument(p, dropped) if src != n]


def shard_map_script(program: Program, p: Plan, facts: devicefacts.Facts | None = None) -> str:
    """The same computation with ``jax.shard_map`` (rank-preserving: blocks keep the axis)."""
    if not p.ok:
        raise ValueError("export needs a valid plan")
    name = p.axis_name or "i"
    args = ", ".join(_names(p))
    squeeze = _squeezes(p, "this device's block keeps the mapped axis (size 1); drop it")
    specs = _per_argument(p, [_spec(leaf.axis, name) for leaf in p.leaves])
    in_specs = ", ".join(src for _, src in specs) + ("," if len(specs) == 1 else "")
    lines = [
        header(f"shard_map: {_title(program)}", p.n_devices, facts),
        "from jax.sharding import Mesh, PartitionSpec as P",
        *_fn(program, name),
        "",
        "",
        "# shard_map is rank-preserving: each device sees its block WITH the mapped axis",
        "# (size 1 here), where pmap removes it. So squeeze it off, call f, put it back.",
        f"def f_block({args}):",
        *squeeze,
        *_block_result(p, args),
        *_inputs(p),
        "",
        f"mesh = Mesh(np.array(jax.devices()[:{p.devices_used}]), ({name!r},))",
        "out = jax.jit(jax.shard_map(",
        f"    f_block, mesh=mesh, in_specs=({in_specs}), out_specs={_out_specs(p, name)},",
        f"))({args})",
        _print_out(p) + ", as with pmap",
        *_reshape_back(p),
    ]
    return "\n".join(lines) + "\n"


SMAP_MODES = ("Explicit", "Auto")


def _smap_mesh(p: Plan, name: str, mode: str) -> list[str]:
    n = p.devices_used
    if mode == "Auto":
        return [
            f"# A one-axis mesh of the {n} device(s) pmap uses, its axis Auto: the types carry",
            "# no sharding, and smap splits plain inputs as in_axes says.",
            f"mesh = jax.make_mesh(({n},), ({name!r},), axis_types=(AxisType.Auto,), "
            f"devices=jax.devices()[:{n}])",
        ]
    return [
        f"# A one-axis mesh of the {n} device(s) pmap uses. Its axis is Explicit (make_mesh's",
        "# default): the sharding is part of each array's type, so every mapped input is",
        "# resharded to its PartitionSpec first (smap refuses one that is not).",
        f"mesh = jax.make_mesh(({n},), ({name!r},), devices=jax.devices()[:{n}])",
    ]


def _reshards(p: Plan, name: str) -> list[str]:
    texts = [
        leaf.name if leaf.axis is None else f"jax.reshard({leaf.name}, {_spec(leaf.axis, name)})"
        for leaf in p.leaves
    ]
    return [f"    {n} = {src}" for n, src in _per_argument(p, texts) if "jax.reshard" in src]


def smap_script(
    program: Program, p: Plan, facts: devicefacts.Facts | None = None, mode: str = "Explicit"
) -> str:
    """The same computation with ``jax.smap`` under ``jax.set_mesh`` on a one-axis mesh of the
    devices pmap uses, its axis ``mode`` (Explicit: make_mesh's default, each mapped input
    ``jax.reshard``-ed first; Auto: in_axes alone split the inputs). Each instance gets a
    block of one element of the mapped axis, which f_block squeezes off and puts back."""
    if not p.ok:
        raise ValueError("export needs a valid plan")
    if mode not in SMAP_MODES:
        raise ValueError(f"mode is one of {', '.join(SMAP_MODES)}")
    name = p.axis_name or "i"
    args = ", ".join(_names(p))
    squeeze = _squeezes(p, "this device's block of the mapped axis (one element): drop it")
    lines = [
        header(f"smap: {_title(program)}", p.n_devices, facts),
        "from jax.sharding import AxisType, PartitionSpec as P",
        *_fn(program, name),
        "",
        "",
        "# smap hands each instance a BLOCK of the mapped axis (here one element per device,",
        "# as under pmap) and keeps the axis, where pmap removes it: squeeze it off, call f,",
        "# put it back (what pmap itself does inside, as its jaxpr shows).",
        f"def f_block({args}):",
        *squeeze,
        *_block_result(p, args),
        *_inputs(p),
        "",
        *_smap_mesh(p, name, mode),
        "with jax.set_mesh(mesh):",
        *(_reshards(p, name) if mode == "Explicit" else []),
        f"    out = jax.smap(f_block, in_axes={_in_axes_text(p)}, "
        f"out_axes={pytrees.fmt_prefix(p.out_axes)}, axis_name={name!r})({args})",
        "    print(jax.typeof(out))  # smap's output type, as JAX prints it"
        if _is_shape(p.out_shapes)
        else "    print(jax.tree.map(jax.typeof, out))  # smap's output types, as JAX prints them",
        _print_out(p) + ", as with pmap",
        *_reshape_back(p),
    ]
    return "\n".join(lines) + "\n"
