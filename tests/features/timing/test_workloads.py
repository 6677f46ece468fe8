"""The Timing lab's workloads: what their inputs hold is what their costs count, and f gives
the same answer in JAX and in numpy."""

import numpy as np
import pytest

from pmapviz.features.timing import workloads


@pytest.mark.parametrize("key", sorted(workloads.WORKLOADS))
def test_a_workloads_inputs_and_output_are_the_bytes_its_costs_count(key):
    wl = workloads.WORKLOADS[key]
    host = wl.inputs(64, np.random.default_rng(0))
    assert len(host) == len(wl.split) and all(a.dtype == np.float32 for a in host)
    assert [a.shape[0] for a, split in zip(host, wl.split, strict=True) if split] == [64] * sum(
        wl.split
    )
    assert sum(a.nbytes for a in host) == wl.input_bytes(64)
    want = wl.numpy_fn()(*host)
    assert want.nbytes == wl.output_bytes(64)
    assert wl.bytes_moved(64) == wl.input_bytes(64) + wl.output_bytes(64)
    np.testing.assert_allclose(np.asarray(wl.block_fn()(*host)), want, rtol=1e-4, atol=1e-4)
    assert wl.flops(64) > 0


def test_the_explorers_settings_are_a_workload_of_their_own():
    assert workloads.PLAN_WORKLOAD.key == "explorer" and "explorer" not in workloads.WORKLOADS
    assert workloads.WORKLOADS["matmul"].split == (True, False)  # the weights go whole
