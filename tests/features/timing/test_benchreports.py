"""A benchmark's results: speed-ups over the one-device baseline at the same size, and
parallel efficiency."""

from pmapviz.features.timing import benchreports


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


def _row(size, impl, devices, run_s):
    return {"size": size, "impl": impl, "devices": devices, "run_s_median": run_s, "floor_s": 1e-4}


def test_the_fastest_run_is_said_against_its_floor_and_the_set_beside_is_not_counted():
    rows = [
        _row(64, "pmap", 2, 2e-3),
        _row(64, "vmap", 1, 1e-3),
        _row(64, "pmap" + benchreports.BESIDE + "cpu", 8, 1e-6),  # the set beside: not its own
        _row(128, "pmap", 2, 5e-6),  # another size
    ]
    said = benchreports.fastest_words(rows, 64, mark="**")
    assert said == (
        "At size 64, the fastest is **vmap on 1 device(s)**: 1 ms, 10.0x the memory floor of "
        "0.1 ms."
    )


def _sp(impl: str, k: int, sp: float) -> dict:
    return {"impl": impl, "devices": k, "size": 1024, "speedup": sp, "efficiency": sp / k}


def test_the_speed_up_verdict_is_derived_from_the_run_shown():
    """Issue 53: the header said more devices do not make the work faster, then the same
    page measured 1.3-1.5x. The verdict now comes from the rows themselves."""
    faster = [_sp("pmap", 4, 1.4), _sp("jit_sharded", 4, 1.2), _sp("pmap", 1, 0.95)]
    words = benchreports.speedup_words(faster, 1024, emulated=True)
    assert "pmap on 4 device(s), was 1.40x as fast as jit(vmap) on one device" in words
    assert "efficiency 35%" in words and "share the cores" in words
    slower = [_sp("pmap", 4, 0.5)]
    assert "2.00x slower than" in benchreports.speedup_words(slower, 1024, emulated=True)
    same = benchreports.speedup_words([_sp("pmap", 2, 1.02)], 1024, emulated=False)
    assert "as fast as (within 10% of)" in same and "share the cores" not in same
    assert benchreports.speedup_words([], 1024, emulated=True) is None
