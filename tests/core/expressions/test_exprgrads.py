"""jax.grad and jax.value_and_grad in your own f: a lambda as their first argument, checked as
any part of f, and the result equal to JAX's own gradient of the same function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmapviz.core.expressions import expr, exprgrads
from pmapviz.core.expressions.exprvocab import ExprError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def _loss(x, w):
    return jnp.mean(jnp.tanh(x @ w) ** 2)


def test_the_typed_training_step_is_jaxs_own_step():
    typed = expr.program("x, w", "w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)")
    want = W - 0.1 * jax.grad(lambda w: _loss(X, w))(W)
    np.testing.assert_allclose(jax.jit(typed.build())(X, W), want, rtol=1e-6)


def test_value_and_grad_with_argnums_gives_the_value_and_each_gradient():
    typed = expr.program(
        "x, w",
        "jax.value_and_grad(lambda w, b: jnp.sum((x @ w + b) ** 2), argnums=(0, 1))(w, w[0])",
    )
    value, (gw, gb) = typed.build()(X, W)

    def want(w, b):
        return jnp.sum((X @ w + b) ** 2)

    v, (ww, wb) = jax.value_and_grad(want, argnums=(0, 1))(W, W[0])
    np.testing.assert_allclose(value, v, rtol=1e-5)
    np.testing.assert_allclose(gw, ww, rtol=1e-5)
    np.testing.assert_allclose(gb, wb, rtol=1e-5)


def test_a_function_of_the_allow_list_and_a_gradient_of_a_gradient():
    np.testing.assert_allclose(
        expr.program("x", "jax.grad(jnp.sum)(x)").build()(X), np.ones_like(X)
    )
    second = expr.program(
        "x", "jax.grad(lambda a: jax.grad(lambda b: jnp.sum(b ** 3))(a).sum())(x)"
    )
    np.testing.assert_allclose(second.build()(X), 6 * X, rtol=1e-5)


def test_a_collective_inside_the_lambda_records_its_axis_name():
    typed = expr.program("x", "jax.grad(lambda v: lax.psum(jnp.sum(v ** 2), 'i'))(x)")
    assert typed.axis_names == ("i",)
    out = jax.vmap(typed.build(), axis_name="i")(X)
    assert out.shape == X.shape and np.all(np.isfinite(out))


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("lambda w: w", "(a lambda outside jax.grad(...) and jax.value_and_grad(...))"),
        ("jnp.sum(lambda w: w)", "column 9: `lambda w: w` (a lambda outside"),
        ("jax.grad(lambda _w: jnp.sum(_w))(w)", "column 17: `_w` is not allowed as a parameter"),
        ("jax.grad(lambda jnp: 1.0)(w)", "`jnp` is not allowed as a parameter"),
        ("jax.grad(lambda w, w: jnp.sum(w))(w)", "`w` is given twice"),
        ("jax.grad(lambda w=1: w)(w)", "takes only plain parameters"),
        ("jax.grad(lambda *a: 1.0)(w)", "takes only plain parameters"),
        ("jax.grad(lambda a, b, c, d, e: a)(w)", "takes 5 parameters; allowed here: 1 to 4"),
        ("jax.grad(jnp.sum, argnums=3)(w)", "`3` is not an argnums here"),
        ("jax.grad(lambda w: jnp.sum(w), argnums=x)(w)", "`x` is not an argnums here"),
        ("jax.grad(lambda a, b: a, argnums=(1, 1))(w, w)", "is not an argnums here"),
        ("jax.grad(lax.psum)(w)", "`lax.psum` cannot be differentiated"),
        ("jax.grad(w)(w)", "`w` cannot be differentiated"),
        ("jax.grad(lambda w: jnp.sum(w))(w, w)", "passes 2 positional argument(s)"),
        ("jax.grad(lambda w: jnp.zeros(3))(w)", "`zeros` is not an allowed jnp function"),
        ("jax.grad(lambda w: __import__('os'))(w)", "`__import__` is not allowed here"),
    ],
)
def test_what_is_refused_is_named_with_its_column_and_what_is_allowed(body, says):
    with pytest.raises(ExprError) as caught:
        expr.program("x, w", body)
    assert says in str(caught.value), str(caught.value)


def test_a_lambdas_parameters_are_seen_only_inside_it():
    with pytest.raises(ExprError, match="`v` is not allowed here"):
        expr.program("x", "jax.grad(lambda v: jnp.sum(v))(x) + v")


def test_what_jax_refuses_while_tracing_is_jaxs_own_error():
    typed = expr.program("x, w", "jax.grad(lambda w: x @ w)(w)")
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        jax.jit(typed.build())(X, W)


def test_a_lambda_counts_against_the_node_limit():
    body = "jax.grad(lambda v: jnp.sum(jnp.stack([" + ",".join(["v"] * 200) + "])))(x)"
    with pytest.raises(ExprError, match="longer than 200 parts"):
        expr.program("x", body)
    assert exprgrads.MAX_PARAMS == 4
