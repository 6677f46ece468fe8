"""A sweep's plan before it runs: device counts, and sizes, devices, implementations and
memory checked, with the fix in the refusal; the picture of the plan."""

import pytest

from pmapviz.features.timing import sweepsetup, workloads


def test_device_counts():
    assert sweepsetup.device_counts(8) == [1, 2, 4, 8]
    assert sweepsetup.device_counts(6) == [1, 2, 4, 6]
    assert sweepsetup.device_counts(1) == [1]


@pytest.mark.parametrize(
    "sizes, ks, impls, words",
    [
        ([1000], [1, 3], ["pmap"], "multiple of 3"),
        ([], [1], ["pmap"], "at least one"),
        ([8], [1, 99], ["pmap"], "8 emulated CPU devices: device counts must be 1 to 8"),
        ([8], [1], ["cuda"], "Unknown"),
        ([2**40], [1], ["pmap"], "largest size allowed"),
    ],
)
def test_plan_sweep_refuses_before_allocating(sizes, ks, impls, words):
    with pytest.raises(sweepsetup.BenchError, match=words):
        sweepsetup.plan_sweep(workloads.WORKLOADS["dot"], sizes, ks, impls, budget=10**9)


def test_plan_sweep_runs_one_device_impls_once():
    runs = sweepsetup.plan_sweep(
        workloads.WORKLOADS["dot"], [64], [1, 2, 4], list(sweepsetup.IMPLS), 10**9
    )
    assert ("vmap", 1, 64) in runs and ("numpy", 1, 64) in runs
    assert len(runs) == 3 * 3 + 2


def test_the_sweep_picture_has_a_cell_per_device_count_in_every_row():
    runs = sweepsetup.plan_sweep(
        workloads.WORKLOADS["dot"], [64, 128], [1, 2, 4], ["pmap", "vmap"], 10**9
    )
    rows, label = sweepsetup.sweep_grid(runs)
    assert [r[0] for r in rows] == ["pmap", "vmap"]
    assert [[c[0] for c in cells] for _, cells in rows] == [
        ["1 device", "2 devices", "4 devices"],
        ["1 device", "-", "-"],
    ]
    assert label.startswith("The sweep: 8 measurements, sizes 64 to 128; pmap on 1, 2, 4")
