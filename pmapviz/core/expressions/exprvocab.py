"""The vocabulary of "your own f": what a typed expression may call, its limits, and the error
that refuses it.

What is allowed is data: :data:`FUNCTIONS` (``jnp.<fn>``, ``lax.<fn>``, ``jax.nn.<fn>``,
``jax.vmap``, ``jax.grad``, ``jax.value_and_grad``), :data:`METHODS` and :data:`ATTRIBUTES` of
arrays. Each entry says how many positional arguments and which keywords it takes; collectives also
say where their axis name is, which must be a string literal (reported as ``axis_names``). Functions
that allocate from a size argument (``jnp.zeros``, ``jnp.ones``, ``jnp.arange``, ``jnp.tile``,
``jax.nn.one_hot`` ...) are not on the list at all. The limits bound literals (ints below 10**12,
strings of printable ASCII up to 64 characters, ``**`` only with a literal exponent up to 8), the
nesting depth (20) and the node count (200). The callables are imported from JAX only when f runs
(:func:`resolve`).

:mod:`pmapviz.core.expressions.exprparse` checks a text against this;
:mod:`pmapviz.core.expressions.expr` makes it a program.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.expressions import collectivedefs

MAX_DEPTH = 20  # nesting of the syntax tree (and of brackets)
MAX_NODES = 200
MAX_INT = 10**12  # integer literals: at most 12 digits
MAX_STR = 64
MAX_POW = 8  # `**` takes a literal exponent from -8 to 8
MAX_SCALAR = 2**63  # Python integers computed at run time (from literals and x.shape)
MAX_INDEX = 8  # entries in one subscript, x[a, b, ...]


class ExprError(SettingError):
    """An expression or argument list that is refused; one line, user text quoted.
    ``column`` is the 1-based column of the first bad character or token, if there is one."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message)
        self.column = column


# ---------------------------------------------------------------- the allow-list (data)


@dataclass(frozen=True)
class Fn:
    """One allowed callable: its positional arguments (``min_pos`` to ``max_pos``, without the
    array for methods) and keywords. Collectives give the position of their axis name
    (``axis_arg``; ``axis_name=`` is accepted too), which must be a string literal."""

    min_pos: int
    max_pos: int
    keywords: tuple[str, ...] = ()
    axis_arg: int | None = None
    note: str = ""

    @property
    def collective(self) -> bool:
        """Whether it is a collective (it takes an axis name)."""
        return self.axis_arg is not None


def _each(prefix: str, names: str, spec: Fn) -> dict[str, Fn]:
    return {f"{prefix}{n}": spec for n in names.split()}


_RED = ("axis", "keepdims", "dtype")


def _collective(
    min_pos: int, max_pos: int, keywords: tuple[str, ...], note: str, axis_arg: int = 1
) -> Fn:
    return Fn(min_pos, max_pos, (*keywords, "axis_name"), axis_arg, note)


