"""Type f as an expression: parsed with ``ast``, checked against an allow-list, interpreted.

The user names the arguments (``x, w, b``) and types the body (``jnp.tanh(x @ w + b)``). The
text is parsed with ``ast.parse(text, mode="eval")`` and compiled, node by node, into small
Python closures; a node that is not on the allow-list is refused with an :class:`ExprError`
that names its column (1-based) and what is allowed there. Nothing the user typed is ever run
as Python: there is no ``eval``, ``exec`` or ``compile`` here, only a walk over a checked tree.

What is allowed is data, in this module: :data:`FUNCTIONS` (``jnp.<fn>``, ``lax.<fn>``,
``jax.nn.<fn>``, ``jax.vmap``), :data:`METHODS` and :data:`ATTRIBUTES` of arrays. Each entry
says how many positional arguments and which keywords it takes; collectives also say where
their axis name is, which must be a string literal (reported as ``axis_names``). Functions that
allocate from a size argument (``jnp.zeros``, ``jnp.ones``, ``jnp.arange``, ``jnp.tile``,
``jax.nn.one_hot`` ...) are not on the list at all. Literals are bounded (ints below 10**12,
strings of printable ASCII up to 64 characters, ``**`` only with a literal exponent up to 8),
and so are the text (500 characters), the nesting depth (20) and the node count (200). While
f is traced (pmap, jit, eval_shape), every intermediate array is checked against the
settings' bounds (2**40 elements, 32 axes) before XLA sees its shape; Python numbers and tuples
(``x.shape``) never grow past 2**63 or repeat.

:func:`program` returns an :class:`ExprProgram`, a :class:`pmapviz.catalog.Program`, so
``planning.plan`` traces it with ``jax.eval_shape`` like a catalog entry: shapes still come
from JAX. :func:`python_source` exports it as an ordinary ``def f(...)``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib
import inspect
import keyword
import math
import operator
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pmapviz.catalog import Program
from pmapviz.settings import DTYPES, MAX_ELEMENTS, MAX_RANK, SettingError, quote

MAX_TEXT = 500  # characters in the body
MAX_DEPTH = 20  # nesting of the syntax tree (and of brackets)
MAX_NODES = 200
MAX_ARGS = 6
MAX_INT = 10**12  # integer literals: at most 12 digits
MAX_STR = 64
MAX_POW = 8  # `**` takes a literal exponent from -8 to 8
MAX_SCALAR = 2**63  # Python integers computed at run time (from literals and x.shape)
MAX_INDEX = 8  # entries in one subscript, x[a, b, ...]
IMPORTS = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
RESERVED = frozenset({"jnp", "lax", "jax", "np", "numpy"})


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
_GROUPS = ("axis_index_groups",)


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
    **_each(
        "lax.",
        "psum pmean pmax pmin",
        _collective(1, 2, _GROUPS, "reduces over the mapped axis; every device gets the result"),
    ),
    "lax.all_gather": _collective(
        1, 2, ("axis", "tiled", "to", *_GROUPS), "every device gets every device's block"
    ),
    "lax.ppermute": _collective(1, 3, ("perm",), "sends blocks along the (source, dest) pairs"),
    "lax.psum_scatter": _collective(
        1, 2, ("scatter_dimension", "tiled", *_GROUPS), "sums, then each device keeps one piece"
    ),
    "lax.all_to_all": _collective(
        1,
        4,
        ("split_axis", "concat_axis", "tiled", *_GROUPS),
        "each device sends piece k to device k",
    ),
    "lax.axis_index": _collective(0, 1, (), "this device's position on the axis", axis_arg=0),
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
_LITERAL_KEYWORDS = frozenset({"perm", "axis_index_groups", "in_axes", "out_axes"})
# keywords whose value is one of a few strings: all_gather's to= (under shard_map, 'invarying'
# says the gathered value is the same on every device of the axis, as out_specs may then claim)
_CHOICES = {"to": ("varying", "invarying")}
MAX_AXES = 4  # names in one collective's axis tuple, lax.psum(x, ('data', 'model'))
_MODULES = {"jnp": "jax.numpy", "lax": "jax.lax", "jax.nn": "jax.nn", "jax": "jax"}
_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")


def _resolve(qualname: str) -> Callable:
    """The JAX callable for an allow-listed name, imported only now."""
    module, _, name = qualname.rpartition(".")
    return getattr(importlib.import_module(_MODULES[module]), name)


@functools.cache
def _array_types() -> tuple[type, ...]:
    import jax

    return (jax.Array,)


# ---------------------------------------------------------------- errors


@dataclass
class _Ctx:
    text: str
    args: tuple[str, ...]
    lead: int = 0  # leading spaces stripped before parsing
    nodes: int = 0
    axis_names: set[str] = field(default_factory=set)

    def col(self, node: ast.AST) -> int:
        """The 1-based column of ``node`` in the text as typed."""
        return node.col_offset + 1 + self.lead

    def segment(self, node: ast.AST) -> str:
        """The text of ``node`` as typed (its node type where there is none)."""
        return ast.get_source_segment(self.text, node) or type(node).__name__

    def anywhere(self) -> str:
        """What an expression may use anywhere, for "allowed here:" in messages."""
        return (
            f"the arguments {', '.join(self.args)}, numbers, strings, jnp.<fn>, lax.<fn>, "
            "jax.nn.<fn>, jax.vmap, operators and (...) [...] {...}"
        )


def _fail(col: int, token: str, problem: str, allowed: str) -> ExprError:
    return ExprError(f"column {col}: {quote(token)} {problem}; allowed here: {allowed}.", col)


def _refuse(ctx: _Ctx, node: ast.AST, problem: str, allowed: str | None = None) -> ExprError:
    return _fail(ctx.col(node), ctx.segment(node), problem, allowed or ctx.anywhere())


_DESCRIBE = {
    ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.NamedExpr: "`:=`",
    ast.Starred: "`*` unpacking",
    ast.IfExp: "`if ... else`",
    ast.BoolOp: "`and` / `or`",
    ast.JoinedStr: "an f-string",
    ast.Await: "`await`",
    ast.Yield: "`yield`",
    ast.YieldFrom: "`yield`",
    ast.Set: "a set",
    ast.Slice: "a slice outside [...]",
    ast.FormattedValue: "an f-string",
}


# ---------------------------------------------------------------- compiled nodes


@dataclass(frozen=True)
class _Node:
    """A checked node: a value, a function (``spec`` says how to call it) or a module."""

    kind: str  # "value", "fn" or "module"
    run: Callable[[dict], Any] | None = None
    name: str = ""  # "jnp", "jnp.sum", "method:reshape", "jax.vmap(jnp.dot)"
    spec: Fn | None = None
    literal: Any = None  # the value, for a literal
    is_literal: bool = False


def _lit(value: Any) -> _Node:
    return _Node("value", lambda env: value, literal=value, is_literal=True)


def _compile(node: ast.AST, ctx: _Ctx, depth: int) -> _Node:
    if depth > MAX_DEPTH:
        raise _refuse(
            ctx, node, f"is nested more than {MAX_DEPTH} levels deep", "a flatter expression"
        )
    ctx.nodes += 1
    if ctx.nodes > MAX_NODES:
        raise _refuse(
            ctx, node, f"makes the expression longer than {MAX_NODES} parts", "a shorter expression"
        )
    handler = _HANDLERS.get(type(node))
    if handler is None:
        what = _DESCRIBE.get(type(node), "this kind of expression")
        raise _refuse(ctx, node, f"({what}) is not allowed")
    return handler(node, ctx, depth + 1)


def _value(node: ast.AST, ctx: _Ctx, depth: int) -> _Node:
    out = _compile(node, ctx, depth)
    if out.kind == "fn":
        raise _refuse(ctx, node, "is a function: call it here, e.g. jnp.sum(x)")
    if out.kind == "module":
        raise _refuse(ctx, node, f"is a module: use {out.name}.<fn>(...)")
    return out


def _constant(node: ast.Constant, ctx: _Ctx, depth: int) -> _Node:
    v = node.value
    if v is None or isinstance(v, bool):
        return _lit(v)
    if isinstance(v, int):
        if abs(v) >= MAX_INT:
            raise _refuse(ctx, node, "has more than 12 digits", "integers below `10**12`")
        return _lit(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _refuse(ctx, node, "is not a finite number", "finite numbers like 1e20")
        return _lit(v)
    if isinstance(v, str):
        if len(v) > MAX_STR or not all(" " <= ch <= "~" for ch in v):
            raise _refuse(
                ctx,
                node,
                f"is not a string of at most {MAX_STR} printable ASCII characters",
                "short plain strings like 'i'",
            )
        return _lit(v)
    what = "bytes" if isinstance(v, bytes) else "`...`" if v is Ellipsis else type(v).__name__
    raise _refuse(
        ctx,
        node,
        f"({what}) is not allowed",
        "ints, floats, strings, None, True, False (and ... inside [...])",
    )


def _name(node: ast.Name, ctx: _Ctx, depth: int) -> _Node:
    name = node.id
    if name in ctx.args:
        return _Node("value", lambda env: env[name])
    if name in ("jnp", "lax", "jax"):
        return _Node("module", name=name)
    raise _refuse(ctx, node, "is not allowed here")


def _attr_col(ctx: _Ctx, node: ast.Attribute) -> int:
    return node.end_col_offset - len(node.attr) + 1 + ctx.lead


def _attribute(node: ast.Attribute, ctx: _Ctx, depth: int) -> _Node:
    base = _compile(node.value, ctx, depth)
    attr, col = node.attr, _attr_col(ctx, node)
    if base.kind == "module":
        return _module_attr(base.name, attr, col)
    allowed = ", ".join([*(f".{m}()" for m in METHODS), *(f".{a}" for a in ATTRIBUTES)])
    if attr.startswith("_"):
        raise _fail(col, attr, "is not allowed: no name may start with _", allowed)
    if base.kind == "fn":
        raise _fail(col, attr, f"is not allowed: {base.name} is a function; call it", allowed)
    if base.is_literal:
        raise _fail(col, attr, "is not allowed on a literal", "attributes of arrays")
    run = base.run
    if attr in ATTRIBUTES:
        return _Node("value", lambda env: getattr(_array(run(env), attr), attr))
    if attr in METHODS:
        return _Node(
            "fn", lambda env: getattr(_array(run(env), attr), attr), f"method:{attr}", METHODS[attr]
        )
    raise _fail(col, attr, "is not an allowed array method or attribute", allowed)


def _module_attr(module: str, attr: str, col: int) -> _Node:
    path = f"{module}.{attr}"
    if path == "jax.nn":
        return _Node("module", name=path)
    if path in FUNCTIONS:
        return _Node("fn", lambda env: _resolve(path), path, FUNCTIONS[path])
    names = [k[len(module) + 1 :] for k in FUNCTIONS if k.startswith(module + ".")]
    if module == "jax":
        names = ["nn.<fn>", "vmap"]
    hint = {"jax.numpy": " (write jnp.<fn>)", "jax.lax": " (write lax.<fn>)"}.get(path, "")
    raise _fail(
        col,
        attr,
        f"is not an allowed {module} function{hint}",
        f"{module}.{' '.join(sorted(names))}".replace(" ", f", {module}."),
    )


def _bounded(run: Callable[[dict], Any], col: int) -> Callable[[dict], Any]:
    """Run time: no intermediate array above MAX_ELEMENTS elements or MAX_RANK axes. Under
    pmap, jit or eval_shape shapes are known while tracing, so a too-big intermediate (nested
    all_gathers, outer products by broadcasting) is refused before XLA sees its shape."""

    def checked(env):
        value = run(env)
        if isinstance(value, _array_types()):
            shape = tuple(value.shape)
            if len(shape) > MAX_RANK or math.prod(shape) > MAX_ELEMENTS:
                raise ExprError(
                    f"column {col}: this part of f would make an array of shape "
                    f"{shape} (at most {MAX_RANK} axes and `2**40` elements are "
                    "allowed).",
                    col,
                )
        return value

    return checked


def _array(value: Any, attr: str) -> Any:
    """Run time: methods and attributes only on arrays (never on tuples, ints, strings)."""
    if not isinstance(value, _array_types()):
        raise ExprError(f"`.{attr}` needs an array, but the value is a {type(value).__name__}.")
    return value


# ---------------------------------------------------------------- calls


def _call(node: ast.Call, ctx: _Ctx, depth: int) -> _Node:
    func = _compile(node.func, ctx, depth)
    if func.kind != "fn":
        raise _refuse(
            ctx,
            node.func,
            "cannot be called",
            "calls of jnp.<fn>, lax.<fn>, jax.nn.<fn>, jax.vmap(...) and array methods",
        )
    spec, name = func.spec, func.name
    for a in node.args:
        if isinstance(a, ast.Starred):
            raise _refuse(ctx, a, "(`*` unpacking) is not allowed", "plain arguments")
    keywords = _check_keywords(node, ctx, spec, name)
    n_pos = len(node.args) + (1 if spec.collective and "axis_name" in keywords else 0)
    if not spec.min_pos <= n_pos <= spec.max_pos:
        raise _refuse(
            ctx,
            node,
            f"passes {n_pos} positional argument(s) to {name.removeprefix('method:')}",
            f"{spec.min_pos} to {spec.max_pos} positional arguments",
        )
    if name == "jax.vmap":
        return _vmap(node, ctx, depth, keywords)
    args = [_argument(a, ctx, depth, name, spec, k) for k, a in enumerate(node.args)]
    kw = {k: _keyword(v, ctx, depth, k) for k, v in keywords.items()}
    if spec.collective and spec.axis_arg >= len(node.args) and "axis_name" not in kw:
        raise _refuse(ctx, node, "needs an axis name", "e.g. lax.psum(x, 'i')")
    if name in ("jnp.reshape", "method:reshape"):
        _check_reshape(node, ctx, args[1:] if name == "jnp.reshape" else args)
    fn_run = func.run
    arg_runs = [a.run for a in args]
    kw_runs = {k: v.run for k, v in kw.items()}

    def run(env):
        f = fn_run(env)
        return f(*[r(env) for r in arg_runs], **{k: r(env) for k, r in kw_runs.items()})

    return _Node("value", _bounded(run, ctx.col(node)))


def _check_keywords(node: ast.Call, ctx: _Ctx, spec: Fn, name: str) -> dict[str, ast.AST]:
    shown = name.removeprefix("method:")
    allowed = ", ".join(f"{k}=" for k in spec.keywords) or f"no keywords for {shown}"
    out = {}
    for k in node.keywords:
        if k.arg is None:
            raise _refuse(ctx, k, "(`**` unpacking) is not allowed", allowed)
        if k.arg not in spec.keywords:
            raise _fail(ctx.col(k), k.arg, f"is not an allowed keyword for {shown}", allowed)
        if k.arg in out:
            raise _fail(ctx.col(k), k.arg, "is given twice", allowed)
        out[k.arg] = k.value
    return out


def _argument(a: ast.AST, ctx: _Ctx, depth: int, name: str, spec: Fn, k: int) -> _Node:
    if spec.collective and k == spec.axis_arg:
        return _axis_name(a, ctx)
    if name == "method:astype":
        return _dtype(a, ctx)
    if not (name == "jnp.einsum" and k == 0):
        _no_strings(a, ctx)
    return _value(a, ctx, depth)


def _keyword(value: ast.AST, ctx: _Ctx, depth: int, key: str) -> _Node:
    if key == "axis_name":
        return _axis_name(value, ctx)
    if key == "dtype":
        return _dtype(value, ctx)
    if key in _LITERAL_KEYWORDS:
        return _lit(_literal(value, ctx, depth, "ints, None and tuples or lists of them"))
    if key in _CHOICES:
        if not (isinstance(value, ast.Constant) and value.value in _CHOICES[key]):
            raise _refuse(
                ctx,
                value,
                f"is not a choice of {key}=",
                " or ".join(repr(c) for c in _CHOICES[key]),
            )
        return _lit(value.value)
    _no_strings(value, ctx)
    return _value(value, ctx, depth)


def _no_strings(node: ast.AST, ctx: _Ctx) -> None:
    """Strings are einsum specs, axis names and dtypes, nothing else: ``jnp.sum(x, 'i')``
    would reduce over a named axis, a collective the program would not know about."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        raise _refuse(
            ctx,
            node,
            "is a string where JAX takes an array, number or axis",
            "strings only as einsum specs, axis names of lax collectives and dtypes",
        )
    for child in node.elts if isinstance(node, (ast.Tuple, ast.List)) else ():
        _no_strings(child, ctx)


