"""Time budget: estimates from FLOPs and bytes, refusals that say what fits."""

import time

import pytest

from pmapviz.core.budgets import timebudget
from pmapviz.core.devices import devicerates
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import sweepsetup, workloads
from pmapviz.features.training import trainingmodel
from tests.conftest import TEST_DEVICES

RATES = timebudget.Rates(bandwidth_gbs=10.0, flops_per_s=50e9)  # fixed: deterministic tests
MATMUL = workloads.WORKLOADS["matmul"]


def test_machine_rates_are_measured_once_per_process():
    first = timebudget.machine_rates()
    assert first.bandwidth_gbs > 0.1 and first.flops_per_s > 1e8
    t = time.perf_counter()
    assert timebudget.machine_rates() is first  # cached
    assert time.perf_counter() - t < 0.01


def test_estimates_grow_with_flops_bytes_and_runs():
    runs = sweepsetup.plan_sweep(MATMUL, [1024], [1, 2], ["pmap", "numpy"], 2**40)
    small = timebudget.sweep_seconds(MATMUL, runs, 3, RATES)
    big = timebudget.sweep_seconds(MATMUL, [(i, k, 2**20) for i, k, _ in runs], 3, RATES)
    more = timebudget.sweep_seconds(MATMUL, runs, 30, RATES)
    assert small < more < big
    # one matmul call of 2**20 rows: 2 * 2**20 * 256 * 256 FLOPs at 50 GFLOP/s = 2.7 s
    assert RATES.call_s(MATMUL.flops(2**20), 0) == pytest.approx(2.75, rel=0.01)


def test_a_sweep_over_the_limit_names_the_largest_size_that_fits():
    ks = [1, 2, 8]
    runs = sweepsetup.plan_sweep(MATMUL, [2**20], ks, ["pmap", "vmap"], 2**40)
    with pytest.raises(timebudget.TooLong) as err:
        timebudget.check_sweep(MATMUL, runs, 7, limit_s=60, rates=RATES)
    msg = str(err.value)
    assert "the limit is 60 s per action" in msg and "GFLOP/s" in msg
    fit = int(
        msg.split("largest size that fits with these settings is ")[1].split()[0].replace(",", "")
    )
    assert fit % 8 == 0 and 8 <= fit < 2**20
    fits = [(i, k, fit) for i, k, _ in runs]
    assert timebudget.check_sweep(MATMUL, fits, 7, limit_s=60, rates=RATES) <= 60
    over = [(i, k, fit + 8) for i, k, _ in runs]
    with pytest.raises(timebudget.TooLong):
        timebudget.check_sweep(MATMUL, over, 7, limit_s=60, rates=RATES)


def test_even_the_smallest_size_can_be_too_long():
    runs = [("pmap", 1, 64)] * 400  # 400 compiles alone pass 60 s
    with pytest.raises(timebudget.TooLong, match="Even the smallest size"):
        timebudget.check_sweep(MATMUL, runs, 3, limit_s=60, rates=RATES)


def test_sweep_and_plan_sweep_refuse_before_running():
    before = bench.TURNS.held_for()
    t = time.perf_counter()
    with pytest.raises(sweepsetup.BenchError, match="largest size that fits"):
        bench.sweep(MATMUL, [2**16], [1, 2], ["pmap", "vmap"], repeat=30, time_limit=5)
    assert time.perf_counter() - t < 5 and bench.TURNS.held_for() is before is None
    with pytest.raises(sweepsetup.BenchError, match="limit is 5 s"):
        sweepsetup.plan_sweep(MATMUL, [2**16], [1, 2], ["pmap"], 2**40, repeat=30, time_limit=5)
    # without repeat, plan_sweep checks shapes and memory only (as before)
    assert sweepsetup.plan_sweep(MATMUL, [2**16], [1, 2], ["pmap"], 2**40)


def test_default_limit_comes_from_the_settings():
    from pmapviz.core.devices import jaxstartup

    original = jaxstartup.applied_settings()
    runs = sweepsetup.plan_sweep(MATMUL, [2**12], [1], ["pmap"], 2**40)
    try:
        jaxstartup.apply(
            jaxstartup.Settings(devices=original.devices, platform="cpu", max_seconds=1)
        )
        with pytest.raises(timebudget.TooLong, match="limit is 1 s"):
            timebudget.check_sweep(MATMUL, runs * 10, 7, rates=RATES)
    finally:
        jaxstartup.apply(original)
    assert timebudget.check_sweep(MATMUL, runs * 10, 7, rates=RATES) < 60


def test_training_over_the_limit_says_how_many_steps_fit():
    cfg = trainingmodel.Config("mlp", TEST_DEVICES, 65536, 2000)
    with pytest.raises(timebudget.TooLong) as err:
        timebudget.check_training(cfg.steps, trainingmodel.step_cost(cfg), limit_s=5, rates=RATES)
    fit = int(str(err.value).split("At most ")[1].split()[0].replace(",", ""))
    assert 0 < fit < 2000
    ok = trainingmodel.Config("mlp", TEST_DEVICES, 65536, fit)
    ok_cost = trainingmodel.step_cost(ok)
    assert timebudget.check_training(ok.steps, ok_cost, limit_s=5, rates=RATES) <= 5
    with pytest.raises(timebudget.TooLong):
        over = trainingmodel.Config("mlp", TEST_DEVICES, 65536, fit + 1)
        timebudget.check_training(over.steps, trainingmodel.step_cost(over), 5, rates=RATES)
    with pytest.raises(trainingmodel.TrainError, match="At most"):  # through validate, as pages do
        trainingmodel.validate(cfg, TEST_DEVICES, time_limit=5)
    # the defaults fit the default limit
    trainingmodel.validate(trainingmodel.Config(), TEST_DEVICES)


