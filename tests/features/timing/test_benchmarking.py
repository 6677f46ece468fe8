"""The timing harness: logic with a fake clock, then small real sweeps."""

import threading
import time

import numpy as np
import pytest

from pmapviz.core.base import queues
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import benchreports, sweepsetup, workloads
from tests.conftest import TEST_DEVICES
from tests.fakes import actions_held, host_budget


class FakeClock:
    def __init__(self):
        self.now = 1000.0  # not 0: "now - start" and "now + start" must differ

    def __call__(self):
        return self.now

    def advance(self, dt):
        self.now += dt


def fake_prepare(clock, run_times, compile_time=10.0, place_time=5.0):
    calls = {"run": 0, "compile": 0, "place": 0}

    def run(*args):
        clock.advance(run_times[calls["run"]])
        calls["run"] += 1
        return np.zeros(3)

    def compile_fn(placed):
        calls["compile"] += 1
        clock.advance(compile_time)
        return run

    def place():
        calls["place"] += 1
        clock.advance(place_time)
        return [np.zeros(3)]

    return (lambda impl, wl, k, host: (compile_fn, place)), calls


def test_warmup_excluded_outliers_kept_phases_separate():
    clock = FakeClock()
    prepare, calls = fake_prepare(clock, [100.0, 1.0, 2.0, 50.0, 3.0])
    m = bench.measure(
        "pmap",
        workloads.WORKLOADS["dot"],
        2,
        1000,
        [],
        repeat=4,
        bandwidth_gbs=10.0,
        clock=clock,
        prepare=prepare,
    )
    assert m.compile_s == 10.0 and m.transfer_s == 5.0
    assert m.run_s == [1.0, 2.0, 50.0, 3.0]  # warm-up (100) out, outlier (50) in
    assert m.run_s_median == 2.5
    assert calls == {"run": 5, "compile": 1, "place": 1}  # compiled once, placed once
    assert m.bytes_moved == 1000 * 28 and m.floor_s == pytest.approx(28_000 / 10e9)


def test_json_has_the_documented_fields():
    clock = FakeClock()
    prepare, _ = fake_prepare(clock, [1.0] * 4)
    m = bench.measure("vmap", workloads.WORKLOADS["elementwise"], 1, 10, [], 3, 1.0, clock, prepare)
    rep = benchreports.SweepReport({"platform": "cpu"}, 1.0, "elementwise", [m])
    js = rep.to_json()
    assert set(js) >= {"machine", "bandwidth_gbs", "results"}
    assert set(js["results"][0]) >= {
        "impl",
        "devices",
        "size",
        "compile_s",
        "transfer_s",
        "run_s",
        "run_s_median",
    }
    assert js["results"][0]["run_s"] == [1.0, 1.0, 1.0]


class HostCopy:
    """A fake device result whose copy to the host takes 7 s of the fake clock."""

    def __init__(self, clock):
        self.clock = clock

    def __array__(self, dtype=None, copy=None):
        self.clock.advance(7.0)
        return np.zeros(3)


def test_device_to_host_is_timed_apart_from_the_runs():
    clock = FakeClock()
    prepare, _ = fake_prepare(clock, [])

    def run(*args):  # 4 s per call; its result takes 7 s to copy to the host
        clock.advance(4.0)
        return HostCopy(clock)

    def prepare_d2h(*a):
        return (lambda placed: run), prepare(*a)[1]  # compiles in no time, places in 5 s

    m = bench.measure(
        "shard_map",
        workloads.WORKLOADS["elementwise"],
        4,
        64,
        [],
        repeat=2,
        bandwidth_gbs=2.0,
        clock=clock,
        prepare=prepare_d2h,
    )
    assert m.d2h_s == 7.0 and m.run_s == [4.0, 4.0] and m.transfer_s == 5.0
    assert m.compile_s == 0.0 and m.devices == 4 and m.size == 64 and m.impl == "shard_map"
    assert m.bytes_moved == 64 * 8 and m.floor_s == 64 * 8 / 2e9