def _axis_name(a: ast.AST, ctx: _Ctx) -> _Node:
    """A string literal ('i'), or a tuple of them (('data', 'model'): every named axis at once,
    as on a mesh)."""
    if isinstance(a, ast.Tuple) and 1 <= len(a.elts) <= MAX_AXES:
        names = tuple(_one_axis(e, ctx) for e in a.elts)
        if len(set(names)) < len(names):
            raise _refuse(ctx, a, "names an axis twice", "each axis once")
        return _lit(names)
    return _lit(_one_axis(a, ctx))


def _one_axis(a: ast.AST, ctx: _Ctx) -> str:
    if not (
        isinstance(a, ast.Constant) and isinstance(a.value, str) and _AXIS_NAME.fullmatch(a.value)
    ):
        raise _refuse(
            ctx,
            a,
            "is not an axis name",
            f"a string literal like 'i', or a tuple of up to {MAX_AXES} of them",
        )
    ctx.axis_names.add(a.value)
    return a.value


def _dtype(a: ast.AST, ctx: _Ctx) -> _Node:
    if not (isinstance(a, ast.Constant) and a.value in DTYPES and isinstance(a.value, str)):
        raise _refuse(ctx, a, "is not an allowed dtype", ", ".join(repr(d) for d in DTYPES))
    return _lit(a.value)


