"""A benchmark's results: speed-ups over the one-device baseline at the same size, and
parallel efficiency."""

from pmapviz import benchreports


def test_speedups_baseline_is_vmap_at_the_same_size():
    ms = [
        benchreports.Measurement("vmap", 1, 10, 0, 0, [4.0], 0, 1, 1),
        benchreports.Measurement("vmap", 1, 20, 0, 0, [9.0, 8.0, 1.0], 0, 1, 1),  # median 8
        benchreports.Measurement("numpy", 1, 10, 0, 0, [1.0], 0, 1, 1),
        benchreports.Measurement("pmap", 2, 20, 0, 0, [2.0], 0, 1, 1),
        benchreports.Measurement("shard_map", 8, 10, 0, 0, [0.5], 0, 1, 1),
        benchreports.Measurement("jit_sharded", 4, 30, 0, 0, [1.0], 0, 1, 1),
    ]  # no vmap at 30
    rows = benchreports.speedups(ms)
    assert rows == [
        {"impl": "pmap", "devices": 2, "size": 20, "speedup": 4.0, "efficiency": 2.0},
        {"impl": "shard_map", "devices": 8, "size": 10, "speedup": 8.0, "efficiency": 1.0},
    ]
    assert [r["speedup"] for r in benchreports.speedups(ms, baseline="numpy")] == [2.0]


def test_speedups_and_efficiency():
    ms = [
        benchreports.Measurement("vmap", 1, 10, 0, 0, [4.0], 0, 1, 1),
        benchreports.Measurement("pmap", 2, 10, 0, 0, [2.0], 0, 1, 1),
        benchreports.Measurement("pmap", 4, 10, 0, 0, [2.0], 0, 1, 1),
    ]
    rows = benchreports.speedups(ms)
    assert rows[0]["speedup"] == 2.0 and rows[0]["efficiency"] == 1.0
    assert rows[1]["efficiency"] == 0.5
