"""f traced on the per-device blocks, and each rule on the output, on a hand-made output."""

from __future__ import annotations

import jax
from jax import lax

from pmapviz import expr, planfacts, planoutputrules
from pmapviz.planning import plan
from tests.core.test_planfacts import _leaf, _norm


def test_unbound_axis_name_in_a_plain_function():
    p = plan(lambda x: lax.psum(x, "j"), [(8, 3)], axis_name="i", n_devices=8)
    assert p.problems[0].code == "unbound_axis_name" and "'j'" in p.problems[0].fix


def _out(leaves, varies=False, treedef=None, unfit=None):
    """A hand-made traced output: ``leaves`` are (name, per-device shape, out_axes)."""
    treedef = treedef or jax.tree.structure(tuple(0 for _ in leaves))
    return planfacts.Output(
        lambda *xs: xs,
        (),
        treedef,
        tuple(planfacts.OutLeaf(nm, s, "float32", a) for nm, s, a in leaves),
        varies,
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
