"""Real compilations of every collective of the playground, the explorer's plans and the
training step: the collectives XLA emitted, the ring model beside them, the three levels, cost
and memory for four variants, hidden communication, and the CLI."""

import json
import os

import numpy as np
import pytest

from pmapviz.core.expressions import collectivedefs as defs
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.core.running import programanalysis
from pmapviz.features.training import trainingrun
from tests.app.test_cli import run_cli
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
ALL = tuple(range(N))
HALVES = [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize(
    "key, groups, perm, kind, shape, expect",
    [
        ("psum", None, None, "all-reduce", (8,), [ALL]),
        ("pmean", HALVES, None, "all-reduce", (8,), [tuple(g) for g in HALVES]),
        (
            "pmax",
            [[0, 2, 4, 6], [1, 3, 5, 7]],
            None,
            "all-reduce",
            (8,),
            [(0, 2, 4, 6), (1, 3, 5, 7)],
        ),
        (
            "pmin",
            [[3], [0, 1, 2, 4, 5, 6, 7]],
            None,
            "all-reduce",
            (8,),
            [(3,), (0, 1, 2, 4, 5, 6, 7)],
        ),
        ("all_gather", None, None, "all-gather", (1, 8), [ALL]),  # XLA adds the gathered axis
        ("all_gather_tiled", None, None, "all-gather", (8,), [ALL]),
        (
            "ppermute",
            None,
            defs.ring(N, "right"),
            "collective-permute",
            (8,),
            defs.ring(N, "right"),
        ),
        ("ppermute", None, defs.ring(N, "left"), "collective-permute", (8,), defs.ring(N, "left")),
        ("ppermute", None, [(1, 5), (5, 1)], "collective-permute", (8,), [(1, 5), (5, 1)]),
        ("psum_scatter", None, None, "reduce-scatter", (8,), [ALL]),
        ("all_to_all", None, None, "all-to-all", (1,), [ALL]),
        ("normalise", None, None, "all-reduce", (), [ALL]),
    ],
)
def test_every_collective_compiles_to_what_was_asked(key, groups, perm, kind, shape, expect):
    a = programanalysis.analyse(
        programanalysis.collective_target(key, N, 8, groups, perm), variants=False
    )
    (row,) = a.rows
    c = row.hlo
    assert c.kind == kind and c.shapes[0] == shape and c.dtype == "f32" and not a.unparsed
    got = c.source_target_pairs if kind == "collective-permute" else c.replica_groups
    assert sorted(map(tuple, got)) == sorted(map(tuple, expect))
    assert "pmapviz/core/expressions/collectivedefs.py:" in c.source_line
    # the model and the compiler meet on one row: the same bytes as the playground's model
    cost, _ = defs.BY_KEY[key].comm_bytes(N, 8, 4, groups, perm)
    assert row.model_sent == pytest.approx(cost["sent"]) and row.model_received == pytest.approx(
        cost["received"]
    )
    assert c.line in a.levels.hlo_lines and a.levels.jaxpr_lines and a.levels.stablehlo_lines


def test_axis_index_emits_no_collective():
    a = programanalysis.analyse(
        programanalysis.collective_target("axis_index", N, 8), variants=False
    )
    assert a.rows == () and a.levels.hlo_lines == () and a.levels.jaxpr_lines == ()


def test_the_partitioner_inserts_an_all_reduce_the_user_never_wrote():
    """jit(jnp.sum) over a NamedSharding input: groups in the mesh['axis_0'=8,...] syntax."""
    import jax
    import jax.numpy as jnp

    from pmapviz.core.planning.pmapplacement import pmap_sharding
    from pmapviz.core.xla.hlo import parse_hlo

    x = jax.ShapeDtypeStruct((N, 4), jnp.float32, sharding=pmap_sharding(2, 0, N))
    text = jax.jit(jnp.sum).lower(x).compile().as_text()
    assert "replica_groups=mesh[" in text
    (c,) = parse_hlo(text).collectives
    assert c.kind == "all-reduce" and c.replica_groups == (ALL,)


def test_variants_side_by_side_for_a_plan():
    program = functions.get("normalise")
    plan = planning.plan(program, [(N, 16)], axis_name="i")
    a = programanalysis.analyse_plan(program, plan)
    assert programanalysis.analyse_plan(program, plan) is a  # cached by setting
    v = a.variants
    assert set(v) == set(programanalysis.VARIANTS)
    assert [r.hlo.kind for r in v["pmap"].rows] == ["all-reduce"]
    assert v["vmap"].rows == () and v["vmap"].cost.argument_bytes == N * 16 * 4  # one device
    assert a.cost.argument_bytes == 16 * 4  # pmap: per device
    assert [r.hlo.kind for r in v["jit_sharded"].rows] == ["all-reduce"]
    assert [r.hlo.kind for r in v["shard_map"].rows] == ["all-reduce"]
    assert a.cost.flops and a.cost.bytes_accessed and a.cost.peak_bytes >= 0
    assert "shard_map" in a.levels.jaxpr and "sdy.manual_computation" in a.levels.stablehlo


def test_a_variant_that_cannot_express_it_says_why():
    a = programanalysis.analyse_collective("psum", N, 2, HALVES)
    assert "axis_index_groups" in a.variants["vmap"].error
    assert a.variants["pmap"].error is None


def test_training_step_all_reduces_the_gradients():
    a = programanalysis.analyse(
        programanalysis.training_target(trainingrun.Config(devices=4, batch=16)), False
    )
    (row,) = a.rows
    assert row.hlo.kind == "all-reduce" and row.hlo.replica_groups == ((0, 1, 2, 3),)
    assert row.hlo.bytes == (trainingrun.FEATURES + 1) * 4  # grads of w and b, in one all-reduce
    assert "pmapviz/features/training/trainingrun.py:" in row.hlo.source_line


def test_an_invalid_plan_is_refused():
    program = functions.get("double")
    with pytest.raises(ValueError, match="valid plan"):
        programanalysis.analyse_plan(program, planning.plan(program, [(N + 1, 2)]))


def test_cli_hlo_json():
    r = run_cli("hlo", "--collective", "psum", "--devices", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (c,) = out["collectives"]
    assert {
        k: c[k]
        for k in ("kind", "shape", "dtype", "bytes", "replica_groups", "source_target_pairs")
    } == {
        "kind": "all-reduce",
        "shape": [4],
        "dtype": "f32",
        "bytes": 16,
        "replica_groups": [[0, 1, 2, 3]],
        "source_target_pairs": None,
    }
    assert "collectivedefs.py" in c["source_line"]
    assert set(out["memory"]) >= {
        "argument_bytes",
        "output_bytes",
        "temp_bytes",
        "generated_code_bytes",
    }
    assert set(out["variants"]) == {"pmap", "vmap", "jit_sharded", "shard_map"}
    assert "flops" in out["cost"]


@pytest.mark.parametrize(
    "args, code, words",
    [
        (("--collective", "ppermute", "--perm", "0->9"), 2, "outside 0 to 7"),
        (("--fn", "double", "--shape", "9,3"), 1, "NOT OK"),
        (("--elements", "x", "--collective", "psum"), 2, "--elements"),
        (("--collective", "all_to_all", "--elements", "3"), 2, "multiple of 8"),
        (
            ("--collective", "psum", "--groups", "0 1 | 2 3 4 5 6 7"),
            0,
            "[[0, 1], [2, 3, 4, 5, 6, 7]]",
        ),
    ],
)
def test_cli_hlo_exit_codes(capsys, monkeypatch, args, code, words):
    from pmapviz.app import cli
    from pmapviz.core.devices import jaxstartup

    monkeypatch.setattr(jaxstartup, "_applied", jaxstartup._applied)  # restored afterwards
    saved = dict(os.environ)
    try:
        rc = cli.main(["hlo", "--devices", str(N), *args])  # in-process: the same 8 devices
    finally:
        os.environ.clear()
        os.environ.update(saved)
    out = capsys.readouterr()
    assert rc == code and words in out.out + out.err
    if code == 2:
        assert len(out.err.strip().splitlines()) == 1


def test_rows_survive_json():
    a = programanalysis.analyse_collective("ppermute", N, 2, perm=[(0, 1)])
    out = json.loads(json.dumps(a.to_json()))
    assert out["collectives"][0]["source_target_pairs"] == [[0, 1]]
    assert np.isclose(out["collectives"][0]["model_sent_bytes"], 8 / N)


def test_the_program_picture_shows_one_program_on_every_device():
    a = programanalysis.analyse_collective("psum", 4, 4)
    rows, label = programanalysis.program_grid(a, ["cpu:0", "cpu:1", "cpu:2", "cpu:3"])
    assert [r[0] for r in rows] == ["device", "runs", "collectives", "memory"]
    assert all(len(cells) == 4 for _, cells in rows)
    assert len({c[0] for c in rows[1][1]}) == 1  # the same program everywhere
    assert "all-reduce" in rows[2][1][0][0] and "all-reduce" in label
    assert "on each of 4 devices" in label and "in 16 bytes" in label  # 4 float32 per device