def test_numpy_has_no_compile_transfer_or_copy_back():
    clock = FakeClock()
    prepare, calls = fake_prepare(clock, [])
    m = bench.measure(
        "numpy",
        workloads.WORKLOADS["elementwise"],
        1,
        3,
        [],
        repeat=3,
        bandwidth_gbs=1.0,
        clock=clock,
        prepare=prepare,
    )
    assert calls == {"run": 0, "compile": 0, "place": 1}  # numpy's own function runs
    assert m.compile_s == 0.0 and m.transfer_s == 0.0 and m.d2h_s == 0.0
    assert m.run_s == [0.0, 0.0, 0.0]


def test_real_small_sweep_every_impl_and_floor():
    ks = [1, 2, TEST_DEVICES]
    wl = workloads.WORKLOADS["dot"]
    rep = bench.sweep(wl, [1024], ks, list(sweepsetup.IMPLS), repeat=3)
    planned = [
        (i, k, 1024) for i in sweepsetup.IMPLS for k in (ks if i not in ("vmap", "numpy") else [1])
    ]
    assert [(m.impl, m.devices, m.size) for m in rep.results] == planned  # one per run, in order
    assert len(rep.results) == 3 * len(ks) + 2 and not rep.cancelled and rep.workload == "dot"
    assert rep.bandwidth_gbs > 0.1 and rep.machine["device_count"] == TEST_DEVICES
    for m in rep.results:
        assert len(m.run_s) == 3 and all(t > 0 for t in m.run_s)
        assert m.bytes_moved == 1024 * (2 * 3 * 4 + 4)  # read x and y (float32 3-vectors), write
        assert m.floor_s == pytest.approx(m.bytes_moved / (rep.bandwidth_gbs * 1e9))
        if m.impl == "numpy":
            assert m.compile_s == 0 and m.transfer_s == 0 and m.d2h_s == 0
        else:  # compiled ahead of time and placed once, each timed apart from the runs
            assert m.compile_s > 0 and m.transfer_s > 0 and m.d2h_s > 0
    vmap = next(m for m in rep.results if m.impl == "vmap")
    rows = benchreports.speedups(rep.results)
    assert [(r["impl"], r["devices"]) for r in rows] == [
        (m.impl, m.devices) for m in rep.results if m.impl not in ("vmap", "numpy")
    ]
    for r, m in zip(rows, [m for m in rep.results if m.impl not in ("vmap", "numpy")], strict=True):
        assert r["speedup"] == pytest.approx(vmap.run_s_median / m.run_s_median)
        assert r["efficiency"] == pytest.approx(r["speedup"] / m.devices)


@pytest.mark.parametrize("workload", ["matmul", "elementwise"])
def test_every_workload_runs(workload):
    rep = bench.sweep(
        workloads.WORKLOADS[workload], [64], [1, 2], ["pmap", "shard_map", "numpy"], repeat=2
    )
    assert len(rep.results) == 5


def test_second_benchmark_waits_for_the_first():
    seen = []
    holder = bench.TURNS.acquire(timeout=1)
    try:
        t = threading.Thread(
            target=lambda: bench.sweep(
                workloads.WORKLOADS["elementwise"],
                [64],
                [1],
                ["numpy"],
                repeat=1,
                on_wait=lambda pos, waited, message: seen.append((pos, waited)),
            )
        )
        t.start()
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen and seen[0][0] == 1  # next in the queue
        assert t.is_alive()  # waiting for its turn
        assert bench.TURNS.held_for() >= 0 and bench.TURNS.waiting() == 1
    finally:
        holder.release()
    t.join(30)
    assert not t.is_alive() and bench.TURNS.held_for() is None