def _literal(node: ast.AST, ctx: _Ctx, depth: int, allowed: str) -> Any:
    """A literal structure: ints, None, and tuples or lists of them."""
    out = _compile(node, ctx, depth)
    if isinstance(node, (ast.Tuple, ast.List)) and out.is_literal:
        return out.literal
    if out.is_literal and (out.literal is None or type(out.literal) is int):
        return out.literal
    raise _refuse(ctx, node, "is not a literal here", allowed)


def _check_reshape(node: ast.Call, ctx: _Ctx, dims: list[_Node]) -> None:
    values = []
    for d in dims:
        v = d.literal if d.is_literal else None
        values.extend(v if isinstance(v, (tuple, list)) else [v])
    if all(type(v) is int for v in values) and math.prod(v for v in values if v > 0) > MAX_ELEMENTS:
        raise _refuse(ctx, node, "reshapes to more than `2**40` elements", "smaller sizes")


def _vmap(node: ast.Call, ctx: _Ctx, depth: int, keywords: dict[str, ast.AST]) -> _Node:
    inner = _compile(node.args[0], ctx, depth)
    ok = inner.kind == "fn" and not inner.name.startswith("method:")
    if not ok or inner.spec.collective:
        raise _refuse(
            ctx,
            node.args[0],
            "cannot be vmapped here",
            "jax.vmap of jnp.<fn>, jax.nn.<fn> or of another jax.vmap(...)",
        )
    names = ("in_axes", "out_axes")
    kw = dict(
        zip(
            names,
            (_literal(a, ctx, depth, "ints, None and tuples of them") for a in node.args[1:]),
            strict=False,
        )
    )
    kw.update(
        {k: _literal(v, ctx, depth, "ints, None and tuples of them") for k, v in keywords.items()}
    )
    inner_run = inner.run

    def run(env):
        return _resolve("jax.vmap")(inner_run(env), **kw)

    return _Node("fn", run, f"jax.vmap({inner.name})", inner.spec)


