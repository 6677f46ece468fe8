"""Calls: a collective's axis names and keywords (all_gather's to=, tuples of axes), checked
and honoured by JAX."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pmapviz.core.expressions import expr, exprvocab


def test_all_gather_takes_to_as_one_of_its_two_words_and_jax_honours_it():
    p = expr.program("x", "lax.all_gather(x, 'i', tiled=True, to='invarying')")
    assert p.axis_names == ("i",)
    mesh = jax.make_mesh((2,), ("i",), devices=jax.devices()[:2])
    f = jax.shard_map(p.build(), mesh=mesh, in_specs=jax.P("i"), out_specs=jax.P())
    x = jax.device_put(np.arange(4.0).reshape(2, 2), jax.NamedSharding(mesh, jax.P("i")))
    out = f(x)  # invarying: out_specs may say P(), all of it
    assert out.shape == (2, 2) and np.array_equal(out, np.arange(4.0).reshape(2, 2))
    with pytest.raises(exprvocab.ExprError, match="not a choice of to=.*'varying' or 'invarying'"):
        expr.program("x", "lax.all_gather(x, 'i', to='everywhere')")
    with pytest.raises(exprvocab.ExprError, match="string where JAX takes"):
        expr.program("x", "lax.all_gather(x, 'i', axis='invarying')")


def test_a_collective_may_name_a_tuple_of_axes_each_once():
    p = expr.program("x", "lax.psum(x, ('a', 'b'))")
    assert p.axis_names == ("a", "b")
    f = jax.vmap(jax.vmap(p.build(), axis_name="b"), axis_name="a")
    assert float(f(np.ones((2, 3)))[0, 0]) == 6.0  # summed over both axes
    with pytest.raises(exprvocab.ExprError, match="names an axis twice"):
        expr.program("x", "lax.psum(x, ('a', 'a'))")
    with pytest.raises(exprvocab.ExprError, match="is not an axis name"):
        expr.program("x", "lax.psum(x, ('a', 1))")
    with pytest.raises(exprvocab.ExprError, match="is not an axis name"):
        expr.program("x", "lax.psum(x, ('a', 'b', 'c', 'd', 'e'))")
