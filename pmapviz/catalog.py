"""The catalog of functions a user can pmap. No arbitrary code: only these.

Each entry has the real function (``build(axis_name)``) and the source line shown in code
exports (``source``). Tests run the exported scripts and compare them with ``build``, so the
two cannot drift apart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    key: str
    label: str
    arg_names: tuple[str, ...]
    source: str  # body of f in Python, {axis} stands for the axis name literal
    description: str
    default_shapes: tuple[tuple[int, ...], ...]
    default_in_axes: tuple[int | None, ...]
    needs_axis_name: bool = False
    default_out_axes: int | None = 0

    @property
    def n_args(self) -> int:
        return len(self.arg_names)

    def signature(self) -> str:
        return f"def f({', '.join(self.arg_names)}):"

    def body(self, axis_name: str | None) -> str:
        return self.source.format(axis=repr(axis_name))

    def build(self, axis_name: str | None = None) -> Callable:
        """The real function, for per-device values (the mapped axis already removed).
        The same object for the same arguments, so traces and compilations can be cached."""
        return _build(self.key, axis_name)


@functools.lru_cache(maxsize=256)
def _build(key: str, axis_name: str | None) -> Callable:
    return _BUILDERS[key](axis_name)


def _builders() -> dict[str, Callable[[str | None], Callable]]:
    """One maker per entry; each imports JAX only when a function is first built."""

    def double(_):
        return lambda x: x * 2

    def add(_):
        return lambda x, y: x + y

    def vdot(_):
        import jax.numpy as jnp

        return lambda x, y: jnp.vdot(x, y)

    def batched_dot(_):
        import jax
        import jax.numpy as jnp

        return lambda x, y: jax.vmap(jnp.dot)(x, y)

    def matmul(_):
        return lambda x, w: x @ w

    def local_sum(_):
        import jax.numpy as jnp

        return lambda x: jnp.sum(x)

    def normalise(axis):
        import jax.numpy as jnp
        from jax import lax

        return lambda x: x / lax.psum(jnp.sum(x), axis)

    def global_sum(axis):
        import jax.numpy as jnp
        from jax import lax

        return lambda x: lax.psum(jnp.sum(x), axis)

    return {
        "double": double,
        "add": add,
        "vdot": vdot,
        "batched_dot": batched_dot,
        "matmul": matmul,
        "local_sum": local_sum,
        "normalise": normalise,
        "global_sum": global_sum,
    }


_BUILDERS = _builders()

PROGRAMS: tuple[Program, ...] = (
    Program("double", "Elementwise: x * 2", ("x",), "x * 2",
            "Each device doubles its own block.", ((8, 4),), (0,)),
    Program("add", "Sum of two arrays: x + y", ("x", "y"), "x + y",
            "Each device adds its blocks of x and y.", ((8, 4), (8, 4)), (0, 0)),
    Program("vdot", "Dot of two vectors: jnp.vdot(x, y)", ("x", "y"), "jnp.vdot(x, y)",
            "One dot product per device: each device gets one pair of vectors.",
            ((8, 3), (8, 3)), (0, 0)),
    Program("batched_dot", "Batched dot: jax.vmap(jnp.dot)(x, y)", ("x", "y"),
            "jax.vmap(jnp.dot)(x, y)",
            "The seed's pmap(vmap(dot)): each device takes a block of pairs of 3-vectors "
            "and vmap computes their dot products.",
            ((8, 1_250_000, 3), (8, 1_250_000, 3)), (0, 0)),
    Program("matmul", "Matrix multiply: x @ w", ("x", "w"), "x @ w",
            "Each device multiplies its block of x by w; with in_axes None for w, every "
            "device gets all of w (broadcast).", ((8, 4, 5), (5, 2)), (0, None)),
    Program("local_sum", "Sum over the local block: jnp.sum(x)", ("x",), "jnp.sum(x)",
            "Each device sums only its own block; no communication.", ((8, 100),), (0,)),
    Program("normalise", "Normalise by a global sum: x / psum(sum(x))", ("x",),
            "x / lax.psum(jnp.sum(x), {axis})",
            "Each device divides its block by the sum over all devices: a collective "
            "(psum) over axis_name.", ((8, 4),), (0,), needs_axis_name=True),
    Program("global_sum", "Global sum: psum(sum(x))", ("x",),
            "lax.psum(jnp.sum(x), {axis})",
            "Every device ends with the same total, so out_axes=None is safe here.",
            ((8, 4),), (0,), needs_axis_name=True, default_out_axes=None),
)  # fmt: skip

BY_KEY = {p.key: p for p in PROGRAMS}


def get(key: str) -> Program:
    return BY_KEY[key]


# ---------------------------------------------------------------- explorer settings
# The explorer's settings are strings (as typed), so they travel through widgets and URLs
# unchanged: fn, s0.. (shapes), d0.. (dtypes), a0.. (in_axes), out (out_axes), name.
MAX_ARGS = max(p.n_args for p in PROGRAMS)


def _shape_text(shape: tuple[int, ...]) -> str:
    return ", ".join(f"{d:_}" for d in shape) if shape else "()"


def _axis_text(axis: int | None) -> str:
    return "None" if axis is None else str(axis)


def default_settings(key: str, n_devices: int) -> dict[str, str]:
    """A program's own example, with its mapped axes sized to this machine's devices."""
    p = get(key)
    out: dict[str, str] = {"fn": key, "out": _axis_text(p.default_out_axes),
                           "name": "i" if p.needs_axis_name else ""}  # fmt: skip
    for k in range(MAX_ARGS):
        shape = p.default_shapes[k] if k < p.n_args else (n_devices, 4)
        ax = p.default_in_axes[k] if k < p.n_args else 0
        if ax is not None:
            shape = shape[:ax] + (n_devices,) + shape[ax + 1 :]
        out[f"s{k}"], out[f"d{k}"], out[f"a{k}"] = _shape_text(shape), "float32", _axis_text(ax)
    return out


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    fn: str
    shapes: tuple[str, ...]  # "{n}" stands for the device count
    in_axes: tuple[str, ...]
    out_axes: str = "0"
    axis_name: str = ""

    def settings(self, n_devices: int) -> dict[str, str]:
        base = default_settings(self.fn, n_devices)
        pairs = zip(self.shapes, self.in_axes, strict=True)
        for k, (shape, ax) in enumerate(pairs):
            base[f"s{k}"] = shape.format(n=n_devices, block=f"{10_000_000 // n_devices:_}")
            base[f"a{k}"] = ax
        base["out"], base["name"] = self.out_axes, self.axis_name
        return base


PRESETS: tuple[Preset, ...] = (
    Preset("seed_noreshape", "10M pairs, no reshape", "batched_dot",
           ("10_000_000, 3", "10_000_000, 3"), ("0", "0")),
    Preset("seed", "10M pairs, reshaped", "batched_dot",
           ("{n}, {block}, 3", "{n}, {block}, 3"), ("0", "0")),
    Preset("broadcast", "Broadcast weights (None)", "matmul", ("{n}, 4, 5", "5, 2"),
           ("0", "None")),
    Preset("axis1", "Mapped axis 1, out_axes=1", "add", ("3, {n}", "3, {n}"), ("1", "1"),
           out_axes="1"),
    Preset("outnone", "out_axes=None pitfall", "double", ("{n}, 4",), ("0",), out_axes="None"),
    Preset("psum", "Normalise with psum", "normalise", ("{n}, 4",), ("0",), axis_name="i"),
)  # fmt: skip


# numpy versions of the per-device functions, for checking results ("where it applies": the
# collective ones need every device's data, so they are checked against jit(vmap) only)
def numpy_fn(key: str) -> Callable | None:
    import numpy as np

    return {
        "double": lambda x: x * 2,
        "add": lambda x, y: x + y,
        "vdot": lambda x, y: np.vdot(x, y),
        "batched_dot": lambda x, y: np.einsum("ij,ij->i", x, y),
        "matmul": lambda x, w: x @ w,
        "local_sum": lambda x: np.sum(x),
    }.get(key)
