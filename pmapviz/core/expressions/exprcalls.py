"""The calls of "your own f": ``jnp.sum(x, axis=0)``, ``lax.psum(x, 'i')``, ``x.reshape(2, 6)``,
``jax.vmap(jnp.dot)(x, y)``, ``jax.grad(lambda w: ...)(w)``
(:mod:`pmapviz.core.expressions.exprgrads`), checked against the allow-list's entry for what
is called.

Each call is checked for its number of positional arguments and its keywords
(:class:`pmapviz.core.expressions.exprvocab.Fn`); a collective's axis name must be a string literal
(or a tuple of them) and is recorded on the :class:`pmapviz.core.expressions.exprnodes.Ctx`; dtypes
and a few keywords take literals only, strings are allowed only where JAX takes one (einsum specs,
axis names, dtypes), and a literal reshape may not exceed 2**40 elements.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from pmapviz.core.base.settings import DTYPES
from pmapviz.core.base.valueparse import MAX_ELEMENTS
from pmapviz.core.expressions.exprgrads import GRADS, check_grad
from pmapviz.core.expressions.exprnodes import (
    Ctx,
    Node,
    bounded,
    compile_node,
    compile_value,
    fail,
    lit,
    refuse,
)
from pmapviz.core.expressions.exprvocab import (
    AXIS_NAME,
    CHOICES,
    LITERAL_KEYWORDS,
    MAX_AXES,
    Fn,
    resolve,
)

# ---------------------------------------------------------------- calls


def check_call(node: ast.Call, ctx: Ctx, depth: int) -> Node:
    """``f(args, key=value)``: an allowed function or method with the arguments it takes."""
    func = compile_node(node.func, ctx, depth)
    if func.kind != "fn":
        raise refuse(
            ctx,
            node.func,
            "cannot be called",
            "calls of jnp.<fn>, lax.<fn>, jax.nn.<fn>, jax.vmap(...), jax.grad(...) and array "
            "methods",
        )
    spec, name = func.spec, func.name
    for a in node.args:
        if isinstance(a, ast.Starred):
            raise refuse(ctx, a, "(`*` unpacking) is not allowed", "plain arguments")
    keywords = _check_keywords(node, ctx, spec, name)
    n_pos = len(node.args) + (1 if spec.collective and "axis_name" in keywords else 0)
    if not spec.min_pos <= n_pos <= spec.max_pos:
        raise refuse(
            ctx,
            node,
            f"passes {n_pos} positional argument(s) to {name.removeprefix('method:')}",
            f"{spec.min_pos} to {spec.max_pos} positional arguments",
        )
    if name == "jax.vmap":
        return _vmap(node, ctx, depth, keywords)
    if name in GRADS:
        return check_grad(node, ctx, depth, keywords, name)
    args = [_argument(a, ctx, depth, name, spec, k) for k, a in enumerate(node.args)]
    kw = {k: _keyword(v, ctx, depth, k) for k, v in keywords.items()}
    if spec.collective and spec.axis_arg >= len(node.args) and "axis_name" not in kw:
        raise refuse(ctx, node, "needs an axis name", "e.g. lax.psum(x, 'i')")
    if name in ("jnp.reshape", "method:reshape"):
        _check_reshape(node, ctx, args[1:] if name == "jnp.reshape" else args)
    fn_run = func.run
    arg_runs = [a.run for a in args]
    kw_runs = {k: v.run for k, v in kw.items()}

    def run(env):
        f = fn_run(env)
        return f(*[r(env) for r in arg_runs], **{k: r(env) for k, r in kw_runs.items()})

    return Node("value", bounded(run, ctx.col(node)))


def _check_keywords(node: ast.Call, ctx: Ctx, spec: Fn, name: str) -> dict[str, ast.AST]:
    shown = name.removeprefix("method:")
    allowed = ", ".join(f"{k}=" for k in spec.keywords) or f"no keywords for {shown}"
    out = {}
    for k in node.keywords:
        if k.arg is None:
            raise refuse(ctx, k, "(`**` unpacking) is not allowed", allowed)
        if k.arg not in spec.keywords:
            raise fail(ctx.col(k), k.arg, f"is not an allowed keyword for {shown}", allowed)
        if k.arg in out:
            raise fail(ctx.col(k), k.arg, "is given twice", allowed)
        out[k.arg] = k.value
    return out


def _argument(a: ast.AST, ctx: Ctx, depth: int, name: str, spec: Fn, k: int) -> Node:
    if spec.collective and k == spec.axis_arg:
        return _axis_name(a, ctx)
    if name == "method:astype":
        return _dtype(a, ctx)
    if not (name == "jnp.einsum" and k == 0):
        _no_strings(a, ctx)
    return compile_value(a, ctx, depth)


def _keyword(value: ast.AST, ctx: Ctx, depth: int, key: str) -> Node:
    if key == "axis_name":
        return _axis_name(value, ctx)
    if key == "dtype":
        return _dtype(value, ctx)
    if key in LITERAL_KEYWORDS:
        return lit(_literal(value, ctx, depth, "ints, None and tuples or lists of them"))
    if key in CHOICES:
        if not (isinstance(value, ast.Constant) and value.value in CHOICES[key]):
            raise refuse(
                ctx,
                value,
                f"is not a choice of {key}=",
                " or ".join(repr(c) for c in CHOICES[key]),
            )
        return lit(value.value)
    _no_strings(value, ctx)
    return compile_value(value, ctx, depth)


def _no_strings(node: ast.AST, ctx: Ctx) -> None:
    """Strings are einsum specs, axis names and dtypes, nothing else: ``jnp.sum(x, 'i')``
    would reduce over a named axis, a collective the program would not know about."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        raise refuse(
            ctx,
            node,
            "is a string where JAX takes an array, number or axis",
            "strings only as einsum specs, axis names of lax collectives and dtypes",
        )
    for child in node.elts if isinstance(node, (ast.Tuple, ast.List)) else ():
        _no_strings(child, ctx)


