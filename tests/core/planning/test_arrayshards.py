"""What each device holds, read from real arrays: two-axis shardings, a single device's
array, and the mesh's order."""

import jax
import numpy as np

from pmapviz.core.planning import arrayshards


def test_shards_of_reads_a_two_axis_sharding():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    x = jax.device_put(np.arange(16.0).reshape(4, 4), NamedSharding(mesh, PartitionSpec("a")))
    shards = arrayshards.shards_of(x)
    assert len(shards) == 4  # 2 row blocks, each replicated over "b"
    assert sorted(s.replica_id for s in shards) == [0, 0, 1, 1]
    for s in shards:
        np.testing.assert_array_equal(s.data, np.asarray(x)[s.index])
    assert shards[0].index_text == "[0:2, :]"


def test_shards_of_a_single_device_array():
    """No mesh (SingleDeviceSharding): the device set gives the order; one whole shard."""
    x = jax.device_put(np.arange(6.0).reshape(2, 3), jax.devices()[2])
    (shard,) = arrayshards.shards_of(x)
    assert (shard.device, shard.device_id, shard.position, shard.replica_id) == ("cpu:2", 2, 0, 0)
    assert shard.index_text == "[:, :]"
    np.testing.assert_array_equal(shard.data, np.arange(6.0).reshape(2, 3))


def test_shards_of_follows_the_mesh_order_not_the_device_ids():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devs = [jax.devices()[k] for k in (5, 1, 7)]
    x = jax.device_put(
        np.arange(3.0), NamedSharding(Mesh(np.array(devs), ("i",)), PartitionSpec("i"))
    )
    shards = arrayshards.shards_of(x)
    assert [s.device for s in shards] == ["cpu:5", "cpu:1", "cpu:7"]
    assert [s.position for s in shards] == [0, 1, 2]
    assert [s.data.tolist() for s in shards] == [[0.0], [1.0], [2.0]]
