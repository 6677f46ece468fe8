"""What the Multi-process page shows of a local cluster (:mod:`pmapviz.features.cluster.cluster`):
before a launch, the plan (the process x device grid, the code each worker runs) and the page's
settings' picture; after it, the result's picture label and its check against numpy."""

from __future__ import annotations

from dataclasses import dataclass

from pmapviz.features.cluster import cluster


def worker_code(processes: int, local_devices: int) -> str:
    """What each worker runs, as a user would write it (the page shows it)."""
    return (
        "# in each of the processes i = 0.." + str(processes - 1) + "\n"
        f'jax.config.update("jax_num_cpu_devices", {local_devices})  # CPU devices per process\n'
        "jax.distributed.initialize(coordinator_address='127.0.0.1:PORT',\n"
        f"                           num_processes={processes}, process_id=i)\n"
        "x = local_values                    # one per LOCAL device\n"
        "psum, gathered, idx = jax.pmap(\n"
        "    lambda v: (lax.psum(v, 'i'), lax.all_gather(v, 'i'), lax.axis_index('i')),\n"
        "    axis_name='i')(x)                # the axis spans ALL processes' devices"
    )


def plan_grid(processes: int, local_devices: int) -> tuple[list, str]:
    """(grid rows, what they show) for the picture of a cluster before it starts: each
    process and its local devices (their ids come from JAX once the processes join)."""
    rows = [
        (
            f"process {p}",
            [
                (f"local device {j}", p * local_devices + j, f"process {p}'s local device {j}")
                for j in range(local_devices)
            ],
        )
        for p in range(processes)
    ]
    label = (
        f"The cluster to launch: {processes} processes x {local_devices} local devices = "
        f"{processes * local_devices} global devices"
    )
    return rows, label


def picture_label(res: cluster.ClusterResult) -> str:
    """What the process x device grid shows, for a screen reader (``aria-label``)."""
    procs = "; ".join(
        f"process {pp['process_index']}: global devices "
        f"{', '.join(map(str, pp['local_device_ids']))}"
        for pp in res.per_process
    )
    return (
        f"{res.processes} processes x {res.local_devices} local devices = "
        f"{res.global_devices} global devices: {procs}"
    )


@dataclass(frozen=True)
class ResultCheck:
    """Is the cluster's answer right? Every process must see the same psum and all_gather,
    equal to numpy's: device g holds g + 1, so psum is 1 + ... + G and all_gather 1..G."""

    identical: bool
    correct: bool
    expect_sum: float
    init_s: float  # the slowest process's join
    steady_s: float  # median steady call across processes

    @property
    def ok(self) -> bool:
        """Every process saw the same answer, and it is numpy's."""
        return self.identical and self.correct


def check_result(res: cluster.ClusterResult) -> ResultCheck:
    """The cluster's answer checked against numpy, with the join and steady-call times."""
    import statistics

    import numpy as np

    g = res.global_devices
    first = res.per_process[0]
    identical = all(
        pp["psum"] == first["psum"] and pp["all_gather"] == first["all_gather"]
        for pp in res.per_process
    )
    expect = float(np.arange(1, g + 1).sum())
    correct = first["psum"] == expect and np.allclose(first["all_gather"], np.arange(1, g + 1))
    return ResultCheck(
        identical,
        bool(correct),
        expect,
        max(pp["init_s"] for pp in res.per_process),
        statistics.median(pp["steady_s"] for pp in res.per_process),
    )


# ---------------------------------------------------------------- the page's URL state
