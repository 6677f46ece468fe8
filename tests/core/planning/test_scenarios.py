"""The one settings type: links round-trip, expressions plan like catalog functions, and the
"plan for N devices" setting plans for a bigger machine."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmapviz.core.base import valueparse
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning import planning
from pmapviz.core.planning import scenarios as scenario_module
from pmapviz.core.planning.scenarios import EXPR, MAX_ARGS, Scenario

N = 8
EXPRESSIONS = [
    ("x, w", "jnp.tanh(x @ w)", ("8, 4, 5", "5, 2"), ("0", "None"), (8, 4, 2)),
    ("a", "a.sum(axis=0) * 2", ("3, 8",), ("1",), (8,)),
    ("x, y, z", "jnp.where(x > 0, y, z)", ("8, 2",) * 3, ("0",) * 3, (8, 2)),
    ("x", "x / lax.psum(jnp.sum(x), 'i')", ("8, 4",), ("0",), (8, 4)),
]


def expression(args, body, shapes, axes, **more):
    texts = {"fn": EXPR, "args": args, "body": body, **more}
    for k, (s, a) in enumerate(zip(shapes, axes, strict=True)):
        texts |= {f"s{k}": s, f"a{k}": a}
    return Scenario.from_texts(texts, N)


@pytest.mark.parametrize("args, body, shapes, axes, out", EXPRESSIONS)
def test_an_expression_plans_like_a_catalog_program(args, body, shapes, axes, out):
    s = expression(args, body, shapes, axes, name="i")
    program, p, errors = s.plan(N)
    assert not errors and isinstance(program, expr.ExprProgram) and p.ok, p.problems
    assert p.out_shapes == out
    assert tuple(leaf.name for leaf in p.leaves) == expr.parse_arg_names(args)
    direct = planning.plan(
        expr.program(args, body),
        [valueparse.parse_shape(t) for t in shapes],
        in_axes=tuple(valueparse.parse_axis(a) for a in axes),
        axis_name="i",
        n_devices=N,
    )
    assert direct == p


@pytest.mark.parametrize("args, body, shapes, axes, out", EXPRESSIONS)
def test_an_expression_round_trips_through_its_link(args, body, shapes, axes, out):
    s = expression(args, body, shapes, axes, pn="64")
    q = s.query()
    assert q["fn"] == EXPR and q["args"] == args and q["body"] == body and q["pn"] == "64"
    assert len([k for k in q if k.startswith("s")]) == len(shapes)  # only the used slots
    assert Scenario.from_texts(q, N) == s and Scenario.from_texts(q, N).key == s.key
    texts, notes = scenario_module.schema(N).from_query(q)  # what a link loads
    assert not notes and Scenario.from_texts(texts, N).query() == q


_NAME = st.sampled_from(["x", "w", "b", "a1", "y_2"])


@settings(max_examples=25, deadline=None)
@given(
    names=st.lists(_NAME, min_size=1, max_size=3, unique=True),
    body=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    pn=st.sampled_from(["", "1", "16", "4096"]),
)
def test_any_typed_text_round_trips(names, body, pn):
    s = Scenario.from_texts({"fn": EXPR, "args": ", ".join(names), "body": body, "pn": pn}, N)
    assert Scenario.from_texts(s.query(), N) == s
    program, p, errors = s.plan(N)  # never raises: a plan or one message
    assert (p is None) == bool(errors)


def test_a_refused_expression_is_one_message_with_its_column():
    _, p, errors = expression("x", "x + __import__('os')", ("8, 3",), ("0",)).plan(N)
    assert p is None and len(errors) == 1
    assert errors[0].startswith("Your own f: column 5:") and "`__import__`" in errors[0]
    _, _, errors = expression("x, x", "x", ("8, 3",), ("0",)).plan(N)
    assert errors == ["Your own f: Argument `x` is named twice."]


def test_a_bad_link_falls_back_to_the_default_expression_with_a_note():
    texts, notes = scenario_module.schema(N).from_query(
        {"fn": EXPR, "args": "x", "body": "x.__class__", "pn": "0"}
    )
    assert (texts["args"], texts["body"], texts["pn"]) == ("x, w", "jnp.tanh(x @ w)", "")
    assert len(notes) == 2 and any("column 3" in n for n in notes)
    assert any("pn=" in n and "from 1 to 4,096" in n for n in notes)
    long = "x * 1." + "0" * 250  # longer than a text field (200), within an expression (500)
    texts, notes = scenario_module.schema(N).from_query({"fn": EXPR, "args": "x", "body": long})
    assert texts["body"] == long and not notes


def test_catalog_links_stay_as_they_were():
    s = Scenario.defaults("matmul", N)
    assert set(s.query()) == {"fn", "out", "name", "s0", "d0", "a0", "s1", "d1", "a1"}
    assert len(s.shapes) == MAX_ARGS == expr.MAX_ARGS


def test_switching_to_your_own_f_starts_from_the_function_code():
    s = Scenario.defaults("normalise", N).switched(EXPR, N)
    assert (s.fn, s.args, s.body) == (EXPR, "x", "x / lax.psum(jnp.sum(x), 'i')")
    _, p, _ = s.plan(N)
    assert p.ok and p.out_shapes == (N, 4)
    back = s.switched("matmul", N)
    assert back == Scenario.defaults("matmul", N)


def test_plan_for_a_bigger_machine_uses_pn_only_when_asked():
    s = Scenario.defaults("double", N).resized("4096", N)
    assert s.shapes[0] == "4_096, 4" and s.pn == "4096" and s.plans_elsewhere(N) == 4096
    _, p, errors = s.plan(N, use_pn=True)
    assert not errors and p.ok and p.devices_used == p.n_devices == 4096
    _, p, _ = s.plan(N)  # live runs and timing: this server's devices
    assert not p.ok and p.problems[0].code == "mapped_axis_too_large"
    assert s.resized("", N).shapes[0] == "8, 4" and s.resized("", N).plans_elsewhere(N) is None
    _, p, errors = s.resized("5000", N).plan(N, use_pn=True)
    assert p is None and "out of range" in errors[0] and "4,096" in errors[0]


def test_unknown_function_is_a_message():
    _, p, errors = Scenario.from_texts({"fn": "nope"}, N).plan(N)
    assert p is None and "Unknown function" in errors[0]
    assert functions.BY_KEY  # the catalog is unchanged


def test_the_cli_and_the_explorer_parse_through_one_schema(monkeypatch):
    """scenarios.inputs is the one place the explorer's settings are parsed: the
    explorer's Scenario.plan and the CLI's flags both go through it (and so through
    scenarios.schema)."""
    seen = []
    real = scenario_module.inputs

    def spy(texts, *args):
        seen.append(dict(texts))
        return real(texts, *args)

    monkeypatch.setattr(scenario_module, "inputs", spy)
    Scenario.defaults("batched_dot", N).plan(N)
    from pmapviz.app import cli

    assert (
        cli.main(
            [
                "plan",
                "--fn",
                "batched_dot",
                "--shape",
                "8,4,5",
                "--shape",
                "8,4,5",
                "--plan-devices",
                "8",
                "--json",
            ]
        )
        == 0
    )
    assert len(seen) == 2 and seen[1]["s0"] == "8,4,5"
    v, errors = real({"s0": "8, 4x"}, 1, 0, 0, {"s0": "--shape 1"})
    assert v == {} and errors[0].startswith("--shape 1")  # the caller's own words


def test_schema_values_go_back_to_text_that_parses_to_them():
    schema = scenario_module.schema(N)
    texts = {
        "s0": "{'w': (5, 2), 'b': (2,)}",
        "a0": "{'w': None, 'b': 0}",
        "out": "None",
        "name": "",
    }
    values, errors = schema.parse(texts, list(texts))
    assert not errors and values["name"] is None and values["s0"] == {"w": (5, 2), "b": (2,)}
    again, _ = schema.parse(schema.to_query(values), list(texts))
    assert again == values


def test_the_url_keys_and_the_schema_come_from_the_scenarios_fields():
    """Each Scenario attribute is one URL field: the keys, the schema's fields and the link's
    order all follow from them, as the URL format has always been."""
    slots = tuple(f"{c}{k}" for k in range(MAX_ARGS) for c in "sda")
    keys = scenario_module.KEYS
    assert keys[-len(slots) :] == slots and len(set(keys)) == len(keys)  # the slots come last
    linked = ("fn", "args", "body", "out", "name", "pn")  # the keys links have always carried,
    assert tuple(k for k in keys if k in linked) == linked  # in their order (new ones may join)
    schema = scenario_module.schema(N)
    assert tuple(f.key for f in schema.fields) == scenario_module.KEYS
    assert [schema.field(k).label for k in ("fn", "pn", "s0", "d1", "a5")] == [
        "Function",
        "Plan for N devices",
        "shape 1",
        "dtype 2",
        "in_axes 6",
    ]
    s = expression("x, w", "x @ w", ("8, 4", "4, 2"), ("0", "None"), pn="16", name="j")
    assert list(s.query()) == [
        "fn",
        "args",
        "body",
        "out",
        "name",
        "pn",
        "s0",
        "d0",
        "a0",
        "s1",
        "d1",
        "a1",
    ]
    assert Scenario.from_texts(s.texts(every_slot=True), N) == s
    assert list(Scenario.defaults("double", N).texts()) == ["fn", "out", "name", "s0", "d0", "a0"]