def _plan(key, shapes, in_axes):
    return planning.plan(functions.get(key), shapes, in_axes=in_axes, n_devices=TEST_DEVICES)


def test_live_run_estimate_uses_xla_flops_and_refuses_with_a_smaller_size():
    small = _plan("matmul", [(TEST_DEVICES, 4, 5), (5, 2)], (0, None))
    assert (
        timebudget.check_live(small, limit_s=60, program=functions.get("matmul"), rates=RATES) < 5
    )
    big = _plan("matmul", [(TEST_DEVICES, 2**16, 4096), (4096, 4096)], (0, None))
    flops, _, _ = timebudget.plan_cost(big, functions.get("matmul"))
    assert flops == pytest.approx(2 * TEST_DEVICES * 2**16 * 4096 * 4096, rel=0.01)
    bytes_only = timebudget.plan_seconds(big, 12, 2, RATES)
    with pytest.raises(timebudget.TooLong) as err:
        timebudget.check_live(big, limit_s=60, program=functions.get("matmul"), rates=RATES)
    assert err.value.estimate_s > bytes_only and err.value.limit_s == 60
    assert "This live run would take about" in str(err.value)
    assert "the largest axis from 65,536 to at most" in str(err.value)


def test_xla_cost_is_lowered_once_per_program_and_plan(monkeypatch):
    """The Live page estimates its run on every rerun: f is lowered the first time only; a
    new plan or a new f is lowered again, and a lowering that failed is not kept."""
    import jax

    from pmapviz.core.expressions import expr

    timebudget.xla_cost.cache_clear()
    prog = functions.get("matmul")
    small = _plan("matmul", [(TEST_DEVICES, 4, 5), (5, 2)], (0, None))
    first = timebudget.plan_cost(small, prog)
    assert first[0] == pytest.approx(2 * TEST_DEVICES * 4 * 5 * 2, rel=0.01)
    lowered = []
    real_jit = jax.jit
    monkeypatch.setattr(jax, "jit", lambda f: lowered.append(f) or real_jit(f))
    assert timebudget.plan_cost(small, prog) == first and lowered == []  # kept
    wider = _plan("matmul", [(TEST_DEVICES, 4, 5), (5, 3)], (0, None))
    assert timebudget.plan_cost(wider, prog)[0] == pytest.approx(first[0] * 3 / 2, rel=0.01)
    own = expr.program("x, w", "(x @ w) @ (w.T @ w)")
    assert timebudget.plan_cost(small, own)[0] > first[0]  # same shapes, another f
    assert len(lowered) == 2 and timebudget.xla_cost.cache_info().maxsize == 256
    other = _plan("matmul", [(TEST_DEVICES, 4, 7), (7, 2)], (0, None))
    monkeypatch.setattr(jax, "jit", lambda f: 1 / 0)  # a lowering that fails: bytes alone
    assert timebudget.plan_cost(other, prog)[0] == 0.0
    monkeypatch.setattr(jax, "jit", real_jit)  # and the failure was not kept
    assert timebudget.plan_cost(other, prog)[0] == pytest.approx(2 * TEST_DEVICES * 4 * 7 * 2)


def test_measure_plan_refuses_above_the_limit():
    big = _plan("add", [(TEST_DEVICES, 2**24), (TEST_DEVICES, 2**24)], (0, 0))
    with pytest.raises(sweepsetup.BenchError, match="Timing these settings would take"):
        bench.measure_plan(functions.get("add"), big, repeat=7, time_limit=1)


def test_estimate_is_the_right_order_of_magnitude():
    """Loose on purpose (a shared 2-core machine is noisy): within 20x of the real time."""
    runs = sweepsetup.plan_sweep(
        workloads.WORKLOADS["elementwise"], [2**16], [1, 2], ["pmap", "numpy"], 2**40
    )
    est = timebudget.check_sweep(workloads.WORKLOADS["elementwise"], runs, 3)
    t = time.perf_counter()
    bench.sweep(workloads.WORKLOADS["elementwise"], [2**16], [1, 2], ["pmap", "numpy"], repeat=3)
    real = time.perf_counter() - t
    assert est / 20 < real < est * 20, (est, real)


def test_a_sort_is_charged_at_its_own_measured_rate():
    """Issue 36: jnp.sort of an outer product ran 183.6 s against a 60 s limit, because XLA's
    cost analysis books a sort's n log n compares as FLOPs (0.1 ns each here) while one
    compare takes ~15-20 ns. The compares are read from the lowered program's text and
    charged at the sort rate."""
    import math

    from pmapviz.core.expressions import expr

    prog = expr.program("x", "jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()")
    p = planning.plan(prog, [(4, 300)], n_devices=4)
    _, _, compares = timebudget.plan_cost(p, prog)
    assert compares == pytest.approx(4 * 300**3 * math.log2(300))
    slow_sort = timebudget.Rates(bandwidth_gbs=10.0, flops_per_s=50e9, sort_s=15e-9)
    with pytest.raises(timebudget.TooLong, match="would take about"):
        timebudget.check_live(p, 60, prog, rates=slow_sort)
    assert timebudget.check_live(p, 60, prog, rates=RATES) < 60  # without the rate: let through


def test_the_sort_rate_is_measured_on_the_device():

    per_compare = devicerates.measure_sort(n=1 << 14, repeat=1)
    assert 1e-12 < per_compare < 1e-5
