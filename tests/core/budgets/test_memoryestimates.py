"""The memory model against reality: each allocating action runs in a fresh process
(tests/core/memory_probe.py), which measures its peak RSS; every estimate must hold
``measured <= estimate <= max(1.5 * measured, measured + 8 MiB)``. Plus the estimates' pure
parts."""

import json
import subprocess
import sys

import pytest

from pmapviz.core.budgets import memoryestimates, memorymodel
from pmapviz.core.devices import devicerates
from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.features.timing import sweepsetup, workloads
from tests.conftest import ROOT

# mid sizes: data dominates the runtime's noise, each run a few seconds
CASES = [
    ("live", "double", "float32", "4", "4,4000000"),
    ("live", "double", "bool", "4", "4,8000000"),
    ("live", "double", "int8", "4", "4,16000000"),
    ("live", "add", "int8", "4", "4,8000000", "4,8000000"),
    ("live", "add", "float32", "4", "4,3000000", "4,3000000"),
    ("live", "matmul", "float32", "4", "4,500000,8", "8,4"),
    ("dot", "4000000", "4"),
    ("dot", "4000004", "4"),  # blocks of 1,000,001 pairs: not shared, the devices get copies
    ("sweep", "elementwise", "16000000", "300000000"),  # data and the probe (75 MiB)
    ("timing_plan", "double", "float32", "4,4000000"),
    ("train", "mlp", "65536", "20"),
    ("train", "linear", "65536", "20"),
    ("collective", "all_gather", "64"),
    # large blocks: the formula alone (82 MB) fell short of both (163 MB, 90-95 MB); what
    # memory_analysis reports, n devices' outputs and all_to_all's temporaries, covers them
    ("collective", "all_gather", "1000000"),
    ("collective", "all_to_all", "1000000"),
    ("cluster", "2", "2"),
]
LOW, HIGH = 1.0, 1.5
# Fresh-process peaks of the smallest actions vary by half between runs (train linear:
# 10.9-22.4 MB against a 16.8 MB estimate, the high ones with the other workers' servers
# and browsers alive beside it; live add: 240-277 MB against 265 MB). What else a process
# allocates only adds to its peak, so a case outside the bounds is measured up to three times
# more, one process at a time, and its lowest peak counts; a model that is wrong stays outside.
RETRIES = 3
# Below a few MiB the peak is the allocator's noise, not the action: memory freed before the
# action is reused by it (train linear at its largest batch, 8.75 MB of data: 10.9 MB measured
# in one CI run, 14.2-17.6 MB on a quiet machine). An estimate may be over by this much, as
# well as by half: a few MiB more reserved in a pool of GiBs refuses no one.
SLACK = 8 * 2**20


def _probe(cases: list[tuple[str, ...]], jobs: int) -> list[dict]:
    """Each case measured in a fresh process of its own (forked from one that imported JAX
    and pmapviz once: tests/core/memory_probe.py --many), ``jobs`` at a time."""
    r = subprocess.run(
        [sys.executable, "-m", "tests.core.memory_probe", "--many", str(jobs), json.dumps(cases)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    failed = [c for c, row in zip(cases, rows, strict=True) if "failed" in row]
    assert not failed, f"{failed} failed:\n{r.stderr[-3000:]}"
    return rows


def _within(row: dict) -> bool:
    measured = row["measured"]
    return LOW * measured <= row["estimate"] <= max(HIGH * measured, measured + SLACK)


@pytest.fixture(scope="module")
def rows(request) -> dict[tuple, dict]:
    """Every case this run collected, probed at once (each case is a long walk: the whole
    suite probes a part of them, tests/rotation.py; ``benchmarks/memory_model.py`` all)."""
    cases = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_estimate_covers_the_measured_peak_within_half"
    ]
    first = dict(zip(cases, _probe(cases, 4), strict=True))
    for _ in range(RETRIES):  # a noisy run is measured again (RSS sampling at small sizes)
        if again := [c for c, row in first.items() if not _within(row)]:
            for case, row in zip(again, _probe(again, 1), strict=True):
                first[case] = min(first[case], row, key=lambda r: r["measured"])
    return first


# a case's share of the probes' CPU-seconds (42 for the 16 cases, four processes at a time)
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.rotates(cpu_s=2.6)) for c in CASES],
    ids=["-".join(c) for c in CASES],
)
def test_estimate_covers_the_measured_peak_within_half(rows, case):
    row = rows[case]
    mib = {k: round(row[k] / 2**20, 1) for k in ("estimate", "measured")}
    assert _within(row), f"{case}: {mib}, ratio {row['estimate'] / row['measured']:.2f}"


def test_live_estimate_counts_device_dtypes_and_the_numpy_result():
    p32 = plan(functions.get("double"), [(8, 1000)], n_devices=8, dtypes="float32")
    p64 = plan(functions.get("double"), [(8, 1000)], n_devices=8, dtypes="float64")
    pb = plan(functions.get("double"), [(8, 1000)], n_devices=8, dtypes="bool")
    est = [
        memoryestimates.live_run_bytes(p, "double").total - memorymodel.OVERHEAD
        for p in (p32, p64, pb)
    ]
    assert est[0] == est[1] == 3 * 32000  # float64 is float32 on the devices (x64 off)
    assert est[2] == 8000 + 2 * 32000  # bool in, int32 out (JAX: bool * 2), two outputs held
    assert memoryestimates.live_run_bytes(p32, "double").device == 32000 + 2 * 32000
    no_numpy = plan(functions.get("normalise"), [(1, 1000)], axis_name="i", n_devices=1)
    assert (
        memoryestimates.live_run_bytes(no_numpy, "normalise").total
        < memoryestimates.live_run_bytes(no_numpy).total
    )


def test_sweep_probe_is_sized_by_the_budget_and_measured_once(monkeypatch):
    assert devicerates.probe_nbytes(10**12) == 128 * 2**20
    assert devicerates.probe_nbytes(400 * 2**20) == 100 * 2**20
    calls = []
    saved = devicerates._RATES.get("rates")
    devicerates.set_rates(None)
    monkeypatch.setattr(devicerates, "measure_bandwidth", lambda n: calls.append(n) or (9.0, "x"))
    monkeypatch.setattr(devicerates, "measure_flops", lambda: 1e9)
    monkeypatch.setattr(devicerates, "measure_transfer", lambda: 1.0)
    try:
        assert (
            memoryestimates.sweep_bytes(
                workloads.WORKLOADS["dot"], [64], [1], ["pmap"], 400 * 2**20
            ).total
            >= 100 * 2**20
        )  # the probe (one array), not yet measured
        first = sweepsetup.bandwidth(400 * 2**20)
        assert first.bandwidth_gbs == 9.0 and sweepsetup.bandwidth(10**12) is first
        assert calls == [100 * 2**20]
        assert (
            memoryestimates.sweep_bytes(
                workloads.WORKLOADS["dot"], [64], [1], ["pmap"], 400 * 2**20
            ).total
            < 50 * 2**20
        )  # measured: no probe
    finally:
        devicerates.set_rates(saved)
