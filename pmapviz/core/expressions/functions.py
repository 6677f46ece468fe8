"""The catalog of functions a user can pmap. No arbitrary code: only these.

Each entry has the real function (``build(axis_name)``) and the source line shown in code exports
(``source``). Tests run the exported scripts and compare them with ``build``, so the two cannot
drift apart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    """One function a user can pmap: its key, label, arguments, source, description, defaults."""

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
        """How many arguments f takes."""
        return len(self.arg_names)

    def signature(self) -> str:
        """f's ``def`` line as code exports show it: ``def f(x, y):``."""
        return f"def f({', '.join(self.arg_names)}):"

    def body(self, axis_name: str | None) -> str:
        """f's body as code exports show it, ``{axis}`` replaced by the axis name's literal."""
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
    Program(
        "double",
        "Elementwise: x * 2",
        ("x",),
        "x * 2",
        "Each device doubles its own block.",
        ((8, 4),),
        (0,),
    ),
    Program(
        "add",
        "Sum of two arrays: x + y",
        ("x", "y"),
        "x + y",
        "Each device adds its blocks of x and y.",
        ((8, 4), (8, 4)),
        (0, 0),
    ),
    Program(
        "vdot",
        "Dot of two vectors: jnp.vdot(x, y)",
        ("x", "y"),
        "jnp.vdot(x, y)",
        "One dot product per device: each device gets one pair of vectors.",
        ((8, 3), (8, 3)),
        (0, 0),
    ),
    Program(
        "batched_dot",
        "Batched dot: jax.vmap(jnp.dot)(x, y)",
        ("x", "y"),
        "jax.vmap(jnp.dot)(x, y)",
        "The seed's pmap(vmap(dot)): each device takes a block of pairs of 3-vectors "
        "and vmap computes their dot products.",
        ((8, 1_250_000, 3), (8, 1_250_000, 3)),
        (0, 0),
    ),
    Program(
        "matmul",
        "Matrix multiply: x @ w",
        ("x", "w"),
        "x @ w",
        "Each device multiplies its block of x by w; with in_axes None for w, every "
        "device gets all of w (broadcast).",
        ((8, 4, 5), (5, 2)),
        (0, None),
    ),
    Program(
        "local_sum",
        "Sum over the local block: jnp.sum(x)",
        ("x",),
        "jnp.sum(x)",
        "Each device sums only its own block; no communication.",
        ((8, 100),),
        (0,),
    ),
    Program(
        "normalise",
        "Normalise by a global sum: x / psum(sum(x))",
        ("x",),
        "x / lax.psum(jnp.sum(x), {axis})",
        "Each device divides its block by the sum over all devices: a collective "
        "(psum) over axis_name.",
        ((8, 4),),
        (0,),
        needs_axis_name=True,
    ),
    Program(
        "global_sum",
        "Global sum: psum(sum(x))",
        ("x",),
        "lax.psum(jnp.sum(x), {axis})",
        "Every device ends with the same total, so out_axes=None is safe here.",
        ((8, 4),),
        (0,),
        needs_axis_name=True,
        default_out_axes=None,
    ),
)

BY_KEY = {p.key: p for p in PROGRAMS}


def sized_shapes(program, n_devices: int) -> list[tuple[int, ...]]:
    """A function's example shapes (``program.default_shapes``), each mapped axis (its
    ``default_in_axes``) sized to ``n_devices``: the example fits any device count."""
    out = []
    for shape, ax in zip(program.default_shapes, program.default_in_axes, strict=True):
        out.append(shape if ax is None else shape[:ax] + (n_devices,) + shape[ax + 1 :])
    return out


def get(key: str) -> Program:
    """The catalog entry with key ``key``."""
    return BY_KEY[key]


MAX_ARGS = max(p.n_args for p in PROGRAMS)


# numpy versions of the per-device functions, for checking results ("where it applies": the
# collective ones need every device's data, so they are checked against jit(vmap) only)
def numpy_fn(key: str) -> Callable | None:
    """Entry ``key``'s per-device function in numpy, for checking results; None for collectives."""
    import numpy as np

    return {
        "double": lambda x: x * 2,
        "add": lambda x, y: x + y,
        "vdot": lambda x, y: np.vdot(x, y),
        "batched_dot": lambda x, y: np.einsum("ij,ij->i", x, y),
        "matmul": lambda x, w: x @ w,
        "local_sum": lambda x: np.sum(x),
    }.get(key)