def test_a_waiting_benchmark_gives_up_or_stops_and_never_hangs():
    """The review's case: a long benchmark holds the turn. Waiters time out or stop."""
    holder = bench.TURNS.acquire(timeout=1)
    try:
        t = time.monotonic()
        with pytest.raises(queues.WaitTimeout, match="number 1 in the queue"):
            bench.sweep(
                workloads.WORKLOADS["elementwise"],
                [64],
                [1],
                ["numpy"],
                repeat=1,
                queue_timeout=0.5,
            )
        assert time.monotonic() - t < 1.5
        t = time.monotonic()
        rep = bench.sweep(
            workloads.WORKLOADS["elementwise"],
            [64],
            [1],
            ["numpy"],
            repeat=1,
            should_stop=lambda: time.monotonic() - t > 0.3,
        )
        assert rep.cancelled and rep.results == [] and time.monotonic() - t < 1.5
        plan = planning.plan(functions.get("add"), [(2, 8), (2, 8)], n_devices=2)
        with pytest.raises(queues.WaitTimeout):
            bench.measure_plan(functions.get("add"), plan, repeat=1, queue_timeout=0.3)
        assert bench.TURNS.waiting() == 0
    finally:
        holder.release()


def test_cancel_stops_between_measurements():
    count = {"n": 0}

    def stop():
        count["n"] += 1
        return count["n"] > 2

    rep = bench.sweep(
        workloads.WORKLOADS["elementwise"],
        [64],
        [1, 2],
        list(sweepsetup.IMPLS),
        repeat=1,
        should_stop=stop,
    )
    assert rep.cancelled and len(rep.results) == 2


def test_your_own_f_is_timed_like_a_catalog_function():
    from pmapviz.core.planning.scenarios import Scenario

    texts = {
        "fn": "expr",
        "args": "x, w",
        "body": "jnp.tanh(x @ w)",
        "s0": "4, 16, 8",
        "s1": "8, 2",
        "a0": "0",
        "a1": "None",
    }
    s = Scenario.from_texts(texts, 8)
    program, plan, errors = s.plan(8)
    assert not errors and plan.ok
    rep = bench.measure_plan(program, plan, repeat=1)
    assert [m.impl for m in rep.results] == ["pmap", "vmap"]  # no numpy version of your own f
    assert rep.workload == f"explorer:{program.key}"


@pytest.mark.parametrize("impl", sweepsetup.IMPLS)
def test_measure_prepares_the_implementation_it_was_asked_for(impl):
    clock, asked = FakeClock(), []
    prepare, _ = fake_prepare(clock, [1.0] * 3)

    def recording(*args):
        asked.append(args[:3])
        return prepare(*args)

    m = bench.measure(
        impl,
        workloads.WORKLOADS["elementwise"],
        2,
        8,
        [np.ones(8)],
        2,
        1.0,
        clock,
        prepare=recording,
    )
    assert asked == [(impl, workloads.WORKLOADS["elementwise"], 2)] and m.impl == impl


class Pending:
    """A fake device value that is ready ``wait`` seconds after dispatch: blocking on it (or
    copying it to the host) waits that long on the fake clock, once."""

    def __init__(self, clock, wait):
        self.clock, self.wait, self.ready = clock, wait, False

    def block_until_ready(self):
        if not self.ready:
            self.clock.advance(self.wait)
            self.ready = True
        return self

    def __array__(self, dtype=None, copy=None):
        self.block_until_ready()
        self.clock.advance(7.0)  # the copy itself
        return np.zeros(3)


def test_every_phase_waits_for_the_device_before_its_timer_stops():
    clock = FakeClock()

    def place():  # 5 s to dispatch the transfer, 3 s more until it has landed
        clock.advance(5.0)
        return [Pending(clock, 3.0)]

    def run(*placed):  # 1 s to dispatch, 2 s more to compute
        clock.advance(1.0)
        return Pending(clock, 2.0)

    m = bench.measure(
        "pmap",
        workloads.WORKLOADS["dot"],
        2,
        8,
        [],
        repeat=2,
        bandwidth_gbs=1.0,
        clock=clock,
        prepare=lambda *a: ((lambda placed: run), place),
    )
    assert m.transfer_s == 8.0  # the placement was waited for inside the transfer timer
    assert m.compile_s == 0.0
    assert m.d2h_s == 7.0  # the warm-up result was ready before the copy timer started
    assert m.run_s == [3.0, 3.0]  # each timed run waited for its result


