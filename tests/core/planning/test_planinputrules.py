"""Each rule on the inputs, on hand-made normalised settings: what it says and the fix it
offers, and nothing for what is not its business."""

from __future__ import annotations

import pytest

from pmapviz.core.expressions import functions
from pmapviz.core.planning import planfacts, planinputrules
from tests.core.planning.test_planfacts import _leaf, _norm


def _ids(cases):
    return [f"{case[0].__name__.removeprefix('rule_')}-{k}" for k, case in enumerate(cases)]


INPUT_RULE_CASES = [  # (rule, hand-made normalised input, (code, words, arg, fix applied))
    (
        planinputrules.rule_in_axes_length,
        _norm([_leaf(0, "x", (8, 3), 0)], in_axes_given=(0, 0)),
        ("in_axes_length", "in_axes has 2 entries but f takes 1 argument (x).", None, None),
    ),
    (
        planinputrules.rule_in_axes_structure,
        _norm([], trees={0: (8,), 1: {"w": (3,)}}, unfit=((1, "p does not fit"),)),
        ("in_axes_structure", "p does not fit", 1, None),
    ),
    (
        planinputrules.rule_dtypes,
        _norm([_leaf(0, "x", (8,), 0), _leaf(1, "p['w']", (8,), 0, dtype="int4")]),
        ("dtype", "p['w']: dtype `int4` is not supported here.", 1, None),
    ),
    (
        planinputrules.rule_sizes_fit,
        _norm([_leaf(0, "x", (2**20, 2**21), 0)]),
        ("too_large", "x (1_048_576, 2_097_152) has 2,199,023,255,552 elements", 0, None),
    ),
    (
        planinputrules.rule_axes_in_range,
        _norm([_leaf(0, "x", (8, 3), None, given=2)]),
        (
            "axis_out_of_range",
            "in_axes=2 for x, but x has shape (8, 3) (rank 2): valid axes are 0 to 1.",
            0,
            None,
        ),
    ),
    (
        planinputrules.rule_axes_in_range,
        _norm([_leaf(0, "s", (), None, given=0)], n_devices=4),
        (
            "axis_out_of_range",
            "s is a scalar (shape ()), so it has no axis 0 to map over.",
            0,
            None,
        ),
    ),
    (
        planinputrules.rule_some_axis_mapped,
        _norm([_leaf(0, "x", (8, 3), None)]),
        ("no_mapped_axis", "Every argument has in_axes=None", None, None),
    ),
    (
        planinputrules.rule_mapped_sizes_equal,
        _norm([_leaf(0, "x", (8, 3), 0), _leaf(1, "y", (3, 4), 1)]),
        (
            "mapped_sizes_differ",
            "The mapped axes differ in size: x axis 0 has 8, y axis 1 has 4.",
            None,
            {1: (3, 8)},  # y's mapped axis made 8, like x: a size this server can run
        ),
    ),
    (
        planinputrules.rule_mapped_axis_not_empty,
        _norm([_leaf(0, "x", (3, 0), 1)]),
        ("mapped_axis_empty", "The mapped axis has size 0 (axis 1 of x, shape (3, 0))", 0, None),
    ),
    (
        planinputrules.rule_mapped_axis_fits,
        _norm([_leaf(0, "x", (16, 3), 0), _leaf(1, "y", (16,), 0)]),
        (
            "mapped_axis_too_large",
            "Axis 0 of x has 16 elements but there are 8 devices",
            0,
            {0: (8, 2, 3), 1: (8, 2)},
        ),
    ),
    (
        planinputrules.rule_mapped_axis_fits,  # a leaf of a dict argument: no automatic reshape
        _norm([_leaf(1, "p['w']", (16, 3), 0)], trees={0: (2,), 1: {"w": (16, 3)}}),
        ("mapped_axis_too_large", "Axis 0 of p['w'] has 16 elements", 1, None),
    ),
    (
        planinputrules.rule_no_empty_blocks,
        _norm([_leaf(0, "x", (8, 0), 0)]),
        (
            "empty_block",
            "x has shape (8, 0), so every device would get an empty block (0,)",
            0,
            None,
        ),
    ),
    (
        planinputrules.rule_negative_in_axes,
        _norm([_leaf(0, "x", (3, 8), 1, given=-1)]),
        ("negative_in_axes", "in_axes=-1 for x (3, 8) means axis 1", 0, {0: 1}),
    ),
    (
        planinputrules.rule_negative_in_axes,
        _norm([_leaf(0, "x", (3, 8), 1, given=-1)], trees={0: {"a": (3, 8)}}),
        ("negative_in_axes", "in_axes=-1 for x (3, 8) means axis 1", 0, None),
    ),
    (
        planinputrules.rule_axis_name_given,
        _norm([_leaf(0, "x", (8, 3), 0)], fn=functions.get("normalise")),
        ("needs_axis_name", "uses a collective (lax.psum)", None, None),
    ),
]


