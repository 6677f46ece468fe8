"""pmapviz.core.base.pytrees: tree text parsing (bounded, column-precise), leaf order and names,
prefix broadcasting and the flat wrapper. Oracles are JAX's own tree utilities and Python's
``ast.literal_eval`` (test-side only), never the module's own helpers."""

import ast
import time

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmapviz.core.base import pytrees
from pmapviz.core.base.pytrees import (
    LEAF,
    TreeError,
    broadcast,
    flat_function,
    fmt_prefix,
    is_axis,
    is_shape,
    is_tree_text,
    leaves,
    parse_tree,
    render,
    skeleton,
    unflatten,
)
from pmapviz.core.base.valueparse import SettingError

# ------------------------------------------------------------------ strategies
keys = st.sampled_from(["w", "b", "scale", "k_1", "Z"])
shapes = st.lists(st.integers(0, 9), max_size=3).map(tuple)


def trees(leaf):
    return st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.dictionaries(keys, kids, min_size=1, max_size=3),
            st.lists(kids, min_size=1, max_size=3).map(tuple),
        ),
        max_leaves=6,
    )


def _is_jax_leaf(x):
    return is_shape(x)


def _py(tree):
    """Python source for a shape tree, written independently of pytrees.render."""
    if is_shape(tree):
        return "(" + "".join(f"{d}, " for d in tree) + ")"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"'{k}': {_py(v)}" for k, v in tree.items()) + "}"
    return "(" + "".join(f"{_py(v)}, " for v in tree) + ")"


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "text, tree",
    [
        ("(8, 4)", (8, 4)),
        ("()", ()),
        ("[3]", (3,)),
        ("{'w': (5, 2), 'b': (2,)}", {"w": (5, 2), "b": (2,)}),
        ('{"w": [5, 2]}', {"w": (5, 2)}),
        ("((8, 4), (4,))", ((8, 4), (4,))),
        ("{'layer': {'w': (1_000, 2)}, 'n': ()}", {"layer": {"w": (1000, 2)}, "n": ()}),
        ("  ( ( 2 , ) , ) ", ((2,),)),
    ],
)
def test_shape_trees_parse_to_the_literal_they_spell(text, tree):
    assert parse_tree(text, "params", "shape") == tree
    assert parse_tree(text, "params", "shape") == _literal(text)


def _literal(text):
    """ast.literal_eval with lists read as tuples, as the tree syntax means them."""

    def fix(v):
        if isinstance(v, (list, tuple)):
            return tuple(fix(i) for i in v)
        if isinstance(v, dict):
            return {k: fix(i) for k, i in v.items()}
        return v

    return fix(ast.literal_eval(text.replace("1_000", "1000")))


@pytest.mark.parametrize(
    "text, tree",
    [
        ("0", 0),
        ("None", None),
        ("-1", -1),
        ("{'w': None, 'b': 0}", {"w": None, "b": 0}),
        ("(0, {'w': None})", (0, {"w": None})),
        ("(None,)", (None,)),
    ],
)
def test_axis_trees_parse(text, tree):
    assert parse_tree(text, "in_axes", "axis") == tree


@settings(max_examples=150, deadline=None)
@given(trees(shapes))
def test_any_shape_tree_round_trips_through_its_python_text(tree):
    assert parse_tree(_py(tree), "p", "shape") == tree


@pytest.mark.parametrize(
    "text, column, words",
    [
        ("{'w': (5, 2), 'b': (2,))", 24, "expected ',' or '}'"),
        ("(5, 2", 6, "expected ',' or ')', found the end of the text (column 6)"),
        ("{w: (5, 2)}", 2, "quoted key"),
        ("{'w': (5, 2), 'w': (2,)}", 15, "given twice"),
        ("(5, x)", 5, "not allowed"),
        ("{'w': (5, -2)}", 11, "sizes are whole numbers"),
        ("{'w': (12345678901234567, 2)}", 8, "too long"),
        ("((5, 2), 3)", None, "either sizes"),
        ("{}", None, "empty dict"),
        ("(5, 2) (3,)", 8, "end of the tree"),
    ],
)
def test_bad_shape_trees_say_where_and_what(text, column, words):
    with pytest.raises(TreeError) as err:
        parse_tree(text, "params", "shape")
    msg = str(err.value)
    assert msg.startswith("params"), msg
    assert words in msg, msg
    if column is not None:
        assert f"column {column}" in msg, msg
    assert isinstance(err.value, SettingError)  # the settings layer's own error type


def test_keys_are_data_never_names():
    tree = parse_tree("{'__class__': (2,)}", "p", "shape")
    assert tree == {"__class__": (2,)} and type(tree) is dict


def test_axis_trees_refuse_shapes_and_huge_axes():
    with pytest.raises(TreeError, match="expected an axis"):
        parse_tree("{'w': 'b'}", "in_axes", "axis")
    with pytest.raises(TreeError, match="too long"):
        parse_tree("10000", "in_axes", "axis")
    assert parse_tree("999", "in_axes", "axis") == 999