def test_sweep_reports_progress_as_done_of_total_and_table_rows_per_measurement():
    seen = []
    rep = bench.sweep(
        workloads.WORKLOADS["elementwise"],
        [64],
        [1, 2],
        ["pmap", "vmap"],
        repeat=2,
        progress=lambda m, done, n: seen.append((m.impl, done, n)),
    )
    assert seen == [("pmap", 1, 3), ("pmap", 2, 3), ("vmap", 3, 3)]
    rows = benchreports.rows_for_table(rep)
    assert [(r["impl"], r["devices"], r["size"], r["runs"]) for r in rows] == [
        ("pmap", 1, 64, 2),
        ("pmap", 2, 64, 2),
        ("vmap", 1, 64, 2),
    ]
    for r, m in zip(rows, rep.results, strict=True):
        assert r["run_s_min"] == min(m.run_s) <= r["run_s_median"] <= r["run_s_max"] == max(m.run_s)
        assert (r["compile_s"], r["transfer_s"], r["d2h_s"]) == (m.compile_s, m.transfer_s, m.d2h_s)


def test_machine_info_names_the_platform_from_jax():
    import jax

    info = bench.machine_info()
    d = jax.local_devices()[0]
    assert (info["platform"], info["device_kind"]) == (d.platform, d.device_kind)
    assert (
        info["device_count"] == jax.local_device_count() and info["jax_version"] == jax.__version__
    )


def test_vmap_is_compiled_for_one_device_and_pmap_for_k():
    """prepare_impl: the vmap baseline places every input on device 0 only; pmap splits the
    leading axis over k devices."""
    import jax

    wl = workloads.WORKLOADS["elementwise"]
    host = wl.inputs(64, np.random.default_rng(0))
    compile_vmap, place_vmap = bench.prepare_impl("vmap", wl, 2, host)
    placed = place_vmap()
    assert all(a.sharding.device_set == {jax.local_devices()[0]} for a in placed)
    compile_pmap, place_pmap = bench.prepare_impl("pmap", wl, 2, host)
    placed = place_pmap()
    assert all(len(a.sharding.device_set) == 2 for a in placed)
    assert placed[0].shape == (2, 32) + host[0].shape[1:]
    assert compile_vmap(place_vmap()) is not None and compile_pmap(placed) is not None


def test_measure_plan_times_numpy_per_device_block():
    """A catalog function with a numpy version is timed in numpy too, one call per device
    block (functions without one: see test_your_own_f_is_timed_like_a_catalog_function)."""
    plan = planning.plan(functions.get("double"), [(2, 8)], n_devices=2)
    rep = bench.measure_plan(functions.get("double"), plan, repeat=2)
    assert [m.impl for m in rep.results] == ["pmap", "vmap", "numpy"]
    numpy_m = rep.results[2]
    assert len(numpy_m.run_s) == 2 and all(t > 0 for t in numpy_m.run_s)


def test_matmul_traffic_and_report_json_by_hand():
    k = workloads.MATMUL_K
    wl = workloads.WORKLOADS["matmul"]
    # read x (size, K) float32, write out (size, K) float32, read w (K, K) float32
    assert wl.bytes_moved(1000) == 1000 * k * 4 + 1000 * k * 4 + k * k * 4
    rep = benchreports.SweepReport(
        {"platform": "cpu"},
        12.5,
        "dot",
        cancelled=True,
        floor_method="copy",
        beside_floor_method="copy on cpu:0",
        first_transfer_s={64: 0.5},
    )
    want = {
        "machine": {"platform": "cpu"},
        "bandwidth_gbs": 12.5,
        "workload": "dot",
        "cancelled": True,
        "results": [],
        "floor_method": "copy",
        "beside_floor_method": "copy on cpu:0",
        "first_transfer_s": {"64": 0.5},
    }
    assert rep.to_json() == want
    plan = planning.plan(functions.get("double"), [(2, 8)], n_devices=2)
    numpy_m = bench.measure_plan(functions.get("double"), plan, repeat=1).results[2]
    assert (numpy_m.impl, numpy_m.devices) == ("numpy", 1)


