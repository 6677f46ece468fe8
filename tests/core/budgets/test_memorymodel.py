"""The memory model's words: the largest size that fits, refusals that name it, and a budget
that weighs host and device memory apart."""

import pytest

from pmapviz.core.budgets import memoryestimates, memorymodel
from pmapviz.features.cluster import cluster
from pmapviz.features.live import dotproduct
from pmapviz.features.timing import sweepsetup, workloads
from pmapviz.features.training import trainingmodel


def _need(total: int) -> memorymodel.Need:
    return memorymodel.Need(total, total, 0)


def test_largest_fitting_is_exact():
    need = lambda s: _need(10 * s + 7)  # noqa: E731
    assert memorymodel.largest_fitting(need, 1007, 1, 10**6, 4) == 100
    assert memorymodel.largest_fitting(need, 5, 1, 10**6) == 0
    assert memorymodel.largest_fitting(lambda s: _need(s * 2**40), 2**62, 1, 2**40) == 2**22


def test_refusals_name_what_fits():
    with pytest.raises(memorymodel.BudgetError, match="largest"):
        memorymodel.refuse_over(_need(10), 5, "This", "The largest that fits is 5.")
    memorymodel.refuse_over(_need(5), 5, "This", "")
    n = 8
    fit = dotproduct.max_pairs(2 * 10**8, n)
    assert fit % n == 0 and memoryestimates.dot_bytes(fit, n).total <= 2 * 10**8
    with pytest.raises(trainingmodel.TrainError, match="largest global batch"):
        trainingmodel.check_budget(trainingmodel.Config("mlp", 8, 65536), 60 * 2**20)
    with pytest.raises(sweepsetup.BenchError, match="largest size allowed is 17,"):
        sweepsetup.plan_sweep(workloads.WORKLOADS["dot"], [10**8], [1, 2], ["pmap"], 10**9)
    with pytest.raises(cluster.ClusterError, match="enough for 1"):
        cluster.check_budget(3, 300 * 2**20, 2)


def test_a_budget_with_device_memory_checks_each_memory_and_names_it():
    """On a GPU or TPU the devices have their own memory: device arrays are weighed against
    the device budget, host work against the host's, and the message says which ran out."""
    need = memorymodel.Need(total=10 * 2**30, host=1 * 2**30, device=9 * 2**30)
    shared = memorymodel.Budget(4 * 2**30)
    assert not shared.fits(need) and "memory budget is 4.29 GB" in shared.problem(need)
    gpu = memorymodel.Budget(host=4 * 2**30, device=100 * 2**30)
    assert gpu.fits(need) and gpu.problem(need) is None
    small = memorymodel.Budget(host=4 * 2**30, device=8 * 2**30)
    assert "9.66 GB of device memory" in small.problem(need)
    assert "device memory budget is 8.59 GB" in small.problem(need)
    host_short = memorymodel.Budget(host=2**29, device=100 * 2**30)
    assert "of host memory" in host_short.problem(need)
    assert gpu.words(need) == "9.66 GB on the devices and 1.07 GB on the host"
    assert shared.share_of(need) == pytest.approx(0.4)
    # the dot example is held by whichever memory runs out first, each in its own budget
    step = memoryestimates.dot_shared_step(8)
    for host, device, which in ((28 * 10**9, 7 * 10**9, "device"), (7 * 10**9, 28 * 10**9, "host")):
        fit = dotproduct.max_pairs(memorymodel.Budget(host=host, device=device), 8)
        limit = {"host": host, "device": device}[which]
        assert getattr(memoryestimates.dot_bytes(fit, 8), which) <= limit
        assert getattr(memoryestimates.dot_bytes(fit + step, 8), which) > limit


def test_the_larger_need_takes_each_part_and_a_scaled_one_keeps_its_fixed_part():
    a, b = memorymodel.Need(100, 60, 40), memorymodel.Need(90, 80, 10)
    assert memorymodel.larger(a, b) == memorymodel.Need(100, 80, 40)
    assert memorymodel.larger(a, None) is a
    assert memorymodel.scaled(memorymodel.Need(110, 30, 80), 2.5, 10) == memorymodel.Need(
        260, 60, 200
    )