# ---------------------------------------------------------------- operators

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_OPS_TEXT = "`+ - * / // % ** @` and one comparison `< <= > >= == !=`"


def _between(ctx: _Ctx, left: ast.AST, right: ast.AST) -> tuple[int, str]:
    """Column and text of the operator token between two operands."""
    line = ctx.text
    start, end = left.end_col_offset, right.col_offset
    gap = line[start:end]
    skip = len(gap) - len(gap.lstrip(" )"))
    token = gap.strip(" ()") or gap
    return start + skip + 1 + ctx.lead, token


def _operand(node: ast.AST, ctx: _Ctx, depth: int) -> _Node:
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict)):
        raise _refuse(ctx, node, "cannot be used with an operator", "arrays and numbers")
    out = _value(node, ctx, depth)
    if out.is_literal and not isinstance(out.literal, (int, float)):
        raise _refuse(ctx, node, "cannot be used with an operator", "arrays and numbers")
    return out


def _binop(node: ast.BinOp, ctx: _Ctx, depth: int) -> _Node:
    op = _BINOPS.get(type(node.op))
    if op is None:
        col, token = _between(ctx, node.left, node.right)
        raise _fail(col, token, "is not an allowed operator", _OPS_TEXT)
    left = _operand(node.left, ctx, depth)
    right = _operand(node.right, ctx, depth)
    if op is operator.pow:
        e = right.literal
        if not right.is_literal or isinstance(e, bool) or not abs(e) <= MAX_POW:
            raise _refuse(
                ctx,
                node.right,
                "is not allowed as an exponent",
                f"a number from -{MAX_POW} to {MAX_POW}",
            )
    if left.is_literal and right.is_literal:
        value = _arith(op, left.literal, right.literal, ctx.col(node))
        return _lit(value)
    lr, rr = left.run, right.run
    return _Node("value", _bounded(lambda env: _arith(op, lr(env), rr(env)), ctx.col(node)))


