"""The seed's example at a small size (full size is benchmarks/dot_full.py)."""

import json
import time

import jax
import numpy as np
import pytest

from pmapviz.core.budgets import memoryestimates
from pmapviz.features.live import dotproduct
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_dot_small_size_end_to_end():
    steps = []
    r = dotproduct.run_dot(4000, N, repeat=2, progress=lambda t, f: steps.append(f), limit=10**6)
    assert r.pmap_out_shape == (N, 4000 // N) and r.flat_shape == (4000,)
    assert r.allclose and r.max_abs_diff <= 1e-5 and r.numpy_max_abs_diff <= 1e-5
    assert r.without_vmap_shape == (N,) and r.without_vmap_is_block_sums
    assert "4,000 elements" in r.forgot_reshape_message
    assert r.forgot_reshape_jax.startswith("ValueError: cannot select an axis to squeeze out")
    assert steps[0] == 0.0 and steps[-1] == 1.0 and steps == sorted(steps)
    assert r.compile_s > 0 and r.transfer_s > 0 and len(r.run_s_all) == 2
    assert not r.zero_copy and r.platform == "cpu"  # blocks of 500 pairs: 6,000-byte offsets
    shared = dotproduct.run_dot(16 * 64 * N, N, repeat=1, limit=10**6)
    assert shared.zero_copy and shared.allclose  # the devices' buffers are the host's memory
    assert [d["device"] for d in r.per_device] == [f"cpu:{k}" for k in range(N)]
    # the column names the array its values come from: device 0's block of out, the result
    first = r.per_device[0]["first dot products (out block)"]
    assert first == [round(v, 4) for v in r.sample[:3]]
    js = r.to_json()
    for key in (
        "pmap_out_shape",
        "flat_shape",
        "max_abs_diff",
        "allclose",
        "compile_s",
        "transfer_s",
        "run_s",
        "host_growth_mb",
    ):
        assert key in js


@pytest.mark.parametrize(
    "pairs, words", [(999, "at least 1,000"), (4001, "do not split evenly"), (10**7, "budget")]
)
def test_dot_refuses_bad_sizes_before_allocating(pairs, words):
    with pytest.raises(dotproduct.DotError, match=words):
        dotproduct.run_dot(pairs, N, limit=10**6)


def test_max_pairs_is_the_largest_size_that_fits():
    # blocks of 16 pairs are 192 bytes, the least multiple of 64; 15 pairs (180 bytes) are not
    assert memoryestimates.dot_shared_step(8) == 16 * 8 and memoryestimates.dot_blocks_shared(
        16 * 8, 8
    )
    assert not memoryestimates.dot_blocks_shared(15 * 8, 8)
    fit = dotproduct.max_pairs(10**9, 8)
    assert fit % (16 * 8) == 0 and memoryestimates.dot_blocks_shared(fit, 8)
    assert (
        memoryestimates.dot_bytes(fit, 8).total
        <= 10**9
        < memoryestimates.dot_bytes(fit + 8, 8).total
    )
    assert (
        memoryestimates.dot_bytes(fit + 16 * 8, 8).total > 10**9
    )  # the next shared size does not fit
    # a size under the limit whose blocks are not shared can need more than the budget
    with pytest.raises(dotproduct.DotError, match="do not start on 64-byte boundaries"):
        dotproduct.check_pairs(fit - 8, 8, fit)
    dotproduct.check_pairs(fit // 2, 8, fit)  # shared or not, half the limit fits


def test_inputs_are_seeded_uniform_and_page_aligned():
    x, y = dotproduct._generate(3, (N, 500, 3))
    again = dotproduct._generate(3, (N, 500, 3))
    assert np.array_equal(x, again[0]) and np.array_equal(y, again[1])
    assert not np.array_equal(x, y) and not np.array_equal(x, dotproduct._generate(4, x.shape)[0])
    assert x.dtype == np.float32 and -1 <= x.min() < -0.9 and 0.9 < x.max() < 1
    assert x.ctypes.data % 4096 == 0 and y.ctypes.data % 4096 == 0


def test_cpu_shares_aligned_host_memory_and_copies_misaligned(monkeypatch):
    """The Live page's caption: an array on a 64-byte boundary is shared, one 16 bytes past a
    boundary (where numpy's large arrays usually start) is copied."""
    from pmapviz.core.planning.pmapplacement import pmap_sharding

    base = dotproduct._generate(0, (2, N, 1000))[0].reshape(-1)  # page-aligned
    aligned = base[: N * 960].reshape(N, 320, 3)  # blocks of 3,840 bytes
    off = base[4 : 4 + N * 960].reshape(N, 320, 3)  # 16 bytes past the boundary
    (shared, _), _ = dotproduct._put((aligned, aligned), pmap_sharding(3, 0, N))
    (copied, _), _ = dotproduct._put((off, off), pmap_sharding(3, 0, N))
    assert dotproduct._shares_memory(shared, aligned)
    assert not dotproduct._shares_memory(copied, off)
    np.testing.assert_array_equal(np.asarray(shared), aligned)
    np.testing.assert_array_equal(np.asarray(copied), off)
    one = jax.device_put(aligned, jax.local_devices()[0])
    assert one.unsafe_buffer_pointer() == aligned.ctypes.data
    monkeypatch.setattr(
        type(shared.addressable_shards[0].data), "unsafe_buffer_pointer", lambda self: 1 / 0
    )
    assert not dotproduct._shares_memory(shared, aligned)  # no raw pointers: say copied


def test_backend_start_up_is_not_counted_as_transfer(monkeypatch):
    """Point 6 of issue 25: on the H200 the 10M example's first transfer took 1.84 s, which
    was CUDA starting (the fixture's vmap_transfer_s). Here the backend's first device_put
    is made slow on purpose: run_dot starts the backend before anything is timed, and the
    start-up is reported once, by devicefacts, not as anybody's transfer."""
    from pmapviz.core.devices import devicefacts
    from tests.fakes import FIXTURES

    fixture = json.loads((FIXTURES / "dot_10M_gpu_h200.json").read_text())
    assert fixture["vmap_transfer_s"] > 20 * fixture["transfer_s"]  # what it looked like
    real, calls = jax.device_put, []

    def slow_first(x, *a, **k):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.5)  # "CUDA starting"
        return real(x, *a, **k)

    monkeypatch.setattr(jax, "device_put", slow_first)
    monkeypatch.setattr(devicefacts, "_STARTUP", {})  # a fresh process, as far as it knows
    r = dotproduct.run_dot(4096, N, repeat=1, limit=10**6)
    assert r.vmap_transfer_s < 0.3 and r.transfer_s < 0.3 and r.allclose
    assert devicefacts.facts().startup_s >= 0.5


def test_transfer_notes_say_what_the_copy_was(fake_devices):
    r = dotproduct.run_dot(4000, N, repeat=1, limit=10**6)
    assert "do not start on 64-byte boundaries" in dotproduct.transfer_note(r)
    with fake_devices("gpu"):
        g = dotproduct.run_dot(4096, N, repeat=1, limit=10**6)
    assert g.platform == "gpu" and g.device_peak_bytes == 8388608
    note = dotproduct.transfer_note(g)
    assert "real host-to-device copy" in note and "untimed copy" in note
    assert "64-byte" not in note and "start-up is in the sidebar" in note