# ---------------------------------------------------------------- the floor, on real devices
def test_the_floor_is_below_every_fastest_run_measured_here():
    """The floor comes from XLA on the device (devicerates.rates), so on this machine it is
    never above the fastest measured run by more than 10 %: the old floor (numpy's
    single-threaded copy) was 93x above an H200's time and above 16 CPU cores' too."""
    sizes = [2**6, 2**14, 2**17, 2**20]
    rep = bench.sweep(
        workloads.WORKLOADS["dot"], sizes, [1, TEST_DEVICES], list(sweepsetup.IMPLS), repeat=3
    )
    assert "with XLA" in rep.floor_method and "cpu:0" in rep.floor_method
    for s in sizes:
        at = [m for m in rep.results if m.size == s]
        fastest = min(min(m.run_s) for m in at)
        assert at[0].floor_s <= 1.1 * fastest, (s, at[0].floor_s, fastest)


def test_the_h200_fixture_shows_the_floor_that_was_not_one():
    """The report from the H200 (fixture) had a floor 90x above the GPU's own dot product:
    the floor came from the host; a report made now names the device it measured."""
    import json

    from tests.fakes import FIXTURES

    old = json.loads((FIXTURES / "bench_dot_gpu_h200.json").read_text())
    biggest = [m for m in old["results"] if m["size"] == 16777216 and m["impl"] == "vmap"][0]
    assert biggest["floor_s"] > 90 * biggest["run_s_median"]
    assert "floor_method" not in old
    rep = bench.sweep(workloads.WORKLOADS["dot"], [64], [1], ["vmap"], repeat=1)
    assert rep.to_json()["floor_method"] == rep.floor_method != ""


class FirstCopyAtASizeIsSlow:
    """A device_put that, like an H200's, pays extra for the first copy of a new byte size."""

    def __init__(self, real, penalty_s=0.3):
        self.real, self.penalty, self.seen = real, penalty_s, set()

    def __call__(self, x, *args, **kwargs):
        size = getattr(x, "nbytes", None)
        if size is not None and size not in self.seen:
            self.seen.add(size)
            time.sleep(self.penalty)
        return self.real(x, *args, **kwargs)


def test_whichever_implementation_goes_first_does_not_pay_for_the_first_copy(monkeypatch):
    """Point 7 of issue 25: on the H200, pmap's transfer was 7.7x vmap's because pmap went
    first at every size, and the first copy at a new size costs ~0.43 ms per MB more (the dot
    fixture, where vmap went first, shows pmap's copy at full speed). The harness now makes
    one untimed copy at each size first, and reports it apart."""
    import jax

    monkeypatch.setattr(jax, "device_put", FirstCopyAtASizeIsSlow(jax.device_put))
    rep = bench.sweep(workloads.WORKLOADS["dot"], [4096], [1, 2], ["pmap", "vmap"], repeat=1)
    transfers = {(m.impl, m.devices): m.transfer_s for m in rep.results}
    assert transfers[("pmap", 1)] < 0.2 and transfers[("vmap", 1)] < 0.2, transfers
    assert rep.first_transfer_s[4096] >= 0.3
    assert "untimed copy" in benchreports.floor_caption(rep)


def test_the_gpu_fixtures_measure_the_first_copy_cost_not_pmaps():
    """The measurement behind the explanation: in the sweep pmap went first and paid about
    0.43 ms per MB more than vmap at both 1M and 16.7M pairs; in the 10M example, where the
    one-device reference went first, pmap's own copy ran at the ordinary speed."""
    import json

    from tests.fakes import FIXTURES

    sweep = json.loads((FIXTURES / "bench_dot_gpu_h200.json").read_text())["results"]
    per_mb = []
    for size in (1048576, 16777216):
        t = {m["impl"]: m["transfer_s"] for m in sweep if m["size"] == size}
        assert sweep[[m["size"] for m in sweep].index(size)]["impl"] == "pmap"  # pmap first
        per_mb.append((t["pmap"] - t["vmap"]) * 1e3 / (size * 24 / 1e6))
    assert per_mb[0] == pytest.approx(0.43, abs=0.04) and per_mb[1] == pytest.approx(0.43, abs=0.04)
    dot = json.loads((FIXTURES / "dot_10M_gpu_h200.json").read_text())
    assert dot["pairs"] * 24 / 1e9 / dot["transfer_s"] > 9  # GB/s: pmap's copy, second
    vmap_gbs = next(m for m in sweep if m["size"] == 16777216 and m["impl"] == "vmap")
    assert 16777216 * 24 / 1e9 / vmap_gbs["transfer_s"] > 9