FUNCTIONS: dict[str, Fn] = {
    **_each(
        "jnp.",
        "abs exp exp2 log log1p log2 log10 expm1 sqrt square sin cos tan tanh sinh "
        "cosh arctan sign floor ceil negative reciprocal isnan isfinite logical_not ravel",
        Fn(1, 1),
    ),
    **_each(
        "jnp.",
        "add subtract multiply divide floor_divide mod power maximum minimum "
        "arctan2 logical_and logical_or dot vdot matmul inner",
        Fn(2, 2),
    ),
    **_each("jnp.", "sum mean prod", Fn(1, 2, _RED)),
    **_each("jnp.", "max min argmax argmin all any", Fn(1, 2, ("axis", "keepdims"))),
    **_each("jnp.", "std var", Fn(1, 2, ("axis", "keepdims", "ddof"))),
    **_each("jnp.", "cumsum cumprod", Fn(1, 2, ("axis", "dtype"))),
    **_each("jnp.", "zeros_like ones_like", Fn(1, 1, ("dtype",))),
    **_each("jnp.", "squeeze flip sort argsort", Fn(1, 2, ("axis",))),
    **_each("jnp.", "concatenate stack", Fn(1, 2, ("axis",))),
    "jnp.reshape": Fn(2, 2),
    "jnp.transpose": Fn(1, 2, ("axes",)),
    "jnp.swapaxes": Fn(3, 3),
    "jnp.moveaxis": Fn(3, 3),
    "jnp.expand_dims": Fn(2, 2, ("axis",)),
    "jnp.roll": Fn(2, 3, ("shift", "axis")),
    "jnp.where": Fn(3, 3),
    "jnp.clip": Fn(1, 3, ("min", "max")),
    "jnp.round": Fn(1, 2, ("decimals",)),
    "jnp.einsum": Fn(2, 8),
    "jnp.tensordot": Fn(2, 3, ("axes",)),
    **{  # the collectives, from their records (collectivedefs: one record each)
        f"lax.{t.name}": _collective(t.min_pos, t.max_pos, t.keywords, t.note, t.axis_arg)
        for t in (c.typed for c in collectivedefs.COLLECTIVES)
        if t is not None
    },
    **_each(
        "jax.nn.",
        "relu relu6 sigmoid silu swish softplus log_sigmoid hard_tanh selu mish",
        Fn(1, 1),
    ),
    "jax.nn.gelu": Fn(1, 2, ("approximate",)),
    "jax.nn.elu": Fn(1, 2, ("alpha",)),
    "jax.nn.celu": Fn(1, 2, ("alpha",)),
    "jax.nn.leaky_relu": Fn(1, 2, ("negative_slope",)),
    **_each("jax.nn.", "softmax log_softmax", Fn(1, 2, ("axis",))),
    "jax.nn.logsumexp": Fn(1, 2, ("axis", "keepdims")),
    "jax.nn.standardize": Fn(1, 2, ("axis", "epsilon")),
    "jax.vmap": Fn(1, 3, ("in_axes", "out_axes")),
    # of a lambda or a function: pmapviz.core.expressions.exprgrads
    "jax.grad": Fn(1, 1, ("argnums",)),
    "jax.value_and_grad": Fn(1, 1, ("argnums",)),
}

METHODS: dict[str, Fn] = {
    **_each("", "sum mean prod", Fn(0, 1, _RED)),
    **_each("", "max min argmax argmin all any", Fn(0, 1, ("axis", "keepdims"))),
    **_each("", "std var", Fn(0, 1, ("axis", "keepdims", "ddof"))),
    **_each("", "cumsum cumprod", Fn(0, 1, ("axis", "dtype"))),
    **_each("", "squeeze sort argsort", Fn(0, 1, ("axis",))),
    **_each("", "ravel flatten", Fn(0, 0)),
    "reshape": Fn(1, MAX_INDEX),
    "transpose": Fn(0, MAX_INDEX),
    "swapaxes": Fn(2, 2),
    "astype": Fn(1, 1),
    "clip": Fn(0, 2, ("min", "max")),
    "round": Fn(0, 1, ("decimals",)),
    "dot": Fn(1, 1),
}

ATTRIBUTES: tuple[str, ...] = ("T", "mT", "shape", "ndim", "size")

# keywords whose value must be a literal structure (ints, None, tuples and lists of them)
LITERAL_KEYWORDS = frozenset({"perm", "axis_index_groups", "in_axes", "out_axes"})
# keywords whose value is one of a few strings: all_gather's to= (under shard_map, 'invarying'
# says the gathered value is the same on every device of the axis, as out_specs may then claim)
CHOICES = {"to": ("varying", "invarying")}
MAX_AXES = 4  # names in one collective's axis tuple, lax.psum(x, ('data', 'model'))
_MODULES = {"jnp": "jax.numpy", "lax": "jax.lax", "jax.nn": "jax.nn", "jax": "jax"}
AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")


def resolve(qualname: str) -> Callable:
    """The JAX callable for an allow-listed name, imported only now."""
    module, _, name = qualname.rpartition(".")
    return getattr(importlib.import_module(_MODULES[module]), name)


@functools.cache
def array_types() -> tuple[type, ...]:
    """The types of JAX arrays (JAX is imported only now)."""
    import jax

    return (jax.Array,)
