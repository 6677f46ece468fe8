"""f traced on the per-device blocks, and each rule on the output, on a hand-made output."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from pmapviz.core.expressions import expr
from pmapviz.core.planning import planfacts, planoutputrules
from pmapviz.core.planning.planning import plan
from tests.core.planning.test_planfacts import _leaf, _norm


def test_unbound_axis_name_in_a_plain_function():
    p = plan(lambda x: lax.psum(x, "j"), [(8, 3)], axis_name="i", n_devices=8)
    assert p.problems[0].code == "unbound_axis_name" and "'j'" in p.problems[0].fix


def _out(leaves, varies=False, treedef=None, unfit=None):
    """A hand-made traced output: ``leaves`` are (name, per-device shape, out_axes), each
    differing from device to device when ``varies``."""
    treedef = treedef or jax.tree.structure(tuple(0 for _ in leaves))
    return planfacts.Output(
        treedef,
        tuple(planfacts.OutLeaf(nm, s, "float32", a, varies) for nm, s, a in leaves),
        unfit,
    )


def test_each_output_rule_on_a_hand_made_output():
    x = [_leaf(0, "x", (8, 3), 0)]
    one = jax.tree.structure(0)
    n = _norm(x, out_axes=-1, output=_out([("out", (3,), -1)], treedef=one))
    q = planoutputrules.rule_negative_out_axes(n)
    assert q.code == "negative_out_axes" and "e.g. out_axes=1." in q.fix
    n = _norm(x, out_axes=(0, 2), output=_out([("out[0]", (3,), 0), ("out[1]", (), 2)]))
    q = planoutputrules.rule_out_axes_in_range(n)
    assert q.message == (
        "out_axes=2 for out[1], but each device returns shape ((3,), ()): the "
        "stacked result has rank 1, so out_axes can be 0 to 0 for out[1]."
    )
    n = _norm(x, output=_out([("out", (2**20, 2**20), 0)], treedef=one))
    assert "would have 8,796,093,022,208 elements" in planoutputrules.rule_output_fits(n).message
    n = _norm(x, out_axes=None, output=_out([("out", (3,), None)], varies=True, treedef=one))
    assert (
        "but f's output differs from device" in planoutputrules.rule_out_axes_none_varies(n).message
    )
    n = _norm(
        x, out_axes={"s": 0}, output=_out([("out", (3,), None)], unfit="no fit.", treedef=one)
    )
    assert planoutputrules.rule_out_axes_structure(n).message == "no fit."
    for rule in planoutputrules.OUTPUT_RULES:  # out_axes that do not fit: nothing more to check
        assert rule(n) is None
    fine = _norm(x, out_axes=None, output=_out([("out", (3,), None)], treedef=one))
    assert [planfacts.as_list(r(fine)) for r in planoutputrules.OUTPUT_RULES] == [[], [], [], []]
    assert planoutputrules.rule_out_axes_structure(fine) is None


def test_a_shard_map_only_keyword_in_pmap_says_where_it_belongs():
    prog = expr.program("x", "lax.all_gather(x, 'i', to='invarying')")
    p = plan(prog, [(8, 4)], in_axes=(0,), out_axes=None, axis_name="i", n_devices=8)
    assert [q.code for q in p.problems] == ["function_rejects_shapes"]
    assert "belongs to jax.shard_map" in p.problems[0].fix
    other = plan(expr.program("x", "x @ x @ x"), [(8, 4, 3)], in_axes=(0,), n_devices=8)
    assert "belongs to jax.shard_map" not in other.problems[0].fix


def _vmap_refuses_none(fn, structs, in_axes, axis_name) -> bool:
    """JAX's own answer for one output: vmap refuses out_axes=None exactly when it varies."""
    try:
        jax.eval_shape(jax.vmap(fn, in_axes=in_axes, out_axes=None, axis_name=axis_name), *structs)
    except ValueError as err:
        assert "out_axes" in str(err), err
        return True
    return False


VARYING_CASES = {  # f, its per-leaf arguments' in_axes
    "x * 2": (lambda x, y: x * 2, (0, None)),
    "psum": (lambda x, y: lax.psum(x, "i"), (0, None)),
    "the unmapped y": (lambda x, y: y + 1.0, (0, None)),
    "a mix in a dict": (
        lambda x, y: {"s": lax.pmean(x, "i"), "v": x + y, "c": jnp.ones(2), "k": 3.0},
        (0, None),
    ),
    "axis_index": (lambda x, y: lax.axis_index("i"), (0, None)),
    "all_gather": (lambda x, y: lax.all_gather(x, "i"), (0, None)),
    "int and bfloat16": (lambda x, y: (x.astype(jnp.int32), y.astype(jnp.bfloat16)), (0, None)),
    "a PRNG key per device": (lambda x, y: jax.random.key(lax.axis_index("i")), (0, None)),
    "a PRNG key": (lambda x, y: jax.random.key(0), (0, None)),
    "a comparison of a psum": (lambda x, y: lax.psum(x, "i") > y, (0, None)),
}


def test_each_output_leaf_varies_exactly_where_vmap_refuses_out_axes_none():
    """The flags read from vmap's batching in the one trace are JAX's answer leaf by leaf
    (the oracle: vmap with out_axes=None on that leaf alone)."""
    structs = (jax.ShapeDtypeStruct((8, 3), jnp.float32), jax.ShapeDtypeStruct((3,), jnp.float32))
    for name, (fn, in_axes) in VARYING_CASES.items():
        out, flags = planoutputrules._trace(fn, structs, in_axes, "i")
        assert len(flags) == len(jax.tree.leaves(out)), name
        for i, flag in enumerate(flags):

            def leaf(*xs, fn=fn, i=i):
                return jax.tree.leaves(fn(*xs))[i]

            assert flag == _vmap_refuses_none(leaf, structs, in_axes, "i"), (name, i)
        assert any(flags) == _vmap_refuses_none(fn, structs, in_axes, "i"), name


def test_a_new_setting_traces_f_once():
    """Shapes, dtypes and what varies come from one trace of f (a second, with out_axes=None,
    doubled the explorer's cost of a new setting)."""
    calls = []

    def f(x):
        calls.append(x.shape)
        return {"same": lax.psum(x, "i"), "own": x * 2}

    p = plan(f, [(8, 5)], out_axes={"same": None, "own": 0}, axis_name="i", n_devices=8)
    assert p.ok and p.out_shapes == {"same": (5,), "own": (8, 5)}
    assert calls == [(5,)]
    q = plan(f, [(8, 6)], out_axes=None, axis_name="i", n_devices=8)
    assert [x.code for x in q.problems] == ["out_axes_none_varies"]
    assert "f's output differs" in q.problems[0].message and calls == [(5,), (6,)]