def test_bench_on_a_one_gpu_machine_compares_the_devices_it_has(fake_devices, capsys):
    """Point 5: the default device counts came from PMAPVIZ_DEVICES (8), so a 1-GPU machine
    got "Device counts must be 1 to 1; got [2, 4, 8]"; they come from the devices now."""
    import json

    from pmapviz.app import cli
    from pmapviz.core.devices import jaxstartup

    original = jaxstartup.applied_settings()
    try:
        with fake_devices("gpu", 1):
            rc = cli.main(
                [
                    "bench",
                    "--workload",
                    "elementwise",
                    "--size",
                    "64",
                    "--repeat",
                    "1",
                    "--impls",
                    "pmap,vmap",
                    "--json",
                ]
            )
            out = json.loads(capsys.readouterr().out)
            assert rc == 0 and {m["devices"] for m in out["results"]} == {1}
            assert out["machine"]["platform"] == "gpu" and not out["machine"]["emulated"]
            assert cli.main(["bench", "--size", "64", "--devices", "1,2", "--repeat", "1"]) == 2
            err = capsys.readouterr().err
            assert "1 NVIDIA H200 GPU: device counts must be 1 to 1" in err
            assert "--platform cpu" in err
    finally:
        jaxstartup.apply(original)


def test_on_the_h200_the_first_placement_at_a_size_pays_whoever_makes_it():
    """`python -m pmapviz doctor` on a real H200 (fixture doctor_h200.json): at sizes never
    copied before, whichever layout is placed first is 10x slower, pmap's or vmap's; after
    the harness's untimed first placement, pmap and vmap transfer alike (the old sweep had
    pmap 7.7x slower); the floor, measured on cuda:0, is below every size's fastest run."""
    import json

    from tests.fakes import FIXTURES

    report = json.loads((FIXTURES / "doctor_h200.json").read_text())
    order = report["transfer_order"]["ms"]
    assert order["pmap then vmap"]["pmap"] > 5 * order["pmap then vmap"]["vmap"]
    assert order["vmap then pmap"]["vmap"] > 5 * order["vmap then pmap"]["pmap"]
    for row in report["floor"]["rows"]:
        if row["size"] >= 2**20:
            assert 0.67 < row["pmap_transfer_ms"] / row["vmap_transfer_ms"] < 1.5, row
            assert row["first_transfer_ms"] > 2 * max(
                row["pmap_transfer_ms"], row["vmap_transfer_ms"]
            )
        assert row["floor_over_fastest"] <= 1.1
    assert "measured on cuda:0 with XLA" in report["floor"]["method"] and report["ok"]
    assert report["facts"]["platform"] == "gpu" and report["timeline"]["lanes"] == ["gpu:0"]


def test_timing_your_own_f_counts_what_it_makes_in_between_before_it_runs():
    """Issue 36: f's outer product (8 x 4000 x 4000 float32, 512 MB) with 128 KB of inputs, on
    a 256 MiB budget: refused from the compiled program's scratch memory before any input
    exists, where inputs and outputs alone would have let it run."""
    from pmapviz.core.expressions import expr

    prog = expr.program("x", "(jnp.einsum('a,b->ab', x, x) @ x).sum()")
    p = planning.plan(prog, [(8, 4000)], n_devices=8)
    with host_budget(256 * 2**20):
        assert (
            memorypool.budget().problem(memoryestimates.plan_timing_bytes(p)) is None
        )  # I/O alone fits
        with pytest.raises(memorymodel.BudgetError, match="the memory budget is 268 MB"):
            bench.measure_plan(prog, p, repeat=1, bandwidth_gbs=10.0)
        assert actions_held() == [] and bench.TURNS.held_for() is None  # given back
