"""Benchmarking: pmap versus jit(vmap), jit + NamedSharding, jit(shard_map) and numpy, with
compile, host-to-device transfer, steady-state compute and device-to-host measured separately,
and the device's own memory bandwidth (measured by XLA on the device, see
:func:`pmapviz.devicefacts.rates`) as the physical floor.

Rules the harness keeps (and tests check with a fake clock):
- every implementation is compiled ahead of time (lower + compile) once per device count and
  size, and that time is reported as compile, never mixed into compute;
- inputs are placed once (transfer), then reused by every timed run: no repeated transfers;
- before the first implementation at each size, the inputs are copied to a device once,
  untimed (:func:`pmapviz.devicefacts.warm_transfer`): on a GPU the first placement at a new
  size paid ~0.4 ms per MB more (the runtime growing its staging memory), which made
  whichever implementation came first (pmap) look 7.7x slower to transfer;
- one warm-up call is excluded; every timed run is kept (outliers too), with block_until_ready;
- one benchmark runs at a time per process (``TURNS``, a first-come-first-served queue that
  never waits forever: see :mod:`pmapviz.queues`), so sessions do not disturb each other;
- a sweep whose estimated time passes the operator's limit is refused before it starts, with
  the largest size that fits (see :mod:`pmapviz.timebudget`).
"""

from __future__ import annotations

import math
import platform
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pmapviz import (
    devicefacts,
    devicerates,
    deviceset,
    explorersettings,
    memory,
    pmaprun,
    queues,
    sandbox,
    settings,
    timebudget,
)
from pmapviz.catalog import Program, numpy_fn
from pmapviz.placement import pmap_sharding
from pmapviz.planning import Plan

IMPLS = ("pmap", "vmap", "jit_sharded", "shard_map", "numpy")
TURNS = queues.resource("benchmark")  # one benchmark at a time in this process
QUEUE_TIMEOUT_S = 120.0  # how long a benchmark waits for another session's to finish


class BenchError(ValueError):
    """Settings a benchmark cannot run with; the message says what to use instead."""


@dataclass(frozen=True)
class Workload:
    """One thing to benchmark (dot products, matmul, elementwise): its inputs, f and costs."""

    key: str
    label: str
    unit: str  # what `size` counts
    description: str

    def inputs(self, size: int, rng: np.random.Generator) -> list[np.ndarray]:
        """Random float32 inputs for ``size`` items, whole (not yet split over devices)."""
        if self.key == "dot":
            return [rng.random((size, 3), dtype=np.float32) for _ in range(2)]
        if self.key == "matmul":
            return [
                rng.random((size, MATMUL_K), dtype=np.float32),
                rng.random((MATMUL_K, MATMUL_K), dtype=np.float32),
            ]
        return [rng.random((size,), dtype=np.float32)]

    @property
    def split(self) -> tuple[bool, ...]:
        """Which inputs are split over devices (True) or given whole to each (False)."""
        return {"dot": (True, True), "matmul": (True, False)}.get(self.key, (True,))

    def block_fn(self) -> Callable:
        """f for a block of items (leading axis): what every implementation runs."""
        import jax
        import jax.numpy as jnp

        if self.key == "dot":
            return jax.vmap(jnp.dot)
        if self.key == "matmul":
            return lambda x, w: x @ w
        return lambda x: x * 2.0 + 1.0

    def numpy_fn(self) -> Callable:
        """The same f in plain numpy, on the host: the numpy implementation."""
        if self.key == "dot":
            return lambda x, y: np.einsum("ij,ij->i", x, y)
        if self.key == "matmul":
            return lambda x, w: x @ w
        return lambda x: x * np.float32(2.0) + np.float32(1.0)

    def bytes_moved(self, size: int) -> int:
        """Bytes read and written by one call: the memory traffic no implementation can avoid."""
        if self.key == "dot":
            return size * (2 * 3 * 4 + 4)
        if self.key == "matmul":
            return size * MATMUL_K * 4 * 2 + MATMUL_K * MATMUL_K * 4
        return size * 4 * 2

    def output_bytes(self, size: int) -> int:
        """Bytes of one call's output, copied back from the devices."""
        return size * (MATMUL_K * 4 if self.key == "matmul" else 4)

    def flops(self, size: int) -> int:
        """Floating-point operations of one call."""
        if self.key == "dot":
            return size * 5
        if self.key == "matmul":
            return 2 * size * MATMUL_K * MATMUL_K
        return size * 2

    def input_bytes(self, size: int) -> int:
        """Bytes of one call's inputs, placed on the devices."""
        if self.key == "dot":
            return size * 3 * 4 * 2
        if self.key == "matmul":
            return size * MATMUL_K * 4 + MATMUL_K * MATMUL_K * 4
        return size * 4