@pytest.mark.parametrize("rule, n, want", INPUT_RULE_CASES, ids=_ids(INPUT_RULE_CASES))
def test_each_input_rule_on_a_hand_made_normalised_input(rule, n, want):
    """A rule reads the normalised settings and says, in the user's names and numbers, what is
    wrong, which argument it is about, and (for a plain array) the exact fix."""
    code, words, arg, fix = want
    found = planfacts.as_list(rule(n))
    assert found and {q.code for q in found} == {code}
    q = found[0]
    assert words in q.message and q.fix and q.arg == arg
    assert (q.new_shapes or q.new_axes) == fix


INPUT_RULE_PASSES = [
    (planinputrules.rule_in_axes_length, _norm([_leaf(0, "x", (8, 3), 0)])),
    (planinputrules.rule_dtypes, _norm([_leaf(0, "x", (8,), 0, dtype="bool")])),
    (planinputrules.rule_axes_in_range, _norm([_leaf(0, "x", (8, 3), 1, given=-1)])),
    (
        planinputrules.rule_mapped_sizes_equal,
        _norm([_leaf(0, "x", (8, 3), 0), _leaf(1, "y", (3, 8), 1)]),
    ),
    # nothing mapped
    (planinputrules.rule_mapped_sizes_equal, _norm([_leaf(0, "x", (8, 3), None)])),
    (
        planinputrules.rule_mapped_axis_not_empty,
        _norm([_leaf(0, "x", (0, 3), 0), _leaf(1, "y", (2,), 0)]),
    ),
    (planinputrules.rule_mapped_axis_fits, _norm([_leaf(0, "x", (8, 3), 0)])),
    (planinputrules.rule_negative_in_axes, _norm([_leaf(0, "x", (8, 3), 0, given=-2)])),  # means 0
    (planinputrules.rule_negative_in_axes, _norm([_leaf(0, "x", (8, 1), 1, given=-1)])),  # 1 device
    (
        planinputrules.rule_axis_name_given,
        _norm([_leaf(0, "x", (8, 3), 0)], fn=functions.get("normalise"), axis_name="i"),
    ),
    (planinputrules.rule_axis_name_given, _norm([_leaf(0, "x", (8, 3), 0)])),  # a plain function
]


@pytest.mark.parametrize("rule, n", INPUT_RULE_PASSES, ids=_ids(INPUT_RULE_PASSES))
def test_each_input_rule_passes_what_is_not_its_business(rule, n):
    """Nothing for settings that are fine by this rule, even where another rule would object
    (e.g. sizes that differ are not an oversized axis)."""
    assert planfacts.as_list(rule(n)) == []


def test_one_device_is_said_in_the_singular():
    from dataclasses import replace

    n = replace(_norm([_leaf(0, "x", (4, 3), 0)]), n_devices=1)
    problem = planinputrules.rule_mapped_axis_fits(n)
    assert "Axis 0 of x has 4 elements but there is 1 device;" in problem.message