def _arith(op: Callable, a: Any, b: Any, col: int | None = None) -> Any:
    """Run time (or fold time for literals): numbers and arrays only; Python numbers bounded."""
    where = f"column {col}: " if col else ""
    for v in (a, b):
        if not isinstance(v, (int, float, *_array_types())):
            raise ExprError(
                f"{where}an operator got a {type(v).__name__}; only arrays and "
                "numbers can be combined.",
                col,
            )
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        try:
            value = op(a, b)
        except (ArithmeticError, ValueError, TypeError) as err:
            raise ExprError(f"{where}arithmetic on numbers failed: {err}.", col) from None
        if isinstance(value, int) and abs(value) > MAX_SCALAR:
            raise ExprError(f"{where}a number in the expression exceeds 2**63.", col)
        return value
    return op(a, b)


def _unary(node: ast.UnaryOp, ctx: _Ctx, depth: int) -> _Node:
    if not isinstance(node.op, (ast.USub, ast.UAdd)):
        token = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), "?")
        raise _fail(ctx.col(node), token, "is not an allowed operator", "unary - and +")
    inner = _operand(node.operand, ctx, depth)
    sign = -1 if isinstance(node.op, ast.USub) else 1
    if inner.is_literal:
        return _lit(_arith(operator.mul, sign, inner.literal, ctx.col(node)))
    run = inner.run
    return _Node("value", lambda env: _arith(operator.mul, sign, run(env)))


