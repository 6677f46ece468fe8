"""The tour's measurements: step 9's timing of x * 2 + 1 on one and on all devices (its size,
its rows and their speed-up picture, or :class:`NotMeasured` when it cannot be made now), and
step 8's launch of two real processes; the two demos behind a button."""

from __future__ import annotations

from pmapviz.features.cluster import cluster
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import sweepsetup, workloads
from pmapviz.features.tour.tourblocks import TourBlock


class NotMeasured(Exception):
    """A step whose measurement could not be made now: its ``blocks`` without it. Raised, so a
    page that caches steps (``tour_step.demo``) does not keep the step unmeasured."""

    def __init__(self, blocks: list[TourBlock]):
        super().__init__("not measured now")
        self.blocks = blocks


ARRIVAL_WAIT_S = 2.0  # step 9 measures on arrival, unless other benchmarks hold the turn


def speedup_grid(rows: list[dict], size: int, taken: str) -> tuple[list, str]:
    """``time_one_and_all``'s rows as a picture: each run's median compute time and its
    speed-up over pmap on one device, labelled with when it was measured."""
    base = next(r for r in rows if r["impl"] == "pmap" and r["devices"] == 1)
    one = base["compute (ms, median)"] or 1e-9
    cells = []
    for r in rows:
        name = "jit(vmap)" if r["impl"] == "vmap" else r["impl"]
        what = f"{name} on {r['devices']} device(s)"
        ms, speedup = r["compute (ms, median)"], one / max(r["compute (ms, median)"], 1e-9)
        cells.append(
            (
                what,
                [
                    (f"{ms:.3f} ms", None, f"{what}: {ms:.3f} ms, median of 5"),
                    (f"{speedup:.2f}x", None, f"{speedup:.2f}x pmap on 1 device"),
                ],
            )
        )
    label = (
        f"x * 2 + 1 on {size:,} float32 elements, measured at {taken} on this server: "
        + "; ".join(f"{w}: {c[0][0]} ({c[1][0]})" for w, c in cells)
    )
    return cells, label


def launch_two_processes(on_wait=None) -> list[dict]:
    """Two real processes with one device each (step 8); raises ClusterError on failure."""
    res = cluster.launch(2, 1, timeout=30, compare_single=False, on_wait=on_wait)
    return [
        {
            "process": p["process_index"],
            "local devices": str(p["local_device_ids"]),
            "global devices": p["global_devices"],
            "psum": p["psum"],
        }
        for p in res.per_process
    ]


def scaling_size(n: int) -> int:
    """Step 9's size: x * 2 + 1 on elements that 1 and ``n`` devices both divide."""
    return sweepsetup.size_choices("elementwise", [1, n])[1]


def time_one_and_all(n: int, on_wait=None, queue_timeout: float | None = None) -> list[dict]:
    """x * 2 + 1 timed with pmap on 1 and on n devices and jit(vmap) (step 9), at a size every
    count divides; raises BenchError on failure (queues.WaitTimeout after ``queue_timeout``
    seconds behind other benchmarks)."""
    size = scaling_size(n)
    rep = bench.sweep(
        workloads.WORKLOADS["elementwise"],
        [size],
        sorted({1, n}),  # one device: pmap on it once
        ["pmap", "vmap"],
        repeat=5,
        on_wait=on_wait,
        **({} if queue_timeout is None else {"queue_timeout": queue_timeout}),
    )
    return [
        {
            "impl": m.impl,
            "devices": m.devices,
            "compute (ms, median)": round(m.run_s_median * 1e3, 3),
            "memory floor (ms)": round(m.floor_s * 1e3, 3),
        }
        for m in rep.results
    ]
