"""Running programs: hello-pmap read back from real shards."""

import jax
import numpy as np
import pytest

from pmapviz import programs


@pytest.mark.parametrize("n", [1, 3, 8])
def test_hello_runs_one_element_per_device(n):
    result = programs.run_hello(programs.hello_program(), n)
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
    shards = programs.shards_of(x)
    assert len(shards) == 4  # 2 row blocks, each replicated over "b"
    assert sorted(s.replica_id for s in shards) == [0, 0, 1, 1]
    for s in shards:
        np.testing.assert_array_equal(s.data, np.asarray(x)[s.index])
    assert shards[0].index_text == "[0:2, :]"


def test_shards_of_a_single_device_array():
    """No mesh (SingleDeviceSharding): the device set gives the order; one whole shard."""
    x = jax.device_put(np.arange(6.0).reshape(2, 3), jax.devices()[2])
    (shard,) = programs.shards_of(x)
    assert (shard.device, shard.device_id, shard.position, shard.replica_id) == ("cpu:2", 2, 0, 0)
    assert shard.index_text == "[:, :]"
    np.testing.assert_array_equal(shard.data, np.arange(6.0).reshape(2, 3))


def test_shards_of_follows_the_mesh_order_not_the_device_ids():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devs = [jax.devices()[k] for k in (5, 1, 7)]
    x = jax.device_put(np.arange(3.0), NamedSharding(Mesh(np.array(devs), ("i",)),
                                                     PartitionSpec("i")))  # fmt: skip
    shards = programs.shards_of(x)
    assert [s.device for s in shards] == ["cpu:5", "cpu:1", "cpu:7"]
    assert [s.position for s in shards] == [0, 1, 2]
    assert [s.data.tolist() for s in shards] == [[0.0], [1.0], [2.0]]
