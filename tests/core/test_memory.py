"""The memory model against reality: each allocating action runs in a fresh process
(tests/core/memory_probe.py), which measures its peak RSS; every estimate must hold
``measured <= estimate <= 1.5 * measured``. Plus the model's pure parts."""

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pmapviz import benchmarking, catalog, devicefacts, devicerates, memory, trainingrun
from pmapviz.cluster import cluster
from pmapviz.live import dotproduct
from pmapviz.planning import plan
from tests.conftest import ROOT
from tests.fakes import actions_held

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
# Fresh-process peaks of the smallest actions vary by a third between runs (train linear:
# 14.5-20.7 MB against a 23.9 MB estimate; live add: 240-277 MB against 265 MB), so a case
# outside the bounds is measured up to twice more; a model that is wrong stays outside.
RETRIES = 2


def _probe(case: tuple[str, ...]) -> dict:
    r = subprocess.run([sys.executable, "-m", "tests.core.memory_probe", *case], cwd=ROOT,
                       capture_output=True, text=True, timeout=240)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _within(row: dict) -> bool:
    return LOW * row["measured"] <= row["estimate"] <= HIGH * row["measured"]


@pytest.fixture(scope="module")
def rows() -> dict[tuple, dict]:
    with ThreadPoolExecutor(4) as pool:
        first = dict(zip(CASES, pool.map(_probe, CASES), strict=True))
    for _ in range(RETRIES):  # a noisy run is measured again (RSS sampling at small sizes)
        again = [c for c, row in first.items() if not _within(row)]
        with ThreadPoolExecutor(2) as pool:
            first.update(zip(again, pool.map(_probe, again), strict=True))
    return first


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_estimate_covers_the_measured_peak_within_half(rows, case):
    row = rows[case]
    mib = {k: round(row[k] / 2**20, 1) for k in ("estimate", "measured")}
    assert _within(row), f"{case}: {mib}, ratio {row['estimate'] / row['measured']:.2f}"


def _need(total: int) -> memory.Need:
    return memory.Need(total, total, 0)


def test_largest_fitting_is_exact():
    need = lambda s: _need(10 * s + 7)  # noqa: E731
    assert memory.largest_fitting(need, 1007, 1, 10**6, 4) == 100
    assert memory.largest_fitting(need, 5, 1, 10**6) == 0
    assert memory.largest_fitting(lambda s: _need(s * 2**40), 2**62, 1, 2**40) == 2**22


def test_refusals_name_what_fits():
    with pytest.raises(memory.BudgetError, match="largest"):
        memory.refuse_over(_need(10), 5, "This", "The largest that fits is 5.")
    memory.refuse_over(_need(5), 5, "This", "")
    n = 8
    fit = dotproduct.max_pairs(2 * 10**8, n)
    assert fit % n == 0 and memory.dot_bytes(fit, n).total <= 2 * 10**8
    with pytest.raises(trainingrun.TrainError, match="largest global batch"):
        trainingrun.check_budget(trainingrun.Config("mlp", 8, 65536), 60 * 2**20)
    with pytest.raises(benchmarking.BenchError, match="largest size allowed is 17,"):
        benchmarking.plan_sweep(benchmarking.WORKLOADS["dot"], [10**8], [1, 2], ["pmap"], 10**9)
    with pytest.raises(cluster.ClusterError, match="enough for 1"):
        cluster.check_budget(3, 300 * 2**20, 2)


def test_a_budget_with_device_memory_checks_each_memory_and_names_it():
    """On a GPU or TPU the devices have their own memory: device arrays are weighed against
    the device budget, host work against the host's, and the message says which ran out."""
    need = memory.Need(total=10 * 2**30, host=1 * 2**30, device=9 * 2**30)
    shared = memory.Budget(4 * 2**30)
    assert not shared.fits(need) and "memory budget is 4.29 GB" in shared.problem(need)
    gpu = memory.Budget(host=4 * 2**30, device=100 * 2**30)
    assert gpu.fits(need) and gpu.problem(need) is None
    small = memory.Budget(host=4 * 2**30, device=8 * 2**30)
    assert "9.66 GB of device memory" in small.problem(need)
    assert "device memory budget is 8.59 GB" in small.problem(need)
    host_short = memory.Budget(host=2**29, device=100 * 2**30)
    assert "of host memory" in host_short.problem(need)
    assert gpu.words(need) == "9.66 GB on the devices and 1.07 GB on the host"
    assert shared.share_of(need) == pytest.approx(0.4)
    # the dot example is held by whichever memory runs out first, each in its own budget
    step = memory.dot_shared_step(8)
    for host, device, which in ((28 * 10**9, 7 * 10**9, "device"), (7 * 10**9, 28 * 10**9, "host")):
        fit = dotproduct.max_pairs(memory.Budget(host=host, device=device), 8)
        limit = {"host": host, "device": device}[which]
        assert getattr(memory.dot_bytes(fit, 8), which) <= limit
        assert getattr(memory.dot_bytes(fit + step, 8), which) > limit


def test_the_server_budget_reads_device_memory_on_an_accelerator(fake_devices):
    """With fake H200s (memory_stats from the fixture): a quarter of the free device memory."""
    with fake_devices("gpu"):
        b = memory.budget()
        assert b.device == (112_583_507_968 - 4_194_304) // 4
        assert "bytes_limit - bytes_in_use" in b.device_source
        lines = memory.budget_lines(b, devicefacts.device_memory())
        assert lines[0].startswith("Host memory budget for the whole server")
        assert lines[1].startswith("Device memory budget for the whole server")
        assert lines[2] == ("Device memory now (memory_stats, the fullest, `cuda:0`): 0.00 GiB "
                            "in use of 104.9 GiB, peak 0.01 GiB.")  # fmt: skip
    assert memory.budget().device is None  # back on CPU devices: one pool


