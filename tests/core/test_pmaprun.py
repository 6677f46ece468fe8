"""Running programs: hello-pmap read back from real shards, and live runs of a plan checked
against jit(vmap(f)) and numpy, block by block."""

import jax
import numpy as np
import pytest

from pmapviz import catalog, memory, pmaprun
from pmapviz.planning import plan
from tests.conftest import TEST_DEVICES


@pytest.mark.parametrize("n", [1, 3, 8])
def test_hello_runs_one_element_per_device(n):
    result = pmaprun.run_hello(pmaprun.hello_program(n), n)
    np.testing.assert_array_equal(result.values, 2 * np.arange(n))
    assert [s.device for s in result.outputs] == [str(d) for d in jax.local_devices()[:n]]
    assert [s.position for s in result.outputs] == list(range(n))
    for k, (x, y) in enumerate(zip(result.inputs, result.outputs, strict=True)):
        assert x.device == y.device
        assert x.index == y.index
        np.testing.assert_array_equal(result.values[y.index], y.data)
        assert x.data.tolist() == [k] and y.data.tolist() == [2 * k]
        # JAX writes a whole-axis slice as [:] when one device holds everything
        assert y.index_text == ("[:]" if n == 1 else f"[{k}:{k + 1}]")
    assert "NamedSharding" in result.sharding


def test_shards_of_reads_a_two_axis_sharding():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    x = jax.device_put(np.arange(16.0).reshape(4, 4), NamedSharding(mesh, PartitionSpec("a")))
    shards = pmaprun.shards_of(x)
    assert len(shards) == 4  # 2 row blocks, each replicated over "b"
    assert sorted(s.replica_id for s in shards) == [0, 0, 1, 1]
    for s in shards:
        np.testing.assert_array_equal(s.data, np.asarray(x)[s.index])
    assert shards[0].index_text == "[0:2, :]"


# ---------------------------------------------------------------- live runs of a plan
N = TEST_DEVICES


@pytest.mark.parametrize(
    "key, shapes, in_axes, out_axes, name, dtype",
    [("batched_dot", [(N, 20, 3)] * 2, (0, 0), 0, None, "float32"),
     ("add", [(3, N), (N, 3)], (1, 0), 1, None, "int32"),
     ("matmul", [(4, 2, 3), (3, 5)], (0, None), 0, None, "bfloat16"),
     ("global_sum", [(N, 3)], (0,), None, "i", "float32"),
     ("normalise", [(N, 3)], (0,), 0, "i", "float32")],
)  # fmt: skip
def test_run_plan_matches_reference_and_shards(key, shapes, in_axes, out_axes, name, dtype):
    prog = catalog.get(key)
    p = plan(prog, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=name, n_devices=N,
             dtypes=[dtype] * len(shapes))  # fmt: skip
    res = pmaprun.run_plan(prog, p, pmaprun.compile_plan(prog, p), "random", seed=3, keep=True)
    assert res.passed and res.out_shape == p.out_shapes
    inputs, outputs = res.blocks
    assert len(outputs) == p.devices_used == len(res.rows)
    host = pmaprun.make_values(p, "random", seed=3)
    for k, (a, _ax) in enumerate(zip(host, p.leaf_axes, strict=True)):
        for shard in inputs[k]:
            np.testing.assert_array_equal(shard.data, a[shard.index])
    if res.numpy_max_abs_diff is not None:
        assert res.numpy_max_abs_diff <= (0.1 if dtype == "bfloat16" else 1e-4)


