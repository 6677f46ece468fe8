"""Live runs of a plan on real values, checked against jit(vmap(f)) and numpy block by block,
and every device's blocks read back from the shards."""

import jax
import numpy as np
import pytest

from pmapviz.core.budgets import memorymodel
from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import pmapcompile, pmaprun
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


@pytest.mark.parametrize(
    "key, shapes, in_axes, out_axes, name, dtype",
    [
        ("batched_dot", [(N, 20, 3)] * 2, (0, 0), 0, None, "float32"),
        ("add", [(3, N), (N, 3)], (1, 0), 1, None, "int32"),
        ("matmul", [(4, 2, 3), (3, 5)], (0, None), 0, None, "bfloat16"),
        ("global_sum", [(N, 3)], (0,), None, "i", "float32"),
        ("normalise", [(N, 3)], (0,), 0, "i", "float32"),
    ],
)
def test_run_plan_matches_reference_and_shards(key, shapes, in_axes, out_axes, name, dtype):
    prog = functions.get(key)
    p = plan(
        prog,
        shapes,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=name,
        n_devices=N,
        dtypes=[dtype] * len(shapes),
    )
    res = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p), "random", seed=3, keep=True)
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
    p = plan(functions.get("add"), [(N, 3), (N, 3)], n_devices=N, dtypes=["int32", "float32"])
    ar = pmaprun.make_values(p, "arange")
    assert ar[0].dtype == np.int32 and ar[1][0, 0] == 100  # offset per argument
    assert (pmaprun.make_values(p, "ones")[1] == 1).all()
    i, o = N * 3 * 4 * 2, N * 3 * 4  # inputs (int32 + float32), float32 output
    check = 3 * 4 + 3 * 8 + 3 * 8  # one device: the int32 block, float64 block and result
    need = pmaprun.estimate_bytes(p, functions.get("add"))
    assert need.total == max(2 * i + o, i + 2 * o, i + o + check) + memorymodel.OVERHEAD
    copies = 3 * 8 + 3 * 8  # the float64 copy of y's block and numpy's float64 result
    assert (need.host, need.device) == (i + 2 * o + copies + memorymodel.OVERHEAD, i + 2 * o)
    assert pmaprun.estimate_bytes(p).total >= need.total


def test_make_values_never_builds_a_wide_temporary():
    p = plan(functions.get("double"), [(N, 3 * 2**20)], n_devices=N, dtypes=["int8"])
    for kind in pmaprun.VALUE_KINDS:
        a = pmaprun.make_values(p, kind, seed=1)[0]
        assert a.dtype == np.int8 and a.shape == (N, 3 * 2**20)
    ar = pmaprun.make_values(p, "arange")[0].reshape(-1)
    np.testing.assert_array_equal(ar[:2000], (np.arange(2000) % 1000).astype(np.int8))


def test_describe_block():
    assert pmaprun.describe_block(np.array([1.0, 2.0])) == "[1., 2.]"
    text = pmaprun.describe_block(np.arange(100.0))
    assert text.startswith("shape (100,): min 0, max 99, mean 49.5")


def test_describe_block_prints_every_value_up_to_the_limit():
    twelve = np.arange(12.0).reshape(3, 4)
    assert pmaprun.describe_block(twelve) == np.array2string(twelve, precision=4, separator=", ")
    assert "..." not in pmaprun.describe_block(np.arange(12.0))  # exactly the limit: all shown
    assert pmaprun.describe_block(np.arange(13.0)).startswith("shape (13,): min 0, max 12")
    assert pmaprun.describe_block(np.arange(5.0), limit=4).startswith("shape (5,)")
    assert pmaprun.describe_block(np.array([0.123456789])) == "[0.1235]"  # 4 significant