def test_limits_on_length_depth_and_leaves():
    with pytest.raises(TreeError, match=f"at most {pytrees.MAX_TREE_TEXT}"):
        parse_tree("(" + "1, " * 300 + ")", "p", "shape")
    deep = "(" * (pytrees.MAX_TREE_DEPTH + 1) + "(2,)" + ",)" * (pytrees.MAX_TREE_DEPTH + 1)
    with pytest.raises(TreeError, match="nest at most"):
        parse_tree(deep, "p", "shape")
    ok = "(" * pytrees.MAX_TREE_DEPTH + "(2,)" + ",)" * pytrees.MAX_TREE_DEPTH
    assert count_leaves(parse_tree(ok, "p", "shape")) == 1
    many = "(" + ", ".join(["(2,)"] * (pytrees.MAX_LEAVES + 1)) + ")"
    with pytest.raises(TreeError, match=f"more than {pytrees.MAX_LEAVES} arrays"):
        parse_tree(many, "p", "shape")
    exactly = "(" + ", ".join(["(2,)"] * pytrees.MAX_LEAVES) + ")"
    assert count_leaves(parse_tree(exactly, "p", "shape")) == pytrees.MAX_LEAVES


def count_leaves(tree):
    return len(jax.tree.leaves(tree, is_leaf=is_shape))


@pytest.mark.parametrize(
    "text",
    ["(" * 10_000, "{" * 400, "1" * 499, "((((((((((((", "\u0661\u0662", "'\u212a'", "None()" * 80],
)
def test_hostile_tree_text_is_refused_fast(text):
    start = time.perf_counter()
    with pytest.raises(TreeError):
        parse_tree(text, "p", "shape")
    assert time.perf_counter() - start < 0.05


def test_is_tree_text():
    assert is_tree_text("{'w': (2,)}")
    assert is_tree_text("((8, 4), (4,))")
    assert not is_tree_text("(8, 4)")
    assert not is_tree_text("8, 4")
    assert not is_tree_text(None)


def test_is_shape_and_is_axis_are_exact_about_types():
    assert is_shape(()) and is_shape((2, 3))
    assert not is_shape((2, True)) and not is_shape([2, 3]) and not is_shape((2.0,))
    assert is_axis(None) and is_axis(-1)
    assert not is_axis(True) and not is_axis(0.0) and not is_axis("0")


# ------------------------------------------------------------------ walking
@settings(max_examples=150, deadline=None)
@given(trees(shapes))
def test_leaves_come_in_jax_order_with_jax_key_names(tree):
    paths, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_jax_leaf)
    want = [("params" + jax.tree_util.keystr(path), leaf) for path, leaf in paths]
    assert leaves(tree, "params") == want


@settings(max_examples=150, deadline=None)
@given(trees(shapes))
def test_skeleton_and_unflatten_agree_with_jax(tree):
    skel = skeleton(tree)
    flat, treedef = jax.tree.flatten(tree, is_leaf=_is_jax_leaf)
    assert pytrees.count(skel) == len(flat)
    marks = [object() for _ in flat]
    mine, theirs = unflatten(skel, marks), jax.tree.unflatten(treedef, marks)
    assert jax.tree.structure(mine) == jax.tree.structure(theirs)
    assert jax.tree.leaves(mine) == jax.tree.leaves(theirs)


def test_skeletons_are_hashable_and_name_their_kind():
    skel = skeleton({"w": (5, 2), "b": ((2,), ())})
    assert hash(skel) == hash(skeleton({"b": ((9,), (1,)), "w": ()}))
    assert skel == ("dict", (("b", ("tuple", (LEAF, LEAF))), ("w", LEAF)))
    assert skeleton((3,)) == LEAF


def test_none_is_an_empty_subtree_as_in_jax():
    assert leaves(None, "p") == []
    assert leaves({"a": None, "b": (2,)}, "p") == [("p['b']", (2,))]


@settings(max_examples=100, deadline=None)
@given(trees(shapes))
def test_render_writes_the_tree_back_as_python(tree):
    skel = skeleton(tree)
    names = [f"a{i}" for i in range(pytrees.count(skel))]
    source = render(skel, names)
    values = {n: i for i, n in enumerate(names)}
    rebuilt = eval(compile(ast.parse(source, mode="eval"), "<t>", "eval"), {}, values)  # noqa: S307
    assert jax.tree.leaves(rebuilt) == list(range(len(names)))
    assert jax.tree.structure(rebuilt) == jax.tree.structure(unflatten(skel, names))


def test_render_keeps_one_element_tuples_tuples():
    assert render(("tuple", (LEAF,)), ["a"]) == "(a,)"
    assert render(("dict", (("w", LEAF),)), ["w0"]) == "{'w': w0}"


