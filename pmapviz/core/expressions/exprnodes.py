"""The checked nodes of "your own f": each syntax node compiled into a small Python closure.

:func:`compile_node` sends an ``ast`` node to the checker for its type (the table that
:mod:`pmapviz.core.expressions.exprparse` puts on the :class:`Ctx`), counting nodes and depth; a
node that is not allowed is refused with an :class:`pmapviz.core.expressions.exprvocab.ExprError`
naming its column (:func:`refuse`, :func:`fail`). Here are the checkers of literals, names and
attributes, and the guards f runs with: while f is traced (pmap, jit, eval_shape) every intermediate
array is checked against the settings' bounds (2**40 elements, 32 axes) before XLA sees its shape
(:func:`bounded`), and methods and attributes apply to arrays only.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pmapviz.core.base.valueparse import MAX_ELEMENTS, MAX_RANK
from pmapviz.core.base.valuetext import quote
from pmapviz.core.expressions.exprvocab import (
    ATTRIBUTES,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_INT,
    MAX_NODES,
    MAX_STR,
    METHODS,
    ExprError,
    Fn,
    array_types,
    resolve,
)

# ---------------------------------------------------------------- errors


@dataclass
class Ctx:
    """What the checker knows while it walks one expression: its text, the argument names,
    the nodes seen so far, the axis names its collectives use, and the checker per node
    type."""

    text: str
    args: tuple[str, ...]
    lead: int = 0  # leading spaces stripped before parsing
    nodes: int = 0
    axis_names: set[str] = field(default_factory=set)
    handlers: dict[type, Callable[[Any, Ctx, int], Node]] = field(default_factory=dict)

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
            "jax.nn.<fn>, jax.vmap, jax.grad, jax.value_and_grad, operators and (...) [...] {...}"
        )


def fail(col: int, token: str, problem: str, allowed: str) -> ExprError:
    """The refusal of ``token`` at column ``col``: what is wrong, and what is allowed there."""
    return ExprError(f"column {col}: {quote(token)} {problem}; allowed here: {allowed}.", col)


def refuse(ctx: Ctx, node: ast.AST, problem: str, allowed: str | None = None) -> ExprError:
    """The refusal of ``node`` (its text and column as typed)."""
    return fail(ctx.col(node), ctx.segment(node), problem, allowed or ctx.anywhere())


_DESCRIBE = {
    ast.Lambda: "a lambda outside jax.grad(...) and jax.value_and_grad(...)",
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
class Node:
    """A checked node: a value, a function (``spec`` says how to call it) or a module."""

    kind: str  # "value", "fn" or "module"
    run: Callable[[dict], Any] | None = None
    name: str = ""  # "jnp", "jnp.sum", "method:reshape", "jax.vmap(jnp.dot)"
    spec: Fn | None = None
    literal: Any = None  # the value, for a literal
    is_literal: bool = False


def lit(value: Any) -> Node:
    """A literal's node: its value, known while checking."""
    return Node("value", lambda env: value, literal=value, is_literal=True)


def compile_node(node: ast.AST, ctx: Ctx, depth: int) -> Node:
    """Check and compile ``node`` with the checker for its type, within the depth and node
    limits; refused when its type is not allowed."""
    if depth > MAX_DEPTH:
        raise refuse(
            ctx, node, f"is nested more than {MAX_DEPTH} levels deep", "a flatter expression"
        )
    ctx.nodes += 1
    if ctx.nodes > MAX_NODES:
        raise refuse(
            ctx, node, f"makes the expression longer than {MAX_NODES} parts", "a shorter expression"
        )
    handler = ctx.handlers.get(type(node))
    if handler is None:
        what = _DESCRIBE.get(type(node), "this kind of expression")
        raise refuse(ctx, node, f"({what}) is not allowed")
    return handler(node, ctx, depth + 1)


def compile_value(node: ast.AST, ctx: Ctx, depth: int) -> Node:
    """:func:`compile_node`, refusing a function or module where a value must be."""
    out = compile_node(node, ctx, depth)
    if out.kind == "fn":
        raise refuse(ctx, node, "is a function: call it here, e.g. jnp.sum(x)")
    if out.kind == "module":
        raise refuse(ctx, node, f"is a module: use {out.name}.<fn>(...)")
    return out