def test_make_values_kinds_and_estimate():
    p = plan(catalog.get("add"), [(N, 3), (N, 3)], n_devices=N, dtypes=["int32", "float32"])
    ar = pmaprun.make_values(p, "arange")
    assert ar[0].dtype == np.int32 and ar[1][0, 0] == 100  # offset per argument
    assert (pmaprun.make_values(p, "ones")[1] == 1).all()
    i, o = N * 3 * 4 * 2, N * 3 * 4  # inputs (int32 + float32), float32 output
    check = 3 * 4 + 3 * 8 + 3 * 8  # one device: the int32 block, float64 block and result
    need = pmaprun.estimate_bytes(p, catalog.get("add"))
    assert need.total == max(2 * i + o, i + 2 * o, i + o + check) + memory.OVERHEAD
    copies = 3 * 8 + 3 * 8  # the float64 copy of y's block and numpy's float64 result
    assert (need.host, need.device) == (i + 2 * o + copies + memory.OVERHEAD, i + 2 * o)
    assert pmaprun.estimate_bytes(p).total >= need.total


def test_make_values_never_builds_a_wide_temporary():
    p = plan(catalog.get("double"), [(N, 3 * 2**20)], n_devices=N, dtypes=["int8"])
    for kind in pmaprun.VALUE_KINDS:
        a = pmaprun.make_values(p, kind, seed=1)[0]
        assert a.dtype == np.int8 and a.shape == (N, 3 * 2**20)
    ar = pmaprun.make_values(p, "arange")[0].reshape(-1)
    np.testing.assert_array_equal(ar[:2000], (np.arange(2000) % 1000).astype(np.int8))


def test_describe_block():
    assert pmaprun.describe_block(np.array([1.0, 2.0])) == "[1., 2.]"
    text = pmaprun.describe_block(np.arange(100.0))
    assert text.startswith("shape (100,): min 0, max 99, mean 49.5")


def test_shards_of_a_single_device_array():
    """No mesh (SingleDeviceSharding): the device set gives the order; one whole shard."""
    x = jax.device_put(np.arange(6.0).reshape(2, 3), jax.devices()[2])
    (shard,) = pmaprun.shards_of(x)
    assert (shard.device, shard.device_id, shard.position, shard.replica_id) == ("cpu:2", 2, 0, 0)
    assert shard.index_text == "[:, :]"
    np.testing.assert_array_equal(shard.data, np.arange(6.0).reshape(2, 3))


def test_shards_of_follows_the_mesh_order_not_the_device_ids():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devs = [jax.devices()[k] for k in (5, 1, 7)]
    x = jax.device_put(np.arange(3.0), NamedSharding(Mesh(np.array(devs), ("i",)),
                                                     PartitionSpec("i")))  # fmt: skip
    shards = pmaprun.shards_of(x)
    assert [s.device for s in shards] == ["cpu:5", "cpu:1", "cpu:7"]
    assert [s.position for s in shards] == [0, 1, 2]
    assert [s.data.tolist() for s in shards] == [[0.0], [1.0], [2.0]]


def test_describe_block_prints_every_value_up_to_the_limit():
    twelve = np.arange(12.0).reshape(3, 4)
    assert pmaprun.describe_block(twelve) == np.array2string(twelve, precision=4, separator=", ")
    assert "..." not in pmaprun.describe_block(np.arange(12.0))  # exactly the limit: all shown
    assert pmaprun.describe_block(np.arange(13.0)).startswith("shape (13,): min 0, max 12")
    assert pmaprun.describe_block(np.arange(5.0), limit=4).startswith("shape (5,)")
    assert pmaprun.describe_block(np.array([0.123456789])) == "[0.1235]"  # 4 significant


@pytest.mark.parametrize("n", [1, 3, N])
def test_three_ways_agree_with_numpy_and_report_their_views(n):
    """pmap, shard_map and jit over a NamedSharding: shapes from the three real outputs, and
    zero difference; numpy (here) says what the dot products are."""
    got = pmaprun.three_ways(n, block=7, seed=5)
    assert got["pmap_shape"] == (n, 7)  # per-device view, rank-reducing
    assert got["shard_map_shape"] == got["jit_shape"] == (n * 7,)
    assert got["max_diff_shard_map"] == 0.0 and got["max_diff_jit"] == 0.0
    assert got["jit_devices"] == n
    if n > 1:  # one device: JAX simplifies the spec to P()
        assert "'i'" in got["shard_map_sharding"] and "'i'" in got["jit_sharding"]


