"""Normalising the settings once: arguments flattened into leaves with normalised axes, the
mapped size, and nothing flattened when the in_axes do not fit."""

from __future__ import annotations

import pytest

from pmapviz.core.expressions import expr
from pmapviz.core.planning import planfacts


# ------------------------------------------- normalise (its hand-made leaves serve the rules too)
def _leaf(arg, name, shape, axis, given="same", dtype="float32"):
    """A hand-made normalised leaf (``given``: its in_axes as typed, by default ``axis``)."""
    local = shape if axis is None else shape[:axis] + shape[axis + 1 :]
    return planfacts.Leaf(arg, name, shape, dtype, axis if given == "same" else given, axis, local)


def _norm(leaves, trees=None, n_devices=8, fn=None, **kw):
    """A hand-made Normalised: one plain argument per leaf unless ``trees`` are given."""
    trees = trees or {leaf.argument: leaf.shape for leaf in leaves}
    names = {leaf.argument: leaf.name.split("[")[0] for leaf in leaves}
    args = tuple(
        planfacts.Argument(k, names.get(k, f"arg{k}"), trees[k], "float32", 0)
        for k in sorted(trees)
    )
    kw.setdefault("in_axes_given", (0,) * len(args))
    return planfacts.Normalised(
        fn=fn or (lambda *xs: xs[0]),
        arguments=args,
        leaves=tuple(leaves),
        n_devices=n_devices,
        **kw,
    )


def test_normalise_spreads_prefixes_counts_negative_axes_and_finds_the_mapped_size():
    n = planfacts.normalise(
        expr.program("x, p", "x"),
        [(3, 8), {"w": (8, 5, 2), "b": (2,)}],
        in_axes=(-1, {"w": 0, "b": None}),
        n_devices=8,
        dtypes=["int32", "bfloat16"],
    )
    assert [a.name for a in n.arguments] == ["x", "p"]
    assert n.in_axes_given == (-1, {"w": 0, "b": None})
    assert n.arguments[1] == planfacts.Argument(
        1, "p", {"w": (8, 5, 2), "b": (2,)}, "bfloat16", {"w": 0, "b": None}
    )
    assert n.leaves == (
        planfacts.Leaf(0, "x", (3, 8), "int32", -1, 1, (3,)),
        planfacts.Leaf(1, "p['b']", (2,), "bfloat16", None, None, (2,)),  # JAX's order: sorted keys
        planfacts.Leaf(1, "p['w']", (8, 5, 2), "bfloat16", 0, 0, (5, 2)),
    )
    assert n.size == 8 and [k for k, _ in n.mapped] == [0, 2] and n.unfit == ()


def test_normalise_repeats_one_in_axes_and_marks_axes_that_are_not_axes():
    n = planfacts.normalise(lambda a, b, c: a, [(4, 2), (), (4,)], in_axes=0, n_devices=8)
    assert n.in_axes_given == (0, 0, 0) and [a.name for a in n.arguments] == ["a", "b", "c"]
    assert [(leaf.given_axis, leaf.axis, leaf.local_shape) for leaf in n.leaves] == [
        (0, 0, (2,)),
        (0, None, ()),
        (0, 0, ()),
    ]  # a scalar has no axis 0
    n = planfacts.normalise(lambda a, b: a, [(4, 2), (5, 3)], in_axes=(5, -3), n_devices=8)
    assert [leaf.axis for leaf in n.leaves] == [None, None] and n.size is None and not n.mapped
    n = planfacts.normalise(lambda a, b: a, [(4, 2), (5, 3)], in_axes=(0, 0), n_devices=8)
    assert n.size is None  # 4 and 5: no one mapped size
    with pytest.raises(ValueError, match="dtypes has 1 entries for 2 arguments"):
        planfacts.normalise(lambda a, b: a, [(4,), (4,)], dtypes=["int8"], n_devices=8)


def test_normalise_flattens_nothing_when_the_in_axes_do_not_fit():
    n = planfacts.normalise(lambda x, y: x, [(8, 3), (8, 3)], in_axes=(0,), n_devices=8)
    assert n.leaves == () and n.unfit == () and n.in_axes_given == (0,)
    assert [a.in_axes for a in n.arguments] == [0, None]  # no entry for y
    n = planfacts.normalise(lambda x, p: x, [(8, 3), {"w": (3,)}], in_axes=(0, (0, 1)), n_devices=8)
    assert n.leaves == ()
    assert n.unfit == (
        (
            1,
            "in_axes for p is a tuple of 2, but p is a dict with keys `'w'`: an "
            "in_axes entry must be one axis (or None) for the whole of it, or have "
            "exactly its structure.",
        ),
    )
