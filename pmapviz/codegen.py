"""Code export: complete, runnable scripts for a plan, with ``jax.pmap`` and with
``jax.shard_map``. Both define ``out``; tests run them and check they agree.

Everything the user typed reaches the script only as numbers, as ``repr()`` of a validated
name, or -- for "your own f" -- as the canonical text of an expression that
:mod:`pmapviz.expr` parsed and checked against its allow-list (``expr.python_source``); the
docstring never holds user text.
"""

from __future__ import annotations

from pmapviz.catalog import Program
from pmapviz.expr import ExprProgram, python_source
from pmapviz.planning import Plan
from pmapviz.settings import fmt_int, fmt_shape

_HEADER = '''"""{title}

Exported by pmapviz for JAX 0.10: {n} emulated CPU device(s).
On GPUs or TPUs, delete the jax.config line to use the real devices.
"""
import jax

jax.config.update("jax_num_cpu_devices", {n})  # before any other JAX call

import jax.numpy as jnp
import numpy as np
from jax import lax
'''


def _inputs(p: Plan) -> list[str]:
    lines = ["", "rng = np.random.default_rng(0)"]
    for name, shape, dt in zip(p.arg_names, p.arg_shapes, p.dtypes, strict=True):
        shp = fmt_shape(shape)
        if dt.startswith("int"):
            expr = f"rng.integers(-9, 10, size={shp}).astype(np.{dt})"
        elif dt == "bool":
            expr = f"rng.random({shp}) > 0.5"
        elif dt == "bfloat16":
            expr = f"rng.standard_normal({shp}).astype(jnp.bfloat16)"
        else:
            expr = f"rng.standard_normal({shp}).astype(np.{dt})"
        lines.append(f"{name} = {expr}")
    return lines


def _fn(program: Program, axis_name: str | None) -> list[str]:
    return ["", "", *python_source(program, axis_name).splitlines()]


def _title(program: Program) -> str:
    """The script's docstring title: never the user's text (it could close the docstring)."""
    return "your own f (see def f below)" if isinstance(program, ExprProgram) else program.label


def _reshape_back(p: Plan) -> list[str]:
    per = p.per_device_out_shapes
    if p.out_axes is None:
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


def pmap_script(program: Program, p: Plan) -> str:
    """The settings of ``p`` as a runnable ``jax.pmap`` script."""
    if not p.ok:
        raise ValueError("export needs a valid plan")
    typed = p.in_axes_typed or p.in_axes  # the user's own axes, as they would write them
    in_axes = "(" + ", ".join(repr(a) for a in typed) + ("," if len(typed) == 1 else "") + ")"
    args = ", ".join(p.arg_names)
    lines = [
        _HEADER.format(title=f"pmap: {_title(program)}", n=p.n_devices).rstrip("\n"),
        *_fn(program, p.axis_name),
        *_inputs(p),
        "",
        f"# pmap compiles f once, runs one copy per device on the first {p.devices_used} "
        "device(s), and stacks the results.",
        f"out = jax.pmap(f, in_axes={in_axes}, out_axes={p.out_axes!r}, "
        f"axis_name={p.axis_name!r})({args})",
        f"print(out.shape, out.dtype)  # {_shape_comment(p.out_shapes)}",
        *_reshape_back(p),
    ]
    return "\n".join(lines) + "\n"


def _shape_comment(shapes) -> str:
    return fmt_shape(shapes) if _is_shape(shapes) else str(shapes)


def _is_shape(x) -> bool:
    return isinstance(x, tuple) and all(isinstance(d, int) for d in x)


def _spec(axis: int | None, name: str) -> str:
    if axis is None:
        return "P()"
    return "P(" + ", ".join(["None"] * axis + [repr(name)]) + ")"


def one_output(p: Plan) -> bool:
    """Does f return one array (what the shard_map export and live runs support)?"""
    return _is_shape(p.out_shapes)


def shard_map_script(program: Program, p: Plan) -> str:
    """The same computation with ``jax.shard_map`` (rank-preserving: blocks keep the axis)."""
    if not p.ok:
        raise ValueError("export needs a valid plan")
    if not _is_shape(p.out_shapes):
        raise ValueError("shard_map export supports one output array")
    name = p.axis_name or "i"
    args = ", ".join(p.arg_names)
    squeeze = [
        f"    {n} = {n}.squeeze({a})  # this device's block keeps axis {a} (size 1); drop it"
        for n, a in zip(p.arg_names, p.in_axes, strict=True)
        if a is not None
    ]
    result = (
        f"    return jnp.expand_dims(f({args}), {p.out_axes})  # put the device axis back"
        if p.out_axes is not None
        else f"    return f({args})  # the same on every device: out_specs=P()"
    )
    in_specs = ", ".join(_spec(a, name) for a in p.in_axes) + ("," if len(p.in_axes) == 1 else "")
    lines = [
        _HEADER.format(title=f"shard_map: {_title(program)}", n=p.n_devices).rstrip("\n"),
        "from jax.sharding import Mesh, PartitionSpec as P",
        *_fn(program, name),
        "",
        "",
        "# shard_map is rank-preserving: each device sees its block WITH the mapped axis",
        "# (size 1 here), where pmap removes it. So squeeze it off, call f, put it back.",
        f"def f_block({args}):",
        *squeeze,
        result,
        *_inputs(p),
        "",
        f"mesh = Mesh(np.array(jax.devices()[:{p.devices_used}]), ({name!r},))",
        "out = jax.jit(jax.shard_map(",
        f"    f_block, mesh=mesh, in_specs=({in_specs}), out_specs={_spec(p.out_axes, name)},",
        f"))({args})",
        f"print(out.shape, out.dtype)  # {fmt_shape(p.out_shapes)}, as with pmap",
        *_reshape_back(p),
    ]
    return "\n".join(lines) + "\n"
