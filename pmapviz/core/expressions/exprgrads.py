"""Derivatives in "your own f": ``jax.grad`` and ``jax.value_and_grad`` of a lambda or of an
allowed function, so a training step compiles from its text:
``w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)``.

The lambda is the one place a lambda may appear (the first argument of ``jax.grad`` or
``jax.value_and_grad``), and it is checked as any other part of f: plain parameters only (at
most :data:`MAX_PARAMS`, none starting with ``_`` or named ``jnp``, ``lax`` or ``jax``), its
body an expression of the same language under the same node and depth limits (its
parameters join f's arguments there; f's arguments stay visible, as a closure's would). It is
compiled into a closure like every other node: nothing typed is run as Python. ``argnums=``
takes a literal int or a tuple of them, each a parameter of the function. What JAX refuses when
f is traced (a gradient of a non-scalar, of integers) is JAX's own error, as for any call.
"""

from __future__ import annotations

import ast

from pmapviz.core.expressions.exprnodes import Ctx, Node, compile_node, compile_value, refuse
from pmapviz.core.expressions.exprvocab import Fn, resolve

GRADS = ("jax.grad", "jax.value_and_grad")
MAX_PARAMS = 4  # a lambda's parameters
_RESERVED = frozenset({"jnp", "lax", "jax"})
_LAMBDA_TEXT = "a lambda of plain parameters, e.g. lambda w: jnp.sum(w ** 2)"


def check_grad(
    node: ast.Call, ctx: Ctx, depth: int, keywords: dict[str, ast.AST], name: str
) -> Node:
    """``jax.grad(F, argnums=...)`` / ``jax.value_and_grad(F, ...)`` (``name``): a function
    taking what F takes. F is a lambda (:func:`compile_lambda`) or ``jnp.<fn>`` /
    ``jax.nn.<fn>``."""
    target = node.args[0]
    if isinstance(target, ast.Lambda):
        inner = compile_lambda(target, ctx, depth)
    else:
        inner = compile_node(target, ctx, depth)
        if inner.kind != "fn" or inner.name.startswith("method:") or inner.spec.collective:
            raise refuse(
                ctx,
                target,
                f"cannot be differentiated by {name} here",
                f"{_LAMBDA_TEXT}, or jnp.<fn> / jax.nn.<fn>",
            )
    argnums = _argnums(keywords.get("argnums"), ctx, inner.spec.max_pos)
    inner_run = inner.run

    def run(env):
        return resolve(name)(inner_run(env), argnums=argnums)

    return Node("fn", run, f"{name}({inner.name})", Fn(inner.spec.min_pos, inner.spec.max_pos))


def compile_lambda(node: ast.Lambda, ctx: Ctx, depth: int) -> Node:
    """``lambda w, b: body``: a function of its parameters, its body checked with them
    added to f's arguments."""
    params = _params(node, ctx)
    outer = ctx.args
    ctx.args = tuple(dict.fromkeys((*outer, *params)))
    try:
        body = compile_value(node.body, ctx, depth)
    finally:
        ctx.args = outer
    body_run = body.run

    def run(env):
        def fn(*values):
            return body_run({**env, **dict(zip(params, values, strict=True))})

        return fn

    return Node("fn", run, "lambda", Fn(len(params), len(params)))


def _params(node: ast.Lambda, ctx: Ctx) -> tuple[str, ...]:
    a = node.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or a.kw_defaults:
        raise refuse(ctx, node, "takes only plain parameters here", _LAMBDA_TEXT)
    if not 1 <= len(a.args) <= MAX_PARAMS:
        raise refuse(ctx, node, f"takes {len(a.args)} parameters", f"1 to {MAX_PARAMS}")
    names: list[str] = []
    for p in a.args:
        if p.arg.startswith("_") or p.arg in _RESERVED or p.arg in names:
            problem = "is given twice" if p.arg in names else "is not allowed as a parameter"
            raise refuse(ctx, p, problem, "a plain name not starting with _, not jnp, lax or jax")
        names.append(p.arg)
    return tuple(names)


def _argnums(node: ast.AST | None, ctx: Ctx, n_params: int) -> int | tuple[int, ...]:
    """``argnums=``: 0 by default; a literal int or a tuple of distinct ones below the
    function's number of parameters."""
    if node is None:
        return 0
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    values = [e.value if isinstance(e, ast.Constant) else None for e in items]
    ok = all(type(v) is int and 0 <= v < n_params for v in values) and values
    if not ok or len(set(values)) < len(values):
        raise refuse(
            ctx,
            node,
            "is not an argnums here",
            f"a literal position from 0 to {n_params - 1}, or a tuple of distinct ones",
        )
    return tuple(values) if isinstance(node, ast.Tuple) else values[0]