def _compare(node: ast.Compare, ctx: _Ctx, depth: int) -> _Node:
    op = _COMPARE.get(type(node.ops[0]))
    if op is None or len(node.ops) > 1:
        bad = 0 if op is None else 1
        left = node.left if bad == 0 else node.comparators[0]
        col, token = _between(ctx, left, node.comparators[bad])
        problem = "is not an allowed comparison" if bad == 0 else "chains comparisons"
        raise _fail(col, token, problem, _OPS_TEXT)
    left = _operand(node.left, ctx, depth)
    right = _operand(node.comparators[0], ctx, depth)
    lr, rr = left.run, right.run
    return _Node("value", _bounded(lambda env: _arith(op, lr(env), rr(env)), ctx.col(node)))


# ---------------------------------------------------------------- containers and indexing


def _sequence(node: ast.Tuple | ast.List, ctx: _Ctx, depth: int) -> _Node:
    items = [_value(e, ctx, depth) for e in node.elts]
    make = tuple if isinstance(node, ast.Tuple) else list
    if all(i.is_literal for i in items):
        return _lit(make(i.literal for i in items))
    runs = [i.run for i in items]
    return _Node("value", lambda env: make(r(env) for r in runs))


def _dict(node: ast.Dict, ctx: _Ctx, depth: int) -> _Node:
    keys = []
    for k, v in zip(node.keys, node.values, strict=True):
        if k is None:
            raise _refuse(ctx, v, "(`**` unpacking) is not allowed", "'name': value pairs")
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise _refuse(ctx, k, "is not a string literal key", "keys like 'out'")
        keys.append(_constant(k, ctx, depth).literal)
    values = [_value(v, ctx, depth).run for v in node.values]
    return _Node("value", lambda env: {k: r(env) for k, r in zip(keys, values, strict=True)})


_INDEX_TEXT = (
    "literal ints, slices like `1:3` or `::2`, None, `...` and, for a dict "
    "argument, a quoted key like `'w'`"
)


def _index_item(node: ast.AST, ctx: _Ctx, depth: int) -> Any:
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    if isinstance(node, ast.Slice):
        parts = [
            None if p is None else _index_item(p, ctx, depth)
            for p in (node.lower, node.upper, node.step)
        ]
        if any(p is Ellipsis or isinstance(p, (slice, str)) for p in parts):
            raise _refuse(ctx, node, "is not a valid slice", _INDEX_TEXT)
        return slice(*parts)
    out = _compile(node, ctx, depth)
    if out.is_literal and (out.literal is None or type(out.literal) in (int, str)):
        return out.literal
    raise _refuse(ctx, node, "is not allowed as an index", _INDEX_TEXT)