MATMUL_K = 256
WORKLOADS = {
    w.key: w
    for w in (
        Workload(
            "dot",
            "Dot products (the seed)",
            "pairs of 3-vectors",
            "x, y: (size, 3) -> one dot product per pair; memory-bound",
        ),
        Workload(
            "matmul",
            f"Matrix multiply (size, {MATMUL_K}) @ ({MATMUL_K}, {MATMUL_K})",
            "rows",
            "rows split over devices, the weights given whole to each; "
            "compute-bound, so the memory floor is far below it",
        ),
        Workload(
            "elementwise", "Elementwise x * 2 + 1", "elements", "the simplest memory-bound op"
        ),
    )
}


BESIDE = " · "  # between an implementation and the set beside it was measured on


@dataclass
class Measurement:
    """One implementation on k devices at one size: compile, transfer, runs, copy back."""

    impl: str
    devices: int
    size: int
    compile_s: float
    transfer_s: float
    run_s: list[float]
    d2h_s: float
    floor_s: float
    bytes_moved: int
    device_set: str = ""  # the device set it ran on (deviceset: "cpu", "gpu", "tpu")
    beside: bool = False  # measured on the emulated set beside the machine's own, for contrast

    @property
    def run_s_median(self) -> float:
        """The median of the timed runs, in seconds."""
        return statistics.median(self.run_s)

    @property
    def label(self) -> str:
        """Its name in charts and tables: the implementation, and for a measurement on the
        set beside (the emulated CPU devices beside an accelerator) which set: 'pmap · cpu'."""
        return f"{self.impl}{BESIDE}{self.device_set}" if self.beside else self.impl

    def to_json(self) -> dict:
        """Its fields as JSON, with the median run time added."""
        d = asdict(self)
        d["run_s_median"] = self.run_s_median
        return d


@dataclass
class Report:
    """A benchmark sweep: the machine, its memory bandwidth (the floor) and every measurement."""

    machine: dict
    bandwidth_gbs: float
    workload: str
    results: list[Measurement] = field(default_factory=list)
    cancelled: bool = False
    floor_method: str = ""  # how the bandwidth was measured, and on which device
    beside_floor_method: str = ""  # the same, on the set measured beside (add_beside)
    first_transfer_s: dict[int, float] = field(default_factory=dict)  # size -> untimed copy

    def to_json(self) -> dict:
        """The whole report as JSON, measurements included."""
        return {
            "machine": self.machine,
            "bandwidth_gbs": self.bandwidth_gbs,
            "floor_method": self.floor_method,
            "workload": self.workload,
            "beside_floor_method": self.beside_floor_method,
            "cancelled": self.cancelled,
            "first_transfer_s": {str(k): v for k, v in self.first_transfer_s.items()},
            "results": [m.to_json() for m in self.results],
        }


