"""The pmap migration's traps, run on an explorer scenario: each shown result, read from the
run, equals what plain JAX code here gives for the same call on the same values."""

import re

import jax
import numpy as np
import pytest
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.meshes import migrationtraps
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _plan(**changes):
    given = {"fn": "matmul", "s0": f"{N}, 3, 5", "s1": "5, 2", "a1": "None", **changes}
    program, plan, errors = Scenario.from_texts(given, N).plan(N)
    assert not errors and plan.ok, (errors, plan.problems)
    return program, plan


def _arange(shape, k):
    """pmaprun.make_values(kind="arange")'s values, written out: arange % 1000 + 100 k."""
    return (np.arange(int(np.prod(shape))) % 1000 + 100 * k).reshape(shape).astype(np.float32)


def _kinds(hlo: str) -> list[str]:
    """The collectives in HLO text, by a plain regex (``%name = type kind(``)."""
    found = re.findall(
        r"=\s*\S+\s+(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
        r"(?:-start)?\(",
        hlo,
    )
    return found


@pytest.fixture(scope="module")
def matmul_traps():
    program, plan = _plan()
    return migrationtraps.run_traps_here(program, plan, "arange", 0)


def _f(a, b):
    return a @ b


def test_out0_compiles_to_the_collective_a_plain_compile_has(matmul_traps):
    x, w = _arange((N, 3, 5), 0), _arange((5, 2), 1)
    out = jax.pmap(_f, in_axes=(0, None))(x, w)
    trap = matmul_traps.get("index")
    plain = _kinds(jax.jit(lambda a: a[0]).lower(out).compile().as_text())
    assert trap.facts["collectives"] == plain and (N == 1 or "all-reduce" in plain)
    shard = out.addressable_shards[0].data
    assert trap.facts["fix_collectives"] == _kinds(
        jax.jit(lambda b: b.squeeze(0)).lower(shard).compile().as_text()
    )
    assert trap.facts["same_values"] and trap.facts["shape"] == list(np.asarray(out[0]).shape)
    assert trap.code == "out[0]" and f"all-reduce over all {N} devices" in trap.said


def test_out_axes_none_returns_device_0s_value_and_shard_map_refuses_it(matmul_traps):
    x, w = _arange((N, 3, 5), 0), _arange((5, 2), 1)
    plain = np.asarray(jax.pmap(_f, in_axes=(0, None), out_axes=None)(x, w))
    trap = matmul_traps.get("out_axes_none")
    assert np.array_equal(np.asarray(trap.facts["values"][0], np.float32), plain)
    assert np.array_equal(plain, x[0] @ w)  # device 0's own block, as pmap returned it
    assert trap.facts["differ"] == ["out"] and trap.facts["returned_device0"]
    mesh = JaxMesh(np.array(jax.devices()[:N]), ("i",))

    def f_block(a, b):  # JAX names the function in its words
        return _f(a.squeeze(0), b)

    sm = jax.shard_map(f_block, mesh=mesh, in_specs=(P("i"), P()), out_specs=P())
    with pytest.raises(ValueError) as err:
        jax.jit(sm)(x, w)
    joined = " ".join(line.strip() for line in str(err.value).splitlines() if line.strip())
    assert trap.jax_words == f"ValueError: {joined}"


def test_nested_pmap_is_refused_in_the_words_of_a_plain_nested_call(matmul_traps):
    trap = matmul_traps.get("nested")
    outer, inner = trap.facts["outer"], trap.facts["inner"]
    x, w = _arange((outer, inner, 3, 5), 0), _arange((5, 2), 1)
    nested = jax.pmap(jax.pmap(_f, in_axes=(0, None)), in_axes=(0, None), axis_name="outer")
    with pytest.raises(ValueError) as err:
        nested(x, w)
    assert trap.jax_words == f"ValueError: {err.value}"


def test_the_old_apis_are_what_the_installed_jax_says_and_their_replacements_run(matmul_traps):
    trap = matmul_traps.get("deprecated")
    for api, has in trap.facts["has"].items():
        module, _, attr = api.rpartition(".")
        mod = jax if module == "jax" else jax.sharding
        assert has == hasattr(mod, attr), api
        if not has:
            with pytest.raises(AttributeError) as err:
                getattr(mod, attr)
            assert trap.facts["words"][api] == f"AttributeError: {err.value}"
    assert trap.facts["replicated_ok"] and trap.facts["sharded_ok"]
    w = _arange((5, 2), 1)
    mesh = jax.make_mesh((N,), ("i",), devices=jax.devices()[:N])
    placed = jax.device_put(w, NamedSharding(mesh, P()))
    assert all(np.array_equal(np.asarray(s.data), w) for s in placed.addressable_shards)


def test_host_local_data_on_one_process_is_the_global_array(matmul_traps):
    trap = matmul_traps.get("host_local")
    x = _arange((N, 3, 5), 0)
    sharding = NamedSharding(jax.make_mesh((N,), ("i",), devices=jax.devices()[:N]), P("i"))
    g = jax.make_array_from_process_local_data(sharding, x)
    assert trap.facts["shape"] == list(g.shape) and trap.facts["process_count"] == 1
    assert trap.facts["fully_addressable"] == g.is_fully_addressable and trap.facts["same_values"]
    with pytest.raises(ValueError) as err:
        jax.make_array_from_process_local_data(sharding, x, (2 * N, 3, 5))
    assert trap.jax_words == f"ValueError: {err.value}"


def test_your_own_f_runs_in_the_worker_and_a_psum_output_meets_no_out_axes_none_trap():
    program, plan = _plan(
        fn="expr",
        args="x",
        body="lax.psum(x, 'i')",
        s0=f"{N}, 4",
        s1="",
        a1="0",
        out="None",
        name="i",
    )
    found = migrationtraps.run_traps(program, plan)
    assert not found.get("index").applies  # out_axes=None: nothing is split
    none = found.get("out_axes_none")
    assert none.facts["differ"] == [] and not none.facts["shard_map_refused"]
    assert found.get("nested").facts["refused"]


@pytest.mark.parametrize("n", [1, 3, 5])
def test_every_trap_runs_on_few_devices_and_says_what_it_found(n):
    program, plan = _plan(fn="double", s0=f"{n}, 4", s1="", a1="0")
    found = migrationtraps.run_traps_here(program, plan, "arange", 0)
    out = jax.pmap(lambda a: a * 2)(_arange((n, 4), 0))
    plain = _kinds(jax.jit(lambda a: a[0]).lower(out).compile().as_text())
    index = found.get("index")
    assert index.facts["collectives"] == plain
    if n == 1:
        assert plain == [] and "one device holds all of it" in index.said
    else:
        assert f"all-reduce over all {n} devices" in index.said
    assert found.get("out_axes_none").facts["differ"] == ([] if n == 1 else ["out"])
    assert found.get("nested").facts["refused"] and found.get("host_local").facts["same_values"]