def check_constant(node: ast.Constant, ctx: Ctx, depth: int) -> Node:
    """A literal: None, a bool, a bounded int, a finite float or a short printable string."""
    v = node.value
    if v is None or isinstance(v, bool):
        return lit(v)
    if isinstance(v, int):
        if abs(v) >= MAX_INT:
            raise refuse(ctx, node, "has more than 12 digits", "integers below `10**12`")
        return lit(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise refuse(ctx, node, "is not a finite number", "finite numbers like 1e20")
        return lit(v)
    if isinstance(v, str):
        if len(v) > MAX_STR or not all(" " <= ch <= "~" for ch in v):
            raise refuse(
                ctx,
                node,
                f"is not a string of at most {MAX_STR} printable ASCII characters",
                "short plain strings like 'i'",
            )
        return lit(v)
    what = "bytes" if isinstance(v, bytes) else "`...`" if v is Ellipsis else type(v).__name__
    raise refuse(
        ctx,
        node,
        f"({what}) is not allowed",
        "ints, floats, strings, None, True, False (and ... inside [...])",
    )


def check_name(node: ast.Name, ctx: Ctx, depth: int) -> Node:
    """A name: one of f's arguments, or the module jnp, lax or jax."""
    name = node.id
    if name in ctx.args:
        return Node("value", lambda env: env[name])
    if name in ("jnp", "lax", "jax"):
        return Node("module", name=name)
    raise refuse(ctx, node, "is not allowed here")


def _attr_col(ctx: Ctx, node: ast.Attribute) -> int:
    return node.end_col_offset - len(node.attr) + 1 + ctx.lead


def check_attribute(node: ast.Attribute, ctx: Ctx, depth: int) -> Node:
    """``a.b``: an allowed function of a module, or an allowed method or attribute of an array."""
    base = compile_node(node.value, ctx, depth)
    attr, col = node.attr, _attr_col(ctx, node)
    if base.kind == "module":
        return _module_attr(base.name, attr, col)
    allowed = ", ".join([*(f".{m}()" for m in METHODS), *(f".{a}" for a in ATTRIBUTES)])
    if attr.startswith("_"):
        raise fail(col, attr, "is not allowed: no name may start with _", allowed)
    if base.kind == "fn":
        raise fail(col, attr, f"is not allowed: {base.name} is a function; call it", allowed)
    if base.is_literal:
        raise fail(col, attr, "is not allowed on a literal", "attributes of arrays")
    run = base.run
    if attr in ATTRIBUTES:
        return Node("value", lambda env: getattr(_array(run(env), attr), attr))
    if attr in METHODS:
        return Node(
            "fn", lambda env: getattr(_array(run(env), attr), attr), f"method:{attr}", METHODS[attr]
        )
    raise fail(col, attr, "is not an allowed array method or attribute", allowed)


def _module_attr(module: str, attr: str, col: int) -> Node:
    path = f"{module}.{attr}"
    if path == "jax.nn":
        return Node("module", name=path)
    if path in FUNCTIONS:
        return Node("fn", lambda env: resolve(path), path, FUNCTIONS[path])
    names = [k[len(module) + 1 :] for k in FUNCTIONS if k.startswith(module + ".")]
    if module == "jax":
        names = ["nn.<fn>", "vmap", "grad", "value_and_grad"]
    hint = {"jax.numpy": " (write jnp.<fn>)", "jax.lax": " (write lax.<fn>)"}.get(path, "")
    raise fail(
        col,
        attr,
        f"is not an allowed {module} function{hint}",
        f"{module}.{' '.join(sorted(names))}".replace(" ", f", {module}."),
    )


def bounded(run: Callable[[dict], Any], col: int) -> Callable[[dict], Any]:
    """Run time: no intermediate array above MAX_ELEMENTS elements or MAX_RANK axes. Under
    pmap, jit or eval_shape shapes are known while tracing, so a too-big intermediate (nested
    all_gathers, outer products by broadcasting) is refused before XLA sees its shape."""

    def checked(env):
        value = run(env)
        if isinstance(value, array_types()):
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
    if not isinstance(value, array_types()):
        raise ExprError(f"`.{attr}` needs an array, but the value is a {type(value).__name__}.")
    return value
