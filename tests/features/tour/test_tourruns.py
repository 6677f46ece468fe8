"""The tour's measurements: step 9's timing at a size every device count divides, and its
speed-up picture over pmap on one device."""

from pmapviz.core.devices import devicefacts
from pmapviz.features.tour import tourruns
from pmapviz.features.tour.tourblocks import Context

FACTS = devicefacts.facts()


def test_step_9_times_a_size_that_any_count_divides():
    ctx3 = Context(3, ("cpu:0", "cpu:1", "cpu:2"), FACTS, "")
    rows = tourruns.time_one_and_all(ctx3.n)  # 2**20 does not split over 3 devices; this does
    assert {(r["impl"], r["devices"]) for r in rows} == {("pmap", 1), ("pmap", 3), ("vmap", 1)}
    assert all(r["compute (ms, median)"] > 0 for r in rows)


def test_the_speedup_picture_divides_by_pmap_on_one_device():
    rows = [
        {"impl": "pmap", "devices": 1, "compute (ms, median)": 2.0},
        {"impl": "pmap", "devices": 4, "compute (ms, median)": 0.5},
        {"impl": "vmap", "devices": 1, "compute (ms, median)": 4.0},
    ]
    cells, label = tourruns.speedup_grid(rows, 65_536, "12:34:56")
    assert [c[1][1][0] for c in cells] == ["1.00x", "4.00x", "0.50x"]
    assert [c[1][0][0] for c in cells] == ["2.000 ms", "0.500 ms", "4.000 ms"]
    assert (
        "x * 2 + 1 on 65,536 float32 elements, measured at 12:34:56" in label
        and "jit(vmap) on 1 device(s): 4.000 ms (0.50x)" in label
    )