# ------------------------------------------------------------------ prefixes
axes = st.one_of(st.none(), st.integers(-2, 2))


@st.composite
def tree_and_prefix(draw):
    tree = draw(trees(shapes))
    kind = draw(st.sampled_from(["axis", "matching", "random"]))
    if kind == "axis":
        return tree, draw(axes)
    if kind == "matching":  # the tree's own structure, sometimes cut short with axes

        def cut(t):
            if is_shape(t) or draw(st.integers(0, 3)) == 0:
                return draw(axes)
            if isinstance(t, dict):
                return {k: cut(v) for k, v in t.items()}
            return tuple(cut(v) for v in t)

        return tree, cut(tree)
    return tree, draw(trees(axes))


@settings(max_examples=300, deadline=None)
@given(tree_and_prefix())
def test_broadcast_fits_exactly_where_jax_does(case):
    tree, prefix = case
    arrays = jax.tree.map(np.empty, tree, is_leaf=is_shape)  # JAX sees real array leaves
    try:
        want = jax.tree.leaves(
            jax.tree.broadcast(prefix, arrays, is_leaf=lambda x: x is None),
            is_leaf=lambda x: x is None,
        )
    except ValueError:
        with pytest.raises(TreeError, match=r"in_axes for params(\[.*\])? is"):
            broadcast(prefix, skeleton(tree), "params")
        return
    assert broadcast(prefix, skeleton(tree), "params") == want


def test_broadcast_message_names_both_structures():
    skel = skeleton({"w": (5, 2), "b": (2,)})
    with pytest.raises(TreeError) as err:
        broadcast({"w": None}, skel, "params")
    assert str(err.value) == (
        "in_axes for params is a dict with keys `'w'`, but params is a dict with keys "
        "`'b', 'w'`: an in_axes entry must be one axis (or None) for the whole of it, or have "
        "exactly its structure."
    )
    with pytest.raises(
        TreeError,
        match=r"out_axes for out\[1\] is a tuple of 2, but out\[1\] is "
        "one array",
    ):
        broadcast((0, (0, 1)), skeleton(((2,), (3,))), "out", "out_axes")


def test_broadcast_spreads_one_axis_over_every_leaf():
    skel = skeleton({"w": (5, 2), "b": ((2,), (3,))})
    assert broadcast(None, skel, "p") == [None, None, None]
    assert broadcast({"w": 0, "b": (1, None)}, skel, "p") == [1, None, 0]


@settings(max_examples=100, deadline=None)
@given(trees(axes))
def test_fmt_prefix_is_python_for_the_same_prefix(prefix):
    assert ast.literal_eval(fmt_prefix(prefix)) == prefix
    assert parse_tree(fmt_prefix(prefix), "in_axes", "axis") == prefix


# ------------------------------------------------------------------ flat wrapper
def test_flat_function_hands_fn_the_trees_jax_would():
    seen = []

    def fn(x, params):
        seen.append(params)
        return x * params["w"] + params["b"]

    skels = (LEAF, skeleton({"w": (2,), "b": (2,)}))
    flat = flat_function(fn, skels)
    assert flat_function(fn, skels) is flat  # cached: same object for the same structure
    x, b, w = np.ones(2), np.full(2, 3.0), np.full(2, 2.0)
    np.testing.assert_array_equal(flat(x, b, w), x * w + b)  # leaves in sorted-key order
    assert set(seen[0]) == {"w", "b"} and seen[0]["w"] is w
    vm = jax.vmap(flat)(np.ones((3, 2)), np.zeros((3, 2)), np.ones((3, 2)))
    np.testing.assert_array_equal(vm, np.ones((3, 2)))


@settings(max_examples=100, deadline=None)
@given(st.one_of(trees(shapes), trees(axes)))
def test_freeze_is_hashable_and_thaws_back(tree):
    frozen = pytrees.freeze(tree)
    hash(frozen)
    assert pytrees.thaw(frozen) == tree
    if isinstance(tree, dict):  # key order does not matter, as in JAX
        assert pytrees.freeze(dict(reversed(list(tree.items())))) == frozen


def test_messages_quote_the_character_and_token_at_their_column():
    with pytest.raises(TreeError) as err:
        parse_tree("(5, $)", "p", "shape")
    assert str(err.value).startswith("p: column 5: `$` is not allowed here")
    with pytest.raises(TreeError) as err:
        parse_tree("{'w': 'b'}", "in_axes", "axis")
    assert "found column 7: \"'b'\"" in str(err.value)
    with pytest.raises(TreeError) as err:
        parse_tree("(" + "1, " * 200 + ")", "p", "shape")
    assert (
        str(err.value) == f"p is 602 characters long; at most {pytrees.MAX_TREE_TEXT} are allowed."
    )
    with pytest.raises(TreeError, match="expected an axis"):
        parse_tree(None, "in_axes", "axis")  # nothing typed: not the text 'None'
