"""The small pmap demos, run for real: hello-pmap read back from the shards, and the seed's
dot products three ways."""

import jax
import numpy as np
import pytest

from pmapviz.features.home import pmapdemos
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


@pytest.mark.parametrize("n", [1, 3, 8])
def test_hello_runs_one_element_per_device(n):
    result = pmapdemos.run_hello(pmapdemos.hello_program(n), n)
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


@pytest.mark.parametrize("n", [1, 3, N])
def test_three_ways_agree_with_numpy_and_report_their_views(n):
    """pmap, shard_map and jit over a NamedSharding: shapes from the three real outputs, and
    zero difference; numpy (here) says what the dot products are."""
    got = pmapdemos.three_ways(n, block=7, seed=5)
    assert got["pmap_shape"] == (n, 7)  # per-device view, rank-reducing
    assert got["shard_map_shape"] == got["jit_shape"] == (n * 7,)
    assert got["max_diff_shard_map"] == 0.0 and got["max_diff_jit"] == 0.0
    assert got["jit_devices"] == n
    if n > 1:  # one device: JAX simplifies the spec to P()
        assert "'i'" in got["shard_map_sharding"] and "'i'" in got["jit_sharding"]


def test_hello_rows_align_devices_slices_and_values():
    hello = pmapdemos.run_hello(pmapdemos.hello_program(3), 3)
    rows = dict(pmapdemos.hello_rows(hello))
    assert list(rows) == ["device", "slice", "x", "y = x * 2"]
    devs = [str(d) for d in jax.local_devices()[:3]]
    assert [c[0] for c in rows["device"]] == devs and [c[1] for c in rows["device"]] == [0, 1, 2]
    assert [c[0] for c in rows["slice"]] == ["[0:1]", "[1:2]", "[2:3]"]
    assert [c[0] for c in rows["x"]] == ["0", "1", "2"]
    assert [c[0] for c in rows["y = x * 2"]] == ["0", "2", "4"]
    assert rows["y = x * 2"][2][2] == f"{devs[2]} computed y[2:3]"
    assert rows["x"][1][2] == f"{devs[1]} received x[1:2]"
    assert rows["device"][0][2] == f"{devs[0]} (id {jax.local_devices()[0].id})"
