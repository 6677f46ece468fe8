"""A timing sweep before it runs: the implementations, device counts and sizes offered, the
Timing lab's settings (its URL schema), and the plan of runs, checked against the devices,
the memory budget and the time limit (:mod:`pmapviz.core.budgets.timebudget`); BenchError says the
fix."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pmapviz.core.base import settings, valueparse
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool, timebudget
from pmapviz.core.devices import devicefacts, devicerates
from pmapviz.features.timing.workloads import WORKLOADS, Workload

IMPLS = ("pmap", "vmap", "jit_sharded", "shard_map", "numpy")


class BenchError(ValueError):
    """Settings a benchmark cannot run with; the message says what to use instead."""


def bandwidth(budget: int | memorymodel.Budget) -> devicerates.Rates:
    """The device's measured rates (bandwidth: the floor), measured on the first call with a
    probe sized by ``budget`` and remembered: sweeps do not allocate the probe again."""
    return memorypool.measured_rates(memorymodel.Budget.of(budget))


def device_counts(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return [*ks, n]


BASE_SIZES = {  # the first, tiny size shows the per-call overhead
    "dot": (2**6, 2**14, 2**17, 2**20, 2**23),
    "matmul": (2**6, 2**10, 2**12, 2**14, 2**16),
    "elementwise": (2**6, 2**16, 2**19, 2**22, 2**25),
}


def size_choices(workload: str, ks: Sequence[int]) -> list[int]:
    """The sizes offered for a workload, each rounded down to a multiple of every device count
    in ``ks`` (so any choice splits evenly, e.g. on 3 or 6 devices too)."""
    return split_evenly(BASE_SIZES[workload], ks)


def split_evenly(sizes: Sequence[int], ks: Sequence[int]) -> list[int]:
    """``sizes``, each rounded down to a multiple of every device count in ``ks`` (at least
    one such multiple), in order, without repeats."""
    lcm = math.lcm(*ks) if ks else 1
    out = []
    for s in sizes:
        v = max(lcm, s - s % lcm)
        if v not in out:
            out.append(v)
    return out


def plan_sweep(
    wl: Workload,
    sizes: Sequence[int],
    ks: Sequence[int],
    impls: Sequence[str],
    budget: int,
    repeat: int | None = None,
    time_limit: float | None = None,
) -> list[tuple[str, int, int]]:
    """The (impl, devices, size) runs of a sweep, checked: sizes divisible by every device
    count, working set within the memory budget and, when ``repeat`` is given, estimated time
    within ``time_limit`` (default: the operator's, see devices.time_limit). Raises BenchError
    with the fix."""
    facts = devicefacts.facts()
    n = facts.local_count
    if not sizes or not ks or not impls:
        raise BenchError("Choose at least one size, one device count and one implementation.")
    bad = [k for k in ks if not 1 <= k <= n]
    if bad:
        more = (
            ""
            if facts.emulated
            else " To compare more devices than the machine has, "
            "start with --platform cpu --devices N (emulated CPU devices)."
        )
        raise BenchError(
            f"This process has {facts.devices_phrase()}: device counts must be 1 "
            f"to {n}; got {bad}.{more}"
        )
    unknown = [i for i in impls if i not in IMPLS]
    if unknown:
        raise BenchError(f"Unknown implementation(s) {unknown}; choose from {', '.join(IMPLS)}.")
    lcm = math.lcm(*ks)
    for s in sizes:
        if s < 1 or s % lcm:
            raise BenchError(
                f"Size {s:,} does not split evenly over {sorted(set(ks))} devices; use a "
                f"multiple of {lcm}, e.g. {max(lcm, s - s % lcm):,}."
            )
    budget = memorymodel.Budget.of(budget)
    why = budget.problem(memoryestimates.sweep_bytes(wl, sizes, ks, impls, budget))
    if why:
        fit = memorymodel.largest_fitting(
            lambda s: memoryestimates.sweep_bytes(wl, [s], ks, impls, budget),
            budget,
            lcm,
            max(sizes),
            lcm,
        )
        raise BenchError(f"Size {max(sizes):,} {why}. The largest size allowed is {fit:,}.")
    runs = []
    for s in sizes:
        for impl in impls:
            for k in ks if impl not in ("vmap", "numpy") else [1]:
                runs.append((impl, k, s))
    if repeat is not None:
        check_time(wl, runs, repeat, time_limit, budget)
    return runs


def check_time(
    wl: Workload,
    runs: Sequence[tuple[str, int, int]],
    repeat: int,
    time_limit: float | None = None,
    budget: int | memorymodel.Budget | None = None,
) -> float:
    """Estimated seconds of the runs; BenchError (with the largest size that fits) above the
    limit. The rates are measured (once) with the probe the sweep's budget allows."""
    rates = None if budget is None else bandwidth(budget)
    try:
        return timebudget.check_sweep(wl, runs, repeat, time_limit, rates)
    except timebudget.TooLong as err:
        raise BenchError(str(err)) from err


def sweep_grid(runs: Sequence[tuple[str, int, int]]) -> tuple[list, str]:
    """(grid rows, what they show) for the picture of a planned sweep: one row per
    implementation, one cell per device count it runs on, each cell listing its sizes."""
    order: dict[str, list[int]] = {}
    sizes = sorted({s for _, _, s in runs})
    for impl, k, _ in runs:
        if k not in order.setdefault(impl, []):
            order[impl].append(k)
    ks = sorted({k for _, k, _ in runs})
    rows = [
        (
            impl,
            [
                (
                    f"{k} device{'s' * (k != 1)}",
                    None,
                    f"{impl} on {k} device(s), at {len(sizes)} size(s)",
                )
                if k in counts
                else ("-", None, f"{impl} runs on one device only")
                for k in ks
            ],
        )
        for impl, counts in order.items()
    ]
    span = f"{sizes[0]:,} to {sizes[-1]:,}" if len(sizes) > 1 else f"{sizes[0]:,}"
    label = f"The sweep: {len(runs)} measurements, sizes {span}; " + "; ".join(
        f"{impl} on {', '.join(map(str, counts))} device(s)" for impl, counts in order.items()
    )
    return rows, label


def beside_counts(n: int, sizes: Sequence[int]) -> list[int]:
    """The device counts of a set of ``n`` that split every size evenly (1, 2, 4, ..., n)."""
    return [k for k in device_counts(n) if all(s % k == 0 for s in sizes)]


# ---------------------------------------------------------------- the Timing lab's URL state
RUNS = tuple(str(r) for r in range(3, 31))  # timed runs per measurement


def schema(n_devices: int, workload: str = "dot", beside: bool = False) -> settings.Schema:
    """The Timing lab's settings: w (workload), r (timed runs), sizes, ks (device counts),
    impls; lists as text; with ``beside`` (a server with two device sets), beside: also time
    the emulated CPU devices."""
    s = settings
    ks_all = device_counts(n_devices)
    choices = size_choices(workload if workload in WORKLOADS else "dot", ks_all)

    def sizes(t: str, name: str) -> list[int]:
        return valueparse.parse_int_list(t, name, 1, max(choices), allowed=choices)

    def ks(t: str, name: str) -> list[int]:
        return valueparse.parse_int_list(
            t, name, 1, n_devices, max_items=len(ks_all), allowed=ks_all
        )

    def impls(t: str, name: str) -> list[str]:
        parts = [p for p in re.split(r"[\s,]+", str(t).strip()) if p]
        for p in parts:
            valueparse.parse_choice(p, name, IMPLS)
        if not parts:
            raise valueparse.SettingError(f"{name} is empty: choose from {', '.join(IMPLS)}.")
        return list(dict.fromkeys(parts))

    return s.Schema(
        (
            s.choice_field("w", "Workload", tuple(WORKLOADS), "dot"),
            s.Field(
                "r", "Timed runs", "7", lambda t, name: int(valueparse.parse_choice(t, name, RUNS))
            ),
            s.Field("sizes", "Sizes", ",".join(map(str, choices[:4])), sizes),
            s.Field("ks", "Device counts", ",".join(map(str, ks_all)), ks),
            s.Field("impls", "Implementations", ",".join(IMPLS), impls),
            *([s.flag_field("beside", "Also on the emulated CPU devices")] if beside else []),
        )
    )