def test_live_estimate_counts_device_dtypes_and_the_numpy_result():
    p32 = plan(catalog.get("double"), [(8, 1000)], n_devices=8, dtypes="float32")
    p64 = plan(catalog.get("double"), [(8, 1000)], n_devices=8, dtypes="float64")
    pb = plan(catalog.get("double"), [(8, 1000)], n_devices=8, dtypes="bool")
    est = [memory.live_run_bytes(p, "double").total - memory.OVERHEAD for p in (p32, p64, pb)]
    assert est[0] == est[1] == 3 * 32000  # float64 is float32 on the devices (x64 off)
    assert est[2] == 8000 + 2 * 32000  # bool in, int32 out (JAX: bool * 2), two outputs held
    assert memory.live_run_bytes(p32, "double").device == 32000 + 2 * 32000
    no_numpy = plan(catalog.get("normalise"), [(1, 1000)], axis_name="i", n_devices=1)
    assert (memory.live_run_bytes(no_numpy, "normalise").total
            < memory.live_run_bytes(no_numpy).total)  # fmt: skip


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
            memory.sweep_bytes(
                benchmarking.WORKLOADS["dot"], [64], [1], ["pmap"], 400 * 2**20
            ).total
            >= 100 * 2**20
        )  # the probe (one array), not yet measured
        first = benchmarking.bandwidth(400 * 2**20)
        assert first.bandwidth_gbs == 9.0 and benchmarking.bandwidth(10**12) is first
        assert calls == [100 * 2**20]
        assert (
            memory.sweep_bytes(
                benchmarking.WORKLOADS["dot"], [64], [1], ["pmap"], 400 * 2**20
            ).total
            < 50 * 2**20
        )  # measured: no probe
    finally:
        devicerates.set_rates(saved)


def test_the_budget_is_the_servers_actions_wait_for_their_share():
    """Issue 26: every action could use the whole budget at once (8 sessions peaked at 3x).
    Now a live run waits, in the queue, while others hold the memory it needs, and runs once
    they give it back; an action that could never fit is refused at once."""
    import threading

    from pmapviz import devicesetup, pmaprun

    original = devicesetup.applied_settings()
    devicesetup.apply(devicesetup.Settings(devices=original.devices, platform="cpu",
                                   devices_source=original.devices_source,
                                   max_bytes=256 * 2**20))  # fmt: skip
    try:
        budget = memory.budget()
        assert budget.host == 256 * 2**20
        prog = catalog.get("double")
        p = plan(prog, [(8, 1000)], n_devices=8)
        compiled = pmaprun.compile_plan(prog, p)
        held = memory.reserve(memory.Need(240 * 2**20, 240 * 2**20), "another session's run")
        seen, out = [], []
        worker = threading.Thread(target=lambda: out.append(pmaprun.run_plan(
            prog, p, compiled, on_wait=lambda pos, w, message: seen.append(message))))  # fmt: skip
        worker.start()
        wait = time.monotonic() + 5
        while not seen and time.monotonic() < wait:
            time.sleep(0.01)
        assert seen and not out, "the live run did not wait for its share"
        assert "Waiting for memory: this needs" in seen[0]
        assert "another session's run (252 MB" in seen[0] and "of 268 MB is free" in seen[0]
        held.release()
        worker.join(30)
        assert out and out[0].passed and actions_held() == []
        with pytest.raises(memory.BudgetError, match="the memory budget is 268 MB"):
            memory.reserve(memory.Need(300 * 2**20, 300 * 2**20), "a run")
    finally:
        devicesetup.apply(original)


# ---------------------------------------------------------------- from a compiled program
class _Stats:
    def __init__(self, arguments, outputs, temps, alias=0):
        self.argument_size_in_bytes, self.output_size_in_bytes = arguments, outputs
        self.temp_size_in_bytes, self.alias_size_in_bytes = temps, alias


class _Executable:
    def __init__(self, stats):
        self.stats = stats

    def memory_analysis(self):
        if isinstance(self.stats, Exception):
            raise self.stats
        return self.stats


def test_a_footprint_is_what_memory_analysis_says_and_none_without_one():
    fp = memory.footprint(_Executable(_Stats(100, 50, 30, 20)))
    assert fp == memory.Footprint(100, 50, 30, 20) and fp.held == 130
    assert memory.footprint(_Executable(NotImplementedError("no analysis"))) is None
    assert memory.footprint(_Executable(None)) is None


def test_compiled_need_counts_every_programs_buffers_and_the_largest_temporaries():
    """A pmap's figures are per device (times its devices); the programs run one after the
    other, so their arguments and outputs add up and only the largest scratch counts."""
    pmapped, single = _Executable(_Stats(100, 50, 30)), _Executable(_Stats(200, 10, 500))
    need = memory.compiled_need([(pmapped, 4), (single, 1)], host=7, overhead=11)
    device = 4 * 150 + 210 + 500
    assert need == memory.Need(7 + device + 11, 18, device)
    wide = memory.compiled_need([(_Executable(_Stats(100, 50, 300)), 4), (single, 1)], 0, 0)
    assert wide.device == 4 * 150 + 210 + 4 * 300  # now the pmap's scratch is the larger
    assert memory.compiled_need([(_Executable(None), 4)], 7) is None


def test_the_larger_need_takes_each_part_and_a_scaled_one_keeps_its_fixed_part():
    a, b = memory.Need(100, 60, 40), memory.Need(90, 80, 10)
    assert memory.larger(a, b) == memory.Need(100, 80, 40)
    assert memory.larger(a, None) is a
    assert memory.scaled(memory.Need(110, 30, 80), 2.5, 10) == memory.Need(260, 60, 200)
