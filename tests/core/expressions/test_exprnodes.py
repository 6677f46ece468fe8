"""The checked nodes: refusals point at the column and say what is allowed there, and an
intermediate array too big for the bounds is refused while f is traced."""

from __future__ import annotations

import pytest

from pmapviz.core.expressions import expr
from pmapviz.core.expressions.exprvocab import ExprError
from pmapviz.core.planning.planning import plan
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


# ------------------------------------------------------------------ columns and argument names
@pytest.mark.parametrize(
    "text, column, token",
    [
        ("jnp.tanh(os.x)", 10, "`os`"),
        ("x + jnp.load('f')", 9, "`load`"),
        ("x.sum().__class__", 9, "`__class__`"),
        ("x  <<  2", 4, "`<<`"),
        ("jnp.sum(x, where=x)", 12, "`where`"),
        ("  lax.psum(x, y)", 15, "`y`"),
        ("x + \u0445", 5, "U+0445"),
        ("x ** 10", 6, "`10`"),
        ("x; y", 2, "not a valid expression"),
        ("jax.vmap(lambda a: a)(x)", 10, "`lambda a: a`"),
    ],
)
def test_messages_point_at_the_column(text, column, token):
    with pytest.raises(ExprError) as info:
        expr.program("x, w, b", text)
    assert info.value.column == column
    assert str(info.value).startswith(f"column {column}: ")
    assert token in str(info.value)
    assert "allowed here:" in str(info.value)


def test_unknown_name_lists_the_arguments():
    with pytest.raises(ExprError, match="the arguments x, w, b, numbers"):
        expr.program("x, w, b", "jnp.tanh(os.x)")


def _nested(fn: str, times: int) -> str:
    return f"{fn}(" * times + "x" + ", 'i')" * times


@pytest.mark.parametrize(
    "body, column",
    [
        (f"jnp.sum({_nested('lax.all_gather', 14)})", None),
        ("jnp.sum((x[:, None] * x)[:, :, None] * x)", 9),
        ("jnp.einsum('i,j,k->ijk', x, x, x)", 1),
        ("jnp.expand_dims(x, (" + ", ".join(map(str, range(40))) + "))", 1),
    ],
)
def test_huge_intermediates_are_refused_while_tracing(body, column):
    """Shapes are static while tracing: an intermediate above 2**40 elements or 32 axes is
    refused before XLA sees it (an int64 overflow there would abort the process)."""
    p = plan(expr.program("x", body), [(N, 2**15)], axis_name="i", n_devices=N)
    assert [q.code for q in p.problems] == ["function_rejects_shapes"]
    assert "would make an array of shape" in p.problems[0].message
    if column:
        assert f"column {column}:" in p.problems[0].message