def test_device_rows_read_each_devices_slice_and_block_from_the_shards():
    """Rows against numpy on the same host inputs: device d's x block is x[d] (in_axes 0),
    w is whole on every device (None), and its out block is x[d] @ w."""
    prog = catalog.get("matmul")
    p = plan(prog, [(N, 2, 3), (3, 2)], in_axes=(0, None), n_devices=N)
    res = pmaprun.run_plan(prog, p, pmaprun.compile_plan(prog, p), "arange", seed=0)
    rows = res.rows
    x, w = pmaprun.make_values(p, "arange", 0)
    assert [r["device"] for r in rows] == [str(d) for d in jax.local_devices()[:N]]
    for d, row in enumerate(rows):
        assert row["x slice"] == f"[{d}:{d + 1}, :, :]" and row["w slice"] == "[:, :]"
        assert row["x block (f sees)"] == pmaprun.describe_block(x[d])
        assert row["w block (f sees)"] == pmaprun.describe_block(w)
        assert row["out slice"] == f"[{d}:{d + 1}, :, :]"
        assert row["out block (f returns)"] == pmaprun.describe_block(x[d] @ w)
    p = plan(catalog.get("add"), [(3, N), (N, 3)], in_axes=(1, 0), out_axes=1, n_devices=N)
    res = pmaprun.run_plan(catalog.get("add"), p, pmaprun.compile_plan(catalog.get("add"), p))
    x, y = pmaprun.make_values(p, "arange", 0)
    for d, row in enumerate(res.rows):  # mapped axis 1 in and out
        assert row["x slice"] == f"[:, {d}:{d + 1}]"
        assert row["x block (f sees)"] == pmaprun.describe_block(x[:, d])
        assert row["out block (f returns)"] == pmaprun.describe_block(x[:, d] + y[d])


def test_hello_rows_align_devices_slices_and_values():
    hello = pmaprun.run_hello(pmaprun.hello_program(3), 3)
    rows = dict(pmaprun.hello_rows(hello))
    assert list(rows) == ["device", "slice", "x", "y = x * 2"]
    devs = [str(d) for d in jax.local_devices()[:3]]
    assert [c[0] for c in rows["device"]] == devs and [c[1] for c in rows["device"]] == [0, 1, 2]
    assert [c[0] for c in rows["slice"]] == ["[0:1]", "[1:2]", "[2:3]"]
    assert [c[0] for c in rows["x"]] == ["0", "1", "2"]
    assert [c[0] for c in rows["y = x * 2"]] == ["0", "2", "4"]
    assert rows["y = x * 2"][2][2] == f"{devs[2]} computed y[2:3]"
    assert rows["x"][1][2] == f"{devs[1]} received x[1:2]"
    assert rows["device"][0][2] == f"{devs[0]} (id {jax.local_devices()[0].id})"


def test_compile_plan_times_both_compiles_apart():
    prog = catalog.get("double")
    p = plan(prog, [(N, 3)], n_devices=N)
    t0 = __import__("time").perf_counter()
    c = pmaprun.compile_plan(prog, p)
    took = __import__("time").perf_counter() - t0
    assert 0 < c.compile_s < took and 0 < c.reference_compile_s < took
    assert c.compile_s + c.reference_compile_s <= took


def test_chunks_cover_every_element_once_and_max_abs_of_zeros_is_zero():
    shape = (3, 5, 7)
    seen = np.zeros(shape, int)
    for idx in pmaprun._chunks(shape, limit=6):
        seen[idx] += 1
    assert (seen == 1).all()
    assert pmaprun._max_abs(np.zeros((4, 4), np.float32)) == 0.0
    assert pmaprun._max_abs(np.array([-0.25, 0.125], np.float32)) == 0.25


