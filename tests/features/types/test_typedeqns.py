"""Every equation walked in order, nested ones after their equation, each type JAX's text."""

import jax
import jax.numpy as jnp
from jax import lax

from pmapviz.features.types import typedeqns


def test_every_equation_in_order_with_its_type_and_line():
    def f(x, w):
        y = jnp.tanh(x @ w)
        return lax.cond(y.sum() > 0, lambda v: v * 2, lambda v: -v, y)

    closed = jax.make_jaxpr(f)(jnp.ones((4, 3)), jnp.ones((3, 2)))
    walked = typedeqns.walk(closed)
    expected = []

    def walk(j, depth):
        for e in j.eqns:
            expected.append(
                (depth, e.primitive.name, [str(v.aval.str_short(True)) for v in e.outvars])
            )
            for sub in jax.extend.core.jaxprs_in_params(e.params):
                walk(sub, depth + 1)

    walk(closed.jaxpr, 0)
    assert [(e.depth, e.primitive, list(e.out_types)) for e in walked.eqns] == expected
    assert [e.index for e in walked.eqns] == list(range(len(expected)))
    assert walked.in_types == ("f32[4,3]", "f32[3,2]") and walked.out_types == ("f32[4,2]",)
    dot = walked.eqns[0]
    assert dot.primitive == "dot_general" and dot.out_shapes == ((4, 2),)
    assert dot.file == __file__ and dot.function.endswith(".f")
    assert dot.source == f"test_typedeqns.py:{dot.line} ({dot.function})"
    assert any(e.depth == 1 for e in walked.eqns)  # cond's branches, after cond


def test_shard_map_s_body_is_per_device_and_marked_manual():
    mesh = jax.make_mesh((8,), ("i",))
    x = jax.ShapeDtypeStruct((16, 2), jnp.float32, sharding=jax.NamedSharding(mesh, jax.P("i")))
    f = jax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=jax.P("i"), out_specs=jax.P())
    with jax.set_mesh(mesh):
        walked = typedeqns.walk(jax.jit(f).trace(x).jaxpr)
    assert walked.in_types == ("f32[16@i,2]",)
    smap, psum = walked.eqns
    assert (smap.primitive, smap.manual, psum.manual) == ("shard_map", False, True)
    assert psum.out_types == ("f32[2,2]",) and psum.depth == 1


def test_the_walk_is_bounded_and_counts_what_it_left_out(monkeypatch):
    def deep(x):
        for _ in range(5):
            x = jax.jit(lambda v: v + 1)(x)
        return x

    closed = jax.make_jaxpr(deep)(1.0)
    full = typedeqns.walk(closed)
    monkeypatch.setattr(typedeqns, "MAX_ROWS", 3)
    cut = typedeqns.walk(closed)
    assert len(cut.eqns) == 3 and cut.left_out == len(full.eqns) - 3
    monkeypatch.setattr(typedeqns, "MAX_ROWS", 2000)
    monkeypatch.setattr(typedeqns, "MAX_DEPTH", 0)
    shallow = typedeqns.walk(closed)
    assert {e.depth for e in shallow.eqns} == {0} and shallow.left_out == len(full.eqns) - 5


def test_64_deep_nesting_is_walked_without_recursion():
    def nest(x, k=64):
        return x if k == 0 else jax.jit(lambda v: nest(v, k - 1) * 2)(x)

    walked = typedeqns.walk(jax.make_jaxpr(nest)(1.0))
    assert max(e.depth for e in walked.eqns) == typedeqns.MAX_DEPTH
    assert walked.left_out > 0