def _axis_name(a: ast.AST, ctx: Ctx) -> Node:
    """A string literal ('i'), or a tuple of them (('data', 'model'): every named axis at once,
    as on a mesh)."""
    if isinstance(a, ast.Tuple) and 1 <= len(a.elts) <= MAX_AXES:
        names = tuple(_one_axis(e, ctx) for e in a.elts)
        if len(set(names)) < len(names):
            raise refuse(ctx, a, "names an axis twice", "each axis once")
        return lit(names)
    return lit(_one_axis(a, ctx))


def _one_axis(a: ast.AST, ctx: Ctx) -> str:
    if not (
        isinstance(a, ast.Constant) and isinstance(a.value, str) and AXIS_NAME.fullmatch(a.value)
    ):
        raise refuse(
            ctx,
            a,
            "is not an axis name",
            f"a string literal like 'i', or a tuple of up to {MAX_AXES} of them",
        )
    ctx.axis_names.add(a.value)
    return a.value


def _dtype(a: ast.AST, ctx: Ctx) -> Node:
    if not (isinstance(a, ast.Constant) and a.value in DTYPES and isinstance(a.value, str)):
        raise refuse(ctx, a, "is not an allowed dtype", ", ".join(repr(d) for d in DTYPES))
    return lit(a.value)


def _literal(node: ast.AST, ctx: Ctx, depth: int, allowed: str) -> Any:
    """A literal structure: ints, None, and tuples or lists of them."""
    out = compile_node(node, ctx, depth)
    if isinstance(node, (ast.Tuple, ast.List)) and out.is_literal:
        return out.literal
    if out.is_literal and (out.literal is None or type(out.literal) is int):
        return out.literal
    raise refuse(ctx, node, "is not a literal here", allowed)


def _check_reshape(node: ast.Call, ctx: Ctx, dims: list[Node]) -> None:
    values = []
    for d in dims:
        v = d.literal if d.is_literal else None
        values.extend(v if isinstance(v, (tuple, list)) else [v])
    if all(type(v) is int for v in values) and math.prod(v for v in values if v > 0) > MAX_ELEMENTS:
        raise refuse(ctx, node, "reshapes to more than `2**40` elements", "smaller sizes")


def _vmap(node: ast.Call, ctx: Ctx, depth: int, keywords: dict[str, ast.AST]) -> Node:
    inner = compile_node(node.args[0], ctx, depth)
    ok = inner.kind == "fn" and not inner.name.startswith("method:")
    if not ok or inner.spec.collective:
        raise refuse(
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
        return resolve("jax.vmap")(inner_run(env), **kw)

    return Node("fn", run, f"jax.vmap({inner.name})", inner.spec)
