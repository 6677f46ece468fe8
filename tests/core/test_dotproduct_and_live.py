"""The seed's example at a small size (full size is benchmarks/dot_full.py), and live runs."""

import numpy as np
import pytest

from pmapviz import catalog, dotproduct, memory, programs
from pmapviz.planning import plan
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_dot_small_size_end_to_end():
    steps = []
    r = dotproduct.run_dot(4000, N, repeat=2, progress=lambda t, f: steps.append(f), limit=10**6)
    assert r.pmap_out_shape == (N, 4000 // N) and r.flat_shape == (4000,)
    assert r.allclose and r.max_abs_diff <= 1e-5 and r.numpy_max_abs_diff <= 1e-5
    assert r.without_vmap_shape == (N,) and r.without_vmap_is_block_sums
    assert "4,000 elements" in r.forgot_reshape_message
    assert steps[0] == 0.0 and steps[-1] == 1.0 and steps == sorted(steps)
    assert r.compile_s > 0 and r.transfer_s > 0 and len(r.run_s_all) == 2
    assert [d["device"] for d in r.per_device] == [f"cpu:{k}" for k in range(N)]
    js = r.to_json()
    for key in ("pmap_out_shape", "flat_shape", "max_abs_diff", "allclose", "compile_s",
                "transfer_s", "run_s", "peak_rss_mb"):  # fmt: skip
        assert key in js


@pytest.mark.parametrize(
    "pairs, words", [(999, "at least 1,000"), (4001, "do not split evenly"), (10**7, "budget")]
)
def test_dot_refuses_bad_sizes_before_allocating(pairs, words):
    with pytest.raises(dotproduct.DotError, match=words):
        dotproduct.run_dot(pairs, N, limit=10**6)


def test_max_pairs_is_a_multiple_of_the_device_count():
    assert dotproduct.max_pairs(10**9, 8) % 8 == 0
    fit = dotproduct.max_pairs(10**9, 8)
    assert memory.dot_bytes(fit, 8) <= 10**9 < memory.dot_bytes(fit + 8, 8)


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
    res = programs.run_plan(prog, p, programs.compile_plan(prog, p), "random", seed=3)
    assert res.passed and res.out_shape == p.out_shapes
    assert len(res.outputs) == p.devices_used
    host = programs.make_values(p, "random", seed=3)
    for k, (a, _ax) in enumerate(zip(host, p.in_axes, strict=True)):
        for shard in res.inputs[k]:
            np.testing.assert_array_equal(shard.data, a[shard.index])
    if res.numpy_max_abs_diff is not None:
        assert res.numpy_max_abs_diff <= (0.1 if dtype == "bfloat16" else 1e-4)


def test_make_values_kinds_and_estimate():
    p = plan(catalog.get("add"), [(N, 3), (N, 3)], n_devices=N, dtypes=["int32", "float32"])
    ar = programs.make_values(p, "arange")
    assert ar[0].dtype == np.int32 and ar[1][0, 0] == 100  # offset per argument
    assert (programs.make_values(p, "ones")[1] == 1).all()
    i, o = N * 3 * 4 * 2, N * 3 * 4  # inputs (int32 + float32), float32 output
    check = 3 * 4 + 3 * 8 + 3 * 8  # one device: the int32 block, float64 block and result
    assert programs.estimate_bytes(p, catalog.get("add")) == (
        max(2 * i + o, i + 2 * o, i + o + check) + memory.OVERHEAD
    )
    assert programs.estimate_bytes(p) >= programs.estimate_bytes(p, catalog.get("add"))


def test_make_values_never_builds_a_wide_temporary():
    p = plan(catalog.get("double"), [(N, 3 * 2**20)], n_devices=N, dtypes=["int8"])
    for kind in programs.VALUE_KINDS:
        a = programs.make_values(p, kind, seed=1)[0]
        assert a.dtype == np.int8 and a.shape == (N, 3 * 2**20)
    ar = programs.make_values(p, "arange")[0].reshape(-1)
    np.testing.assert_array_equal(ar[:2000], (np.arange(2000) % 1000).astype(np.int8))


def test_describe_block():
    assert programs.describe_block(np.array([1.0, 2.0])) == "[1., 2.]"
    text = programs.describe_block(np.arange(100.0))
    assert text.startswith("shape (100,): min 0, max 99, mean 49.5")