def machine_info() -> dict:
    """The machine a benchmark ran on: platform, devices, cores and versions, as a dict."""
    f = devicefacts.facts()
    return {
        "platform": f.platform,
        "device_kind": f.device_kind,
        "emulated": f.emulated,
        "device_count": f.local_count,
        "physical_cores": f.physical_cores,
        "logical_cpus": f.logical_cpus,
        "startup_s": f.startup_s,
        "jax_version": f.jax_version,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def bandwidth(budget: int | memory.Budget) -> devicerates.Rates:
    """The device's measured rates (bandwidth: the floor), measured on the first call with a
    probe sized by ``budget`` and remembered: sweeps do not allocate the probe again."""
    return memory.measured_rates(memory.Budget.of(budget))


def prepare_impl(impl: str, wl: Workload, k: int, host: list[np.ndarray]):
    """(compile thunk taking placed inputs, placement thunk) for one implementation."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    f = wl.block_fn()
    devs = devicefacts.local_devices_for_work()[:k]
    if impl == "numpy":
        return None, lambda: host
    if impl == "vmap":
        dev0 = devicefacts.local_devices_for_work()[0]
        return (
            lambda placed: jax.jit(f).lower(*placed).compile(),
            lambda: [jax.device_put(a, dev0) for a in host],
        )
    mesh = Mesh(np.array(devs), ("i",))
    specs = [PartitionSpec("i") if s else PartitionSpec() for s in wl.split]
    if impl == "pmap":
        shaped = [
            a.reshape((k, a.shape[0] // k) + a.shape[1:]) if s else a
            for a, s in zip(host, wl.split, strict=True)
        ]
        pm = jax.pmap(f, in_axes=tuple(0 if s else None for s in wl.split), devices=devs)
        return (
            lambda placed: pm.lower(*placed).compile(),
            lambda: [
                jax.device_put(a, NamedSharding(mesh, sp))
                for a, sp in zip(shaped, specs, strict=True)
            ],
        )
    place = lambda: [
        jax.device_put(a, NamedSharding(mesh, sp))  # noqa: E731
        for a, sp in zip(host, specs, strict=True)
    ]
    if impl == "jit_sharded":
        return (
            lambda placed: (
                jax.jit(f, out_shardings=NamedSharding(mesh, PartitionSpec("i")))
                .lower(*placed)
                .compile()
            ),
            place,
        )
    sm = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=tuple(specs), out_specs=PartitionSpec("i")))
    return (lambda placed: sm.lower(*placed).compile(), place)


def measure(
    impl: str,
    wl: Workload,
    k: int,
    size: int,
    host: list[np.ndarray],
    repeat: int,
    bandwidth_gbs: float,
    clock: Callable[[], float] = time.perf_counter,
    prepare=prepare_impl,
) -> Measurement:
    """One implementation at one device count and size. ``host`` is reused across calls; the
    caller has made the first copy at this size already (:func:`devicefacts.warm_transfer`)."""
    import jax

    compile_fn, place = prepare(impl, wl, k, host)
    t = clock()
    placed = place()
    jax.block_until_ready(placed)
    transfer_s = clock() - t if impl != "numpy" else 0.0
    if impl == "numpy":
        run, compile_s = wl.numpy_fn(), 0.0
    else:
        t = clock()
        run = compile_fn(placed)
        compile_s = clock() - t
    out = run(*placed)  # warm-up, excluded; its result is what device-to-host copies
    jax.block_until_ready(out)
    t = clock()
    np.asarray(out)
    d2h_s = clock() - t if impl != "numpy" else 0.0
    del out  # no result is held across timed calls, so each reuses the allocator's memory
    _, times = devicerates.timed_calls(lambda: run(*placed), repeat, clock, warm=False)
    moved = wl.bytes_moved(size)
    return Measurement(
        impl, k, size, compile_s, transfer_s, times, d2h_s, moved / (bandwidth_gbs * 1e9), moved
    )


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
    lcm = math.lcm(*ks) if ks else 1
    out = []
    for s in BASE_SIZES[workload]:
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
    budget = memory.Budget.of(budget)
    why = budget.problem(memory.sweep_bytes(wl, sizes, ks, impls, budget))
    if why:
        fit = memory.largest_fitting(
            lambda s: memory.sweep_bytes(wl, [s], ks, impls, budget), budget, lcm, max(sizes), lcm
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
    budget: int | memory.Budget | None = None,
) -> float:
    """Estimated seconds of the runs; BenchError (with the largest size that fits) above the
    limit. The rates are measured (once) with the probe the sweep's budget allows."""
    rates = None if budget is None else bandwidth(budget)
    try:
        return timebudget.check_sweep(wl, runs, repeat, time_limit, rates)
    except timebudget.TooLong as err:
        raise BenchError(str(err)) from err


def sweep(
    wl: Workload,
    sizes: Sequence[int],
    ks: Sequence[int],
    impls: Sequence[str],
    repeat: int = 5,
    budget: int | None = None,
    progress: Callable[[Measurement, int, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_wait: Callable[[int, float], None] | None = None,
    seed: int = 0,
    time_limit: float | None = None,
    queue_timeout: float = QUEUE_TIMEOUT_S,
) -> Report:
    """Run a sweep in its turn (see TURNS). Inputs are generated once per size.

    Refused (BenchError) when it would not fit the memory budget or the time limit. While
    another sweep runs, or other actions hold the memory it needs, ``on_wait(position,
    waited_s, message)`` is called every fraction of a second; a stop while waiting returns an
    empty, cancelled report; after ``queue_timeout`` seconds of waiting, queues.WaitTimeout is
    raised."""
    budget = memory.budget() if budget is None else memory.Budget.of(budget)
    runs = plan_sweep(wl, sizes, ks, impls, budget, repeat=repeat, time_limit=time_limit)
    memory.large_arrays_return_to_the_os()
    need = memory.sweep_bytes(wl, sizes, ks, impls, budget)
    try:
        turn = TURNS.acquire(queue_timeout, should_stop, on_wait)
        grant = _reserve(turn, need, "a timing sweep", on_wait, should_stop, queue_timeout)
    except queues.Cancelled:
        return Report({}, 0.0, wl.key, cancelled=True)
    with turn, grant:
        rates = bandwidth(budget)
        bw = rates.bandwidth_gbs
        report = Report(machine_info(), bw, wl.key, floor_method=rates.floor_words())
        # inputs are generated once, at the largest size; smaller sizes are views of them
        full = wl.inputs(max(sizes), np.random.default_rng(seed))
        for i, (impl, k, s) in enumerate(runs):
            if should_stop():
                report.cancelled = True
                break
            host = [a[:s] if split else a for a, split in zip(full, wl.split, strict=True)]
            if s not in report.first_transfer_s and impl != "numpy":
                report.first_transfer_s[s] = devicefacts.warm_transfer(host)
            m = measure(impl, wl, k, s, host, repeat, bw)
            m.device_set = deviceset.current()
            report.results.append(m)
            if progress:
                progress(m, i + 1, len(runs))
        return report


def _reserve(
    turn: queues.Turn, need: memory.Need, label: str, on_wait, should_stop, timeout: float
) -> queues.Grant:
    """The memory of a benchmark that holds its turn; the turn is given back if none comes."""
    try:
        return memory.reserve(need, label, on_wait, should_stop, timeout)
    except BaseException:
        turn.release()
        raise


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


def floor_caption(report: Report) -> str:
    """Where the floor comes from and what the untimed first copies were (the Timing lab)."""
    text = (
        f"The device's memory bandwidth: **{report.floor_method or report.bandwidth_gbs}**. "
        "The floor for a call is the bytes it must move divided by that bandwidth: no "
        "implementation on this device can beat it."
    )
    if report.beside_floor_method:
        text += (
            f" Beside them, marked `{BESIDE.strip()} cpu`: the emulated CPU devices, "
            f"whose floor is {report.beside_floor_method}."
        )
    if report.first_transfer_s:
        firsts = ", ".join(
            f"{t * 1e3:,.1f} ms at {s:,}" for s, t in sorted(report.first_transfer_s.items())
        )
        text += (
            " Transfers are timed after one untimed copy of the inputs at each size "
            f"({firsts}): on a GPU the first copy at a new size is slower, whoever makes "
            "it."
        )
    return text + (" (Sweep cancelled: partial results.)" if report.cancelled else "")


def speedups(results: Sequence[Measurement], baseline: str = "vmap") -> list[dict]:
    """Speed-up of each parallel run over ``baseline`` on one device of the same set at the
    same size, and parallel efficiency (speed-up / devices)."""
    base = {(m.beside, m.size): m.run_s_median for m in results if m.impl == baseline}
    rows = []
    for m in results:
        if m.impl in ("vmap", "numpy") or (m.beside, m.size) not in base:
            continue
        sp = base[(m.beside, m.size)] / m.run_s_median
        rows.append(
            {
                "impl": m.label,
                "devices": m.devices,
                "size": m.size,
                "speedup": sp,
                "efficiency": sp / m.devices,
            }
        )
    return rows


def add_beside(report: Report, beside: Report) -> Report:
    """``report`` with ``beside``'s measurements (the same sweep on the other device set)
    marked and added, for contrast in the same charts."""
    for m in beside.results:
        m.beside = True
    report.results.extend(beside.results)
    report.beside_floor_method = beside.floor_method
    report.cancelled = report.cancelled or beside.cancelled
    return report


def beside_counts(n: int, sizes: Sequence[int]) -> list[int]:
    """The device counts of a set of ``n`` that split every size evenly (1, 2, 4, ..., n)."""
    return [k for k in device_counts(n) if all(s % k == 0 for s in sizes)]


def rows_for_table(report: Report) -> list[dict]:
    """Flat rows (one per measurement) for CSV and tables; seconds as floats."""
    out = []
    for m in report.results:
        out.append(
            {
                "impl": m.label,
                "device_set": m.device_set,
                "devices": m.devices,
                "size": m.size,
                "compile_s": m.compile_s,
                "transfer_s": m.transfer_s,
                "run_s_median": m.run_s_median,
                "run_s_min": min(m.run_s),
                "run_s_max": max(m.run_s),
                "runs": len(m.run_s),
                "d2h_s": m.d2h_s,
                "floor_s": m.floor_s,
                "bytes_moved": m.bytes_moved,
            }
        )
    return out


def measure_plan(
    program: Program,
    plan: Plan,
    repeat: int = 7,
    bandwidth_gbs: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
    should_stop: Callable[[], bool] | None = None,
    on_wait: Callable[[int, float], None] | None = None,
    time_limit: float | None = None,
    queue_timeout: float = QUEUE_TIMEOUT_S,
) -> Report:
    """The explorer's settings as a workload: pmap on the plan's devices, jit(vmap(f)) on one
    device, and numpy where the function has a numpy version. (jit + NamedSharding and
    shard_map are compared on the built-in workloads, whose layout they can express.)

    Refused (BenchError) above the time limit; waits its turn like :func:`sweep`, but raises
    queues.Cancelled or queues.WaitTimeout when the wait ends without one."""
    try:
        timebudget.check_plan(
            plan, 3 * (repeat + 1), 2, time_limit, program, what="Timing these settings"
        )
    except timebudget.TooLong as err:
        raise BenchError(str(err)) from err
    compiled = pmaprun.compile_plan(program, plan)  # once: its scratch memory, then the runs
    need = memory.with_temporaries(memory.plan_timing_bytes(plan), pmaprun.temporaries(compiled))
    turn = TURNS.acquire(queue_timeout, should_stop, on_wait)
    if sandbox.applies(program):  # your own f: in a process stopped at the time limit
        with turn:
            bw = bandwidth_gbs or bandwidth(memory.budget()).bandwidth_gbs
            args = (explorersettings.program_ref(program), plan.key, repeat, bw)
            return sandbox.call(
                "timing",
                args,
                need,
                "timing your own f",
                sandbox.largest_axis(plan),
                on_wait,
                time_limit,
            )
    grant = _reserve(
        turn, need, "timing the explorer's settings", on_wait, should_stop, queue_timeout
    )
    with turn, grant:
        return _measure_plan(program, plan, compiled, repeat, bandwidth_gbs, clock)


def measure_compiled(
    program: Program, plan: Plan, compiled: pmaprun.Compiled, repeat: int, bandwidth_gbs: float
) -> Report:
    """:func:`measure_plan`'s measurement alone (no estimate, turn or memory: the caller's,
    e.g. the sandbox's worker), against a floor of ``bandwidth_gbs``."""
    return _measure_plan(program, plan, compiled, repeat, bandwidth_gbs, time.perf_counter)


def _measure_plan(
    program: Program,
    plan: Plan,
    compiled: pmaprun.Compiled,
    repeat: int,
    bandwidth_gbs: float | None,
    clock: Callable[[], float],
) -> Report:
    import jax

    memory.large_arrays_return_to_the_os()
    rates = None if bandwidth_gbs else bandwidth(memory.budget())
    bw = bandwidth_gbs or rates.bandwidth_gbs
    report = Report(
        machine_info(),
        bw,
        f"explorer:{program.key}",
        floor_method=rates.floor_words() if rates else f"given: {bw:.1f} GB/s",
    )
    host = pmaprun.make_values(plan, "random")
    report.first_transfer_s[int(host[0].size)] = devicefacts.warm_transfer(host)
    size = int(host[0].size)
    moved = sum(a.nbytes for a in host)
    n = plan.devices_used
    dev0 = devicefacts.local_devices_for_work()[0]

    def place_pmap():
        return [
            jax.device_put(a, pmap_sharding(a.ndim, ax, n))
            for a, ax in zip(host, plan.leaf_axes, strict=True)
        ]

    impls = [
        ("pmap", n, compiled.run, compiled.compile_s, place_pmap),
        (
            "vmap",
            1,
            compiled.reference,
            compiled.reference_compile_s,
            lambda: [jax.device_put(a, dev0) for a in host],
        ),
    ]
    f_np = numpy_fn(program.key)
    for impl, k, run, compile_s, place in impls:
        m = measure(
            impl,
            PLAN_WORKLOAD,
            k,
            size,
            host,
            repeat,
            bw,
            clock,
            prepare=lambda *_a, _r=run, _p=place: ((lambda _pl: _r), _p),
        )
        m.compile_s, m.bytes_moved, m.floor_s = compile_s, moved, moved / (bw * 1e9)
        report.results.append(m)
    if f_np is not None and plan.out_axes is not None:

        def block(a, ax, d):
            return a if ax is None else np.take(a, d, axis=ax)

        def run_np():
            for d in range(n):
                f_np(*[block(a, ax, d) for a, ax in zip(host, plan.leaf_axes, strict=True)])

        run_np()  # warm-up, excluded
        times = []
        for _ in range(repeat):
            t = clock()
            run_np()
            times.append(clock() - t)
        report.results.append(
            Measurement("numpy", 1, size, 0.0, 0.0, times, 0.0, moved / (bw * 1e9), moved)
        )
    return report


PLAN_WORKLOAD = Workload(
    "explorer",
    "The explorer's settings",
    "elements of the first input",
    "as set on the Shapes & sharding page",
)


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
        return s.parse_int_list(t, name, 1, max(choices), allowed=choices)

    def ks(t: str, name: str) -> list[int]:
        return s.parse_int_list(t, name, 1, n_devices, max_items=len(ks_all), allowed=ks_all)

    def impls(t: str, name: str) -> list[str]:
        parts = [p for p in re.split(r"[\s,]+", str(t).strip()) if p]
        for p in parts:
            s.parse_choice(p, name, IMPLS)
        if not parts:
            raise s.SettingError(f"{name} is empty: choose from {', '.join(IMPLS)}.")
        return list(dict.fromkeys(parts))

    return s.Schema(
        (
            s.choice_field("w", "Workload", tuple(WORKLOADS), "dot"),
            s.Field("r", "Timed runs", "7", lambda t, name: int(s.parse_choice(t, name, RUNS))),
            s.Field("sizes", "Sizes", ",".join(map(str, choices[:4])), sizes),
            s.Field("ks", "Device counts", ",".join(map(str, ks_all)), ks),
            s.Field("impls", "Implementations", ",".join(IMPLS), impls),
            *([s.flag_field("beside", "Also on the emulated CPU devices")] if beside else []),
        )
    )