def test_device_rows_read_each_devices_slice_and_block_from_the_shards():
    """Rows against numpy on the same host inputs: device d's x block is x[d] (in_axes 0),
    w is whole on every device (None), and its out block is x[d] @ w."""
    prog = functions.get("matmul")
    p = plan(prog, [(N, 2, 3), (3, 2)], in_axes=(0, None), n_devices=N)
    res = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p), "arange", seed=0)
    rows = res.rows
    x, w = pmaprun.make_values(p, "arange", 0)
    assert [r["device"] for r in rows] == [str(d) for d in jax.local_devices()[:N]]
    for d, row in enumerate(rows):
        assert row["x slice"] == f"[{d}:{d + 1}, :, :]" and row["w slice"] == "[:, :]"
        assert row["x block (f sees)"] == pmaprun.describe_block(x[d])
        assert row["w block (f sees)"] == pmaprun.describe_block(w)
        assert row["out slice"] == f"[{d}:{d + 1}, :, :]"
        assert row["out block (f returns)"] == pmaprun.describe_block(x[d] @ w)
    p = plan(functions.get("add"), [(3, N), (N, 3)], in_axes=(1, 0), out_axes=1, n_devices=N)
    res = pmaprun.run_plan(
        functions.get("add"), p, pmapcompile.compile_plan(functions.get("add"), p)
    )
    x, y = pmaprun.make_values(p, "arange", 0)
    for d, row in enumerate(res.rows):  # mapped axis 1 in and out
        assert row["x slice"] == f"[:, {d}:{d + 1}]"
        assert row["x block (f sees)"] == pmaprun.describe_block(x[:, d])
        assert row["out block (f returns)"] == pmaprun.describe_block(x[:, d] + y[d])


def test_chunks_cover_every_element_once_and_max_abs_of_zeros_is_zero():
    shape = (3, 5, 7)
    seen = np.zeros(shape, int)
    for idx in pmaprun._chunks(shape, limit=6):
        seen[idx] += 1
    assert (seen == 1).all()
    assert pmaprun._max_abs(np.zeros((4, 4), np.float32)) == 0.0
    assert pmaprun._max_abs(np.array([-0.25, 0.125], np.float32)) == 0.25


def test_int_values_are_small_and_centred_on_zero():
    p = plan(functions.get("double"), [(N, 4000)], n_devices=N, dtypes=["int32"])
    (a,) = pmaprun.make_values(p, "random", seed=1)
    assert a.dtype == np.int32 and a.min() == -9 and a.max() == 9  # every value in -9..9 drawn


def test_device_rows_with_out_axes_none_show_the_one_shared_result():
    from pmapviz.core.expressions import expr

    prog = expr.program("x", "lax.psum(x, 'i')")
    p = plan(prog, [(N, 3)], out_axes=None, axis_name="i", n_devices=N)
    assert p.ok, p.problems
    res = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p), "ones")
    rows = res.rows
    whole = pmaprun.describe_block(np.full(3, N, np.float32))  # all of it, on every device
    assert [r["out block (f returns)"] for r in rows] == [whole] * N


def test_run_plan_reshape_back_and_why_a_tuple_is_not_run():
    from pmapviz.core.expressions import expr

    prog = functions.get("batched_dot")
    p = plan(prog, [(N, 50, 3)] * 2, n_devices=N)
    res = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p))
    assert res.reshape_back == ((N, 50), (N * 50,)) and res.flat_equal is True
    p = plan(expr.program("x", "(x, x)"), [(N, 2)], n_devices=N)
    assert pmaprun.not_runnable(p) == (
        f"f returns several arrays, (({N}, 2), ({N}, 2)); live runs and timing read back one "
        "output array. Return one array (e.g. jnp.concatenate or a single expression) to run "
        "it; the explorer still plans and draws it."
    )


def test_what_f_makes_in_between_is_read_from_the_compiled_program_before_it_runs():
    """An outer product inside f: its inputs and output are small, the (n, 2000, 2000) float32
    it makes in between is not. The estimate reads XLA's temp_size_in_bytes of the compiled
    (never run) programs, so a budget counts it before any input exists."""
    from pmapviz.core.budgets import memorymodel
    from pmapviz.core.expressions import expr

    prog = expr.program("x", "(jnp.einsum('a,b->ab', x, x) @ x).sum()")
    p = plan(prog, [(N, 2000)], n_devices=N)
    compiled = pmapcompile.compile_plan(prog, p)
    outer = N * 2000 * 2000 * 4  # the reference makes every device's outer product at once
    assert pmapcompile.temporaries(compiled) >= outer
    plain, full = pmaprun.estimate_bytes(p, prog), pmaprun.estimate_bytes(p, prog, compiled)
    assert plain.total < outer < full.total
    assert full.total - plain.total == pmapcompile.temporaries(compiled)
    assert full.device - plain.device == pmapcompile.temporaries(compiled)  # on their own memory
    small = memorymodel.Budget(full.total - 1)  # one pool (CPU) the inputs and outputs alone fit
    assert small.problem(plain) is None and small.problem(full)