def _subscript(node: ast.Subscript, ctx: _Ctx, depth: int) -> _Node:
    base = _value(node.value, ctx, depth)
    s = node.slice
    elts = s.elts if isinstance(s, ast.Tuple) else [s]
    if len(elts) > MAX_INDEX:
        raise _refuse(ctx, s, f"has more than {MAX_INDEX} entries", _INDEX_TEXT)
    items = [_index_item(e, ctx, depth + 1) for e in elts]
    index = tuple(items) if isinstance(s, ast.Tuple) else items[0]
    run = base.run

    if isinstance(index, tuple) and any(type(i) is str for i in index):
        raise _refuse(ctx, s, "mixes a key with other indices", _INDEX_TEXT)

    def get(env):
        value = run(env)
        if type(index) is str:
            if not isinstance(value, dict):
                what = "an array" if hasattr(value, "shape") else f"a {type(value).__name__}"
                raise ExprError(f"{quote(f'[{index!r}]')} needs a dict argument, not {what}.")
            if index not in value:
                keys = ", ".join(map(repr, value))
                raise ExprError(f"{quote(f'[{index!r}]')}: the dict has keys {quote(keys, 200)}.")
            return value[index]
        if not isinstance(value, (tuple, list, *_array_types())):
            raise ExprError(f"[...] needs an array or a tuple, not a {type(value).__name__}.")
        return value[index]

    return _Node("value", _bounded(get, ctx.col(node)))


_HANDLERS: dict[type, Callable[[Any, _Ctx, int], _Node]] = {
    ast.Constant: _constant,
    ast.Name: _name,
    ast.Attribute: _attribute,
    ast.Call: _call,
    ast.BinOp: _binop,
    ast.UnaryOp: _unary,
    ast.Compare: _compare,
    ast.Tuple: _sequence,
    ast.List: _sequence,
    ast.Dict: _dict,
    ast.Subscript: _subscript,
}


# ---------------------------------------------------------------- text


def _check_text(text: str, limit: int | None) -> None:
    if limit is not None and len(text) > limit:
        raise ExprError(
            f"The expression is {len(text):,} characters long; at most {limit} are allowed."
        )
    for k, ch in enumerate(text):
        if not " " <= ch <= "~":
            what = (
                unicodedata.name(ch, "a control character")
                if ch.isprintable()
                else ("a control or invisible character")
            )
            raise ExprError(
                f"column {k + 1}: character U+{ord(ch):04X} ({what}) is not "
                "allowed; allowed here: plain ASCII on one line (no tabs, "
                "newlines or look-alike letters).",
                k + 1,
            )
    if not text.strip():
        raise ExprError("The expression is empty: type the body of f, e.g. jnp.sum(x).")
    col = _bracket_too_deep(text)
    if col is not None:
        raise ExprError(
            f"column {col}: brackets nest more than {MAX_DEPTH} levels deep; "
            "allowed here: a flatter expression.",
            col,
        )


def _bracket_too_deep(text: str) -> int | None:
    """The column of the first bracket nested deeper than MAX_DEPTH (strings skipped)."""
    depth, quote_mark, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote_mark:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote_mark, i):
                i, quote_mark = i + len(quote_mark), ""
                continue
        elif ch in "'\"":
            quote_mark = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
            i += len(quote_mark)
            continue
        elif ch in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                return i + 1
        elif ch in ")]}":
            depth -= 1
        i += 1
    return None


def _parse(text: str, args: tuple[str, ...], limit: int | None) -> tuple[_Node, _Ctx, str]:
    """Check, parse and compile ``text``; the compiled root, its context and canonical text."""
    if not isinstance(text, str):
        raise ExprError("The expression must be text.")
    _check_text(text, limit)
    body = text.strip()
    ctx = _Ctx(body, args, lead=len(text) - len(text.lstrip()))
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError as err:
        col = (err.offset or 1) + ctx.lead
        msg = str(err.msg).splitlines()[0] if err.msg else "invalid syntax"
        raise ExprError(
            f"column {col}: this is not a valid expression ({msg}); allowed "
            "here: one Python expression, e.g. jnp.tanh(x @ w + b).",
            col,
        ) from None
    except (ValueError, RecursionError, MemoryError):
        raise ExprError("The expression could not be parsed; type one plain expression.") from None
    root = _value(tree.body, ctx, 1)
    return root, ctx, ast.unparse(tree)


# ---------------------------------------------------------------- programs


