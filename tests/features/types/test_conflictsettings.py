"""The conflict playground's URL state: defaults that are a valid case on every device count, the
meshes each count makes, and bad input (spec strings, axis names with markup, 10^30-sized dims,
64-deep nesting, operands that do not fit the operation or the mesh) refused in one clear line
that quotes what was typed, with the defaults in its place."""

import math
import re

import pytest

from pmapviz.features.types import conflictsettings as cs

COUNTS = (1, 2, 3, 5, 8, 16)


@pytest.mark.parametrize("n", COUNTS)
def test_the_defaults_are_a_valid_case_on_every_device_count(n):
    sch = cs.schema(n)
    values, case, errors = cs.values_or_defaults(sch.defaults(), n)
    assert errors == []
    assert case.mesh.shape == (n,) and case.mesh.names == ("d",)
    assert case.op == "matmul" and case.specs == ((None, "d"), ("d", None))
    assert all(d % n == 0 for shape in case.shapes for d in shape)  # any spec divides them
    assert case.shapes[0][1] == case.shapes[1][0]  # a's columns are b's rows
    texts, notes = sch.from_query(sch.to_query(values))
    assert notes == [] and texts == sch.defaults()


@pytest.mark.parametrize(
    ("n", "kinds", "two_d"),
    [(1, 1, None), (5, 1, None), (8, 2, (2, 4)), (9, 2, (3, 3)), (16, 2, (2, 8))],
)
def test_a_2d_mesh_where_the_devices_split(n, kinds, two_d):
    assert len(cs.mesh_kinds(n)) == kinds
    if two_d:
        mesh = cs.mesh_of("2d", n)
        assert mesh.shape == two_d and math.prod(mesh.shape) == n and mesh.names == ("d", "m")
        assert cs.mesh_label("2d", n) == f"2-D mesh d={two_d[0]} x m={two_d[1]}"


DEEP = "P(" + "(" * 64 + "'d'" + ")" * 64 + ")"
BAD = {
    "unclosed spec": ({"c_pa": "P('d'"}, "c_pa"),
    "markup in an axis name": ({"c_pa": "P('<b>d</b>')"}, "c_pa"),
    "markup for a spec": ({"c_pb": "<img src=x onerror=alert(1)>"}, "c_pb"),
    "a 10^30-sized dim": ({"c_a": "1" + "0" * 30 + ", 32"}, "c_a"),
    "64-deep nesting in a spec": ({"c_pa": DEEP}, "c_pa"),
    "64-deep nesting in a shape": ({"c_b": "(" * 64 + "32, 16" + ")" * 64}, "c_b"),
    "two brackets around a shape": ({"c_b": "((32, 16))"}, "c_b"),
    "a zero size": ({"c_a": "0, 32"}, "c_a"),
    "four dimensions": ({"c_a": "64, 32, 2, 2"}, "c_a"),
    "a subscript typed as code": ({"c_eq": "ij,jk->ik; import os"}, "c_eq"),
    "an operation not offered": ({"c_op": "__import__('os')"}, "c_op"),
    "an axis the mesh has not": ({"c_pa": "P('m', None)"}, "joint"),
    "an axis used twice": ({"c_pa": "P('d', 'd')"}, "joint"),
    "sizes the product does not pair": ({"c_a": "64, 32", "c_b": "16, 16"}, "joint"),
    "a dimension the axis does not divide": (
        {"c_a": "60, 36", "c_b": "36, 16", "c_pa": "P(None, 'd')"},
        "joint",
    ),
    "einsum on matmul's shapes": ({"c_op": "einsum", "c_eq": "bij,bjk->bik"}, "joint"),
    "add of two shapes": ({"c_op": "add", "c_a": "64, 32", "c_b": "32, 64"}, "joint"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_gets_one_clear_line_and_the_defaults(name):
    query, where = BAD[name]
    sch = cs.schema(8)
    texts, notes = sch.from_query(query)
    assert len(notes) == 1, notes
    (note,) = notes
    assert "\n" not in note and len(note) < 700
    outside = re.sub(r"`[^`]*`", "", note)  # what was typed is only ever shown as inline code
    assert "<" not in outside and "import" not in outside, note
    keys = list(query) if where != "joint" else list(cs.CASE_KEYS)
    assert all(texts[k] == sch.field(k).default for k in keys)
    assert "Using the default" in note
    values, case, errors = cs.values_or_defaults({**sch.defaults(), **query}, 8)
    assert len(errors) == 1 and errors[0].endswith("Showing the defaults.")
    assert case == cs.values_or_defaults(sch.defaults(), 8)[1]


def test_the_lines_name_the_users_sizes_and_a_fix():
    sch = cs.schema(8)
    (note,) = sch.from_query({"c_a": "64, 32", "c_b": "16, 16"})[1]
    assert "a has 32 and b has 16 there" in note and "like a = 64, 32 and b = 32, 16" in note
    (note,) = sch.from_query({"c_op": "einsum", "c_eq": "bij,bjk->bik"})[1]
    assert "needs a with 3 dimensions (bij)" in note and "a = 16, 64, 32" in note
    (note,) = sch.from_query({"c_a": "1" + "0" * 30 + ", 32"})[1]
    assert "31 digits" in note
    (note,) = sch.from_query({"c_a": "60, 36", "c_b": "36, 16", "c_pa": "P(None, 'd')"})[1]
    assert "36" in note and "multiple of 8" in note
    (note,) = cs.schema(5).from_query({"c_mesh": "2d"})[1]  # 5 devices make no 2-D mesh
    assert "is not one of: 1d" in note


def test_a_result_over_the_bound_is_refused():
    sch = cs.schema(8)
    big = {"c_a": "16777216, 8", "c_b": "8, 16777216", "c_pa": "P()", "c_pb": "P()"}
    (note,) = sch.from_query(big)[1]
    assert "the result" in note and "2**34" in note


def test_shapes_and_specs_are_typed_values():
    values, case, _ = cs.values_or_defaults(
        {**cs.schema(8).defaults(), "c_a": "[64, 32]", "c_pa": "None, d", "c_pb": "P('d')"}, 8
    )
    assert values["c_a"] == (64, 32) and case.specs == ((None, "d"), ("d", None))
    assert case.expression() == "jnp.matmul(a, b)"
    assert case.expression(out="P()") == "jnp.matmul(a, b, out_sharding=P())"
    assert cs.p_text((None, None)) == "P()" and cs.p_text(("d", None)) == "P('d', None)"
