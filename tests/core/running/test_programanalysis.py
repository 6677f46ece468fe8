"""Real compilations of every collective of the playground, the explorer's plans and the
training step: the collectives XLA emitted, the ring model beside them, the three levels, cost
and memory for four variants, hidden communication, and the CLI."""

import json

import numpy as np
import pytest

from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.core.running import programanalysis
from pmapviz.features.collectives import collectiveanalysis
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
ALL = tuple(range(N))
HALVES = [[0, 1, 2, 3], [4, 5, 6, 7]]


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
    a = collectiveanalysis.analyse_collective("psum", N, 2, HALVES)
    assert "axis_index_groups" in a.variants["vmap"].error
    assert a.variants["pmap"].error is None


def test_an_invalid_plan_is_refused():
    program = functions.get("double")
    with pytest.raises(ValueError, match="valid plan"):
        programanalysis.analyse_plan(program, planning.plan(program, [(N + 1, 2)]))


def test_rows_survive_json():
    a = collectiveanalysis.analyse_collective("ppermute", N, 2, perm=[(0, 1)])
    out = json.loads(json.dumps(a.to_json()))
    assert out["collectives"][0]["source_target_pairs"] == [[0, 1]]
    assert np.isclose(out["collectives"][0]["model_sent_bytes"], 8 / N)


def test_the_program_picture_shows_one_program_on_every_device():
    a = collectiveanalysis.analyse_collective("psum", 4, 4)
    rows, label = programanalysis.program_grid(a, ["cpu:0", "cpu:1", "cpu:2", "cpu:3"])
    assert [r[0] for r in rows] == ["device", "runs", "collectives", "memory"]
    assert all(len(cells) == 4 for _, cells in rows)
    assert len({c[0] for c in rows[1][1]}) == 1  # the same program everywhere
    assert "all-reduce" in rows[2][1][0][0] and "all-reduce" in label
    assert "on each of 4 devices" in label and "in 16 bytes" in label  # 4 float32 per device