def parse_arg_names(text: Any) -> tuple[str, ...]:
    """'x, w, b' -> ('x', 'w', 'b'): 1 to 6 distinct ASCII names, not keywords, builtins or
    the module names jnp, lax, jax, np."""
    raw = str(text if text is not None else "").strip()
    if len(raw) > 200 or any(not " " <= ch <= "~" for ch in raw):
        raise ExprError(f"Arguments {quote(raw)}: type plain ASCII names like x, w, b.")
    inner = raw[1:-1] if raw.startswith("(") and raw.endswith(")") else raw
    parts = [p.strip() for p in inner.split(",")]
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""]:
        raise ExprError("Arguments are empty: name them, e.g. x, w, b.")
    if len(parts) > MAX_ARGS:
        raise ExprError(f"f takes {len(parts)} arguments; at most {MAX_ARGS} are allowed.")
    for p in parts:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", p):
            raise ExprError(
                f"Argument {quote(p)} is not a simple name: letters, digits and _, "
                "starting with a letter, e.g. x or w1."
            )
        if keyword.iskeyword(p) or keyword.issoftkeyword(p) or hasattr(builtins, p):
            raise ExprError(
                f"Argument {quote(p)} is a Python keyword or builtin: choose another name."
            )
        if p in RESERVED:
            raise ExprError(
                f"Argument {quote(p)} is reserved for the module {p}: choose another name."
            )
    if len(set(parts)) != len(parts):
        dupe = next(p for p in parts if parts.count(p) > 1)
        raise ExprError(f"Argument {quote(dupe)} is named twice.")
    return tuple(parts)


@dataclass(frozen=True)
class ExprProgram(Program):
    """A typed expression as a catalog-style program. ``source`` is the canonical body
    (``ast.unparse`` of the checked tree); collectives name their axes literally, listed in
    ``axis_names``, so ``body`` ignores its ``axis_name``."""

    axis_names: tuple[str, ...] = ()

    def body(self, axis_name: str | None = None) -> str:
        """The checked expression; ``axis_name`` is ignored (its collectives name their axes)."""
        return self.source

    def build(self, axis_name: str | None = None) -> Callable:
        """The interpreted function; the same object for the same program and axis_name."""
        return _build(self.arg_names, self.source, axis_name)


@functools.lru_cache(maxsize=256)
def _build(arg_names: tuple[str, ...], source: str, axis_name: str | None) -> Callable:
    root, _, _ = _parse(source, arg_names, None)
    run, n = root.run, len(arg_names)

    def f(*args):
        if len(args) != n:
            raise TypeError(f"f takes {n} argument(s) ({', '.join(arg_names)}), got {len(args)}")
        import jax
        import jax.numpy as jnp

        return run({k: jax.tree.map(jnp.asarray, a) for k, a in zip(arg_names, args, strict=True)})

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    f.__signature__ = inspect.Signature([inspect.Parameter(a, kind) for a in arg_names])
    return f


def program(
    arg_names: str,
    body: str,
    default_shapes: tuple[tuple[int, ...], ...] | None = None,
    default_in_axes: tuple[int | None, ...] | None = None,
) -> ExprProgram:
    """Check ``body`` (the expression) over the arguments in ``arg_names`` ('x, w, b').
    Raises :class:`ExprError`, one line naming the column of the first bad token."""
    names = parse_arg_names(arg_names)
    _, ctx, source = _parse(body, names, MAX_TEXT)
    axes = tuple(sorted(ctx.axis_names))
    digest = hashlib.sha256(f"{','.join(names)}:{source}".encode()).hexdigest()[:16]
    over = f" (collectives over axis {', '.join(map(repr, axes))})" if axes else ""
    short = source if len(source) <= 60 else source[:57] + "..."
    return ExprProgram(
        key=f"expr:{digest}",
        label=f"Your f: {short}",
        arg_names=names,
        source=source,
        description=f"Typed by you: f({', '.join(names)}) = {source}{over}.",
        default_shapes=default_shapes or tuple((8, 4) for _ in names),
        default_in_axes=default_in_axes or tuple(0 for _ in names),
        needs_axis_name=bool(axes),
        axis_names=axes,
    )


def python_source(prog: Program, axis_name: str | None = None) -> str:
    """``def f(x, w, b):\\n    return <body>``: plain Python using jnp, lax and jax (see
    :data:`IMPORTS`). For a typed expression the body is its canonical text."""
    return f"{prog.signature()}\n    return {prog.body(axis_name)}\n"
