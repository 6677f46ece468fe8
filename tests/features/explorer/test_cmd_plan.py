"""python -m pmapviz plan: the plan the app shows, for shapes, your own f and dict arguments."""

import json

import pytest

from tests.app.test_cli import run_cli


def test_plan_json_for_the_seed_shapes():
    r = run_cli(
        "plan",
        "--devices",
        "8",
        "--fn",
        "batched_dot",
        "--shape",
        "8,1250000,3",
        "--shape",
        "8, 1_250_000, 3",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["out_shapes"] == [8, 1250000]
    assert out["per_device_in_shapes"] == [[1250000, 3], [1250000, 3]]


def test_plan_reports_problems_with_exit_1():
    r = run_cli("plan", "--devices", "8", "--shape", "10000000,3", "--shape", "10000000,3")
    assert r.returncode == 1
    assert "mapped_axis_too_large" in r.stdout and "(8, 1_250_000, 3)" in r.stdout


def test_plan_for_a_bigger_machine_than_this_one():
    r = run_cli("plan", "--fn", "double", "--shape", "512,3", "--plan-devices", "512", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["devices_used"] == 512


def test_plan_bad_text_is_one_line_exit_2():
    r = run_cli("plan", "--shape", "8,,3", "--shape", "8,3")
    assert r.returncode == 2 and "empty size" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("plan", "--fn", "double", "--shape", "8,3", "--shape", "8,3")
    assert r.returncode == 2 and "takes 1 argument" in r.stderr


def test_plan_your_own_expression_prints_the_same_plan_as_the_app():
    from pmapviz.core.planning.scenarios import Scenario

    r = run_cli(
        "plan",
        "--devices",
        "8",
        "--expr",
        "jnp.tanh(x @ w)",
        "--args",
        "x,w",
        "--shape",
        "8,4,5",
        "--shape",
        "5,2",
        "--in-axes",
        "0,None",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    _, p, errors = Scenario.from_texts(
        dict(
            fn="expr",
            args="x, w",
            body="jnp.tanh(x @ w)",
            s0="8, 4, 5",
            s1="5, 2",
            a0="0",
            a1="None",
        ),
        8,
    ).plan(8)
    assert not errors and out["ok"] and out["out_shapes"] == list(p.out_shapes) == [8, 4, 2]
    assert out["arg_names"] == ["x", "w"] and out["in_axes"] == [0, None]


def test_plan_expression_problems_and_refusals_exit_codes(capsys):
    """In-process: a refusal stops before JAX starts; --plan-devices never applies devices."""
    from pmapviz.app import cli

    base = ["plan", "--plan-devices", "8", "--args", "x", "--shape", "8,3"]
    assert cli.main([*base, "--expr", "jnp.sum(x, axis=5)"]) == 1  # f rejects the shapes
    assert "function_rejects_shapes" in capsys.readouterr().out
    for body, words in (
        ("x + __import__('os')", "column 5"),
        ("x +* 2", "column 4"),
        ("open('f')", "`open` is not allowed"),
    ):
        assert cli.main([*base, "--expr", body]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0] and "Traceback" not in err[0]
    assert cli.main(["plan", "--expr", "x * 2", "--shape", "8,3"]) == 2
    assert "needs --args" in capsys.readouterr().err
    assert cli.main(["plan", "--fn", "double", "--expr", "x", "--args", "x"]) == 2
    assert "not both" in capsys.readouterr().err


# your own f over a dict of parameters, as the command line takes it
TREE_BODY, TREE_PARAMS = "jnp.tanh(x @ p['w'] + p['b'])", "{'w': (5, 2), 'b': (2,)}"
TREE_PLAN = [
    *("plan", "--plan-devices", "8", "--expr", TREE_BODY, "--args", "x,p"),
    *("--shape", "8,4,5", "--shape", TREE_PARAMS),
]


def test_plan_with_a_dict_argument_and_a_prefix(capsys):
    """Pytree arguments from the command line: the JSON names every leaf and keeps each
    argument's tree and prefix as typed; a leaf that cannot be mapped is named; bad tree text
    is one line, exit 2."""
    from pmapviz.app import cli
    from pmapviz.core.planning.scenarios import Scenario

    body, params, base = TREE_BODY, TREE_PARAMS, TREE_PLAN
    assert cli.main([*base, "--in-axes", "(0, {'w': None, 'b': None})", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    _, p, errors = Scenario.from_texts(
        dict(fn="expr", args="x, p", body=body, s0="8, 4, 5", s1=params, a0="0", a1="None"), 8
    ).plan(8)
    assert not errors and p.ok
    assert out["out_shapes"] == list(p.out_shapes) == [8, 4, 2]
    assert out["arg_names"] == ["x", "p['b']", "p['w']"] == [leaf.name for leaf in p.leaves]
    assert out["arguments"][1] == {
        "name": "p",
        "shape": {"w": [5, 2], "b": [2]},
        "in_axes": {"w": None, "b": None},
    }
    assert cli.main([*base, "--in-axes", "(0, 0)"]) == 1
    said = capsys.readouterr().out
    assert "mapped_sizes_differ" in said and "p['b'] axis 0 has 2" in said
    assert cli.main([*base, "--in-axes", "(0, {'w': None})"]) == 1
    assert "dict with keys `'w'`, but p is a dict with keys `'b', 'w'`" in capsys.readouterr().out
    bad = [*base[:-1], "{'w': (5, 2), 'b': (2,)", "--in-axes", "0,None"]
    assert cli.main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "column 24" in err[0], err


def test_plan_json_is_the_plans_own_to_json():
    """`plan --json` prints Plan.to_json(), byte for byte: for a pytree argument with a
    prefix, and for in_axes of the wrong length (the plan has no leaves then)."""
    from pmapviz.core.expressions import expr
    from pmapviz.core.planning import planning

    cases = [("(0, {'w': None, 'b': None})", (0, {"w": None, "b": None}), 0), ("0", (0,), 1)]
    for text, in_axes, rc in cases:
        r = run_cli(*TREE_PLAN, "--in-axes", text, "--json")
        assert r.returncode == rc, r.stderr
        p = planning.plan(
            expr.program("x,p", TREE_BODY),
            [(8, 4, 5), {"w": (5, 2), "b": (2,)}],
            in_axes=in_axes,
            n_devices=8,
        )
        assert r.stdout == p.to_json() + "\n"
    out = json.loads(r.stdout)  # the second: no leaves, so one entry per argument as given
    assert out["arg_names"] == ["x", "p"] and out["in_axes"] == [None, None]
    assert [a["in_axes"] for a in out["arguments"]] == [0, None]
    assert out["problems"][0]["code"] == "in_axes_length" and out["per_device_in_shapes"] == []


@pytest.mark.parametrize("n", [1, 3, 5, 16])
def test_the_default_plan_fits_every_device_count(n):
    """No flags but the devices: the example's mapped axes are sized to the device count."""
    done = run_cli("plan", "--plan-devices", str(n), "--json")
    plan = json.loads(done.stdout)
    assert done.returncode == 0 and plan["ok"], done.stdout
    assert [a["shape"][0] for a in plan["arguments"]] == [n, n]


def test_hlo_of_the_default_example_compiles_on_three_devices():
    """hlo without --collective plans the function's example, sized to the devices too."""
    done = run_cli("hlo", "--devices", "3", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["devices"] == 3 and out["label"].startswith("Batched dot")