def test_int_values_are_small_and_centred_on_zero():
    p = plan(catalog.get("double"), [(N, 4000)], n_devices=N, dtypes=["int32"])
    (a,) = pmaprun.make_values(p, "random", seed=1)
    assert a.dtype == np.int32 and a.min() == -9 and a.max() == 9  # every value in -9..9 drawn


def test_device_rows_with_out_axes_none_show_the_one_shared_result():
    from pmapviz import expr

    prog = expr.program("x", "lax.psum(x, 'i')")
    p = plan(prog, [(N, 3)], out_axes=None, axis_name="i", n_devices=N)
    assert p.ok, p.problems
    res = pmaprun.run_plan(prog, p, pmaprun.compile_plan(prog, p), "ones")
    rows = res.rows
    whole = pmaprun.describe_block(np.full(3, N, np.float32))  # all of it, on every device
    assert [r["out block (f returns)"] for r in rows] == [whole] * N


def test_run_plan_reshape_back_and_why_a_tuple_is_not_run():
    from pmapviz import expr

    prog = catalog.get("batched_dot")
    p = plan(prog, [(N, 50, 3)] * 2, n_devices=N)
    res = pmaprun.run_plan(prog, p, pmaprun.compile_plan(prog, p))
    assert res.reshape_back == ((N, 50), (N * 50,)) and res.flat_equal is True
    p = plan(expr.program("x", "(x, x)"), [(N, 2)], n_devices=N)
    assert pmaprun.not_runnable(p) == (
        f"f returns several arrays, (({N}, 2), ({N}, 2)); live runs and timing read back one "
        "output array. Return one array (e.g. jnp.concatenate or a single expression) to run "
        "it; the explorer still plans and draws it.")  # fmt: skip


def test_jax_caches_are_bounded_so_a_server_does_not_keep_every_program():
    """Issue 26: JAX 0.10's pmap keeps every function it pmapped, and every shape compiled
    with it, in a cache whose entries never die (~2 MiB each). compile_plan compiles each plan
    with its own function and drops pmap's memo of it once compiled. In a fresh process, 16
    new programs keep at most a quarter of what they keep without that (or 4 MiB)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    r = subprocess.run([sys.executable, "-m", "tests.core.jax_cache_probe"], cwd=ROOT,
                       capture_output=True, text=True, timeout=240)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    without, bounded = map(int, r.stdout.split())
    assert bounded < max(4 * 2**20, without / 4), (without, bounded)


def test_bound_jax_caches_clears_every_n_programs(monkeypatch):
    import jax

    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(1))
    monkeypatch.setitem(pmaprun._COMPILES, "since_clear", 0)
    results = [pmaprun.bound_jax_caches(every=3) for _ in range(7)]
    assert results == [False, False, True, False, False, True, False] and len(cleared) == 2


def test_what_f_makes_in_between_is_read_from_the_compiled_program_before_it_runs():
    """An outer product inside f: its inputs and output are small, the (n, 2000, 2000) float32
    it makes in between is not. The estimate reads XLA's temp_size_in_bytes of the compiled
    (never run) programs, so a budget counts it before any input exists."""
    from pmapviz import expr, memory

    prog = expr.program("x", "(jnp.einsum('a,b->ab', x, x) @ x).sum()")
    p = plan(prog, [(N, 2000)], n_devices=N)
    compiled = pmaprun.compile_plan(prog, p)
    outer = N * 2000 * 2000 * 4  # the reference makes every device's outer product at once
    assert pmaprun.temporaries(compiled) >= outer
    plain, full = pmaprun.estimate_bytes(p, prog), pmaprun.estimate_bytes(p, prog, compiled)
    assert plain.total < outer < full.total
    assert full.total - plain.total == pmaprun.temporaries(compiled)
    assert full.device - plain.device == pmaprun.temporaries(compiled)  # on their own memory
    small = memory.Budget(full.total - 1)  # one pool (CPU) the inputs and outputs alone fit
    assert small.problem(plain) is None and small.problem(full)
