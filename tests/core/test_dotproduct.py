"""The seed's example at a small size (full size is benchmarks/dot_full.py)."""

import pytest

from pmapviz import dotproduct, memory
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
