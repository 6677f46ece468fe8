"""Benchmarking: pmap versus jit(vmap), jit + NamedSharding, jit(shard_map) and numpy, with
compile, host-to-device transfer, steady-state compute and device-to-host measured separately,
and the device's own memory bandwidth (measured by XLA on the device, see
:func:`pmapviz.core.devices.devicefacts.rates`) as the physical floor.

Rules the harness keeps (and tests check with a fake clock):
- every implementation is compiled ahead of time (lower + compile) once per device count and
  size, and that time is reported as compile, never mixed into compute;
- inputs are placed once (transfer), then reused by every timed run: no repeated transfers;
- before the first implementation at each size, the inputs are copied to a device once,
  untimed (:func:`pmapviz.core.devices.devicefacts.warm_transfer`): on a GPU the first placement at
  a new size paid ~0.4 ms per MB more (the runtime growing its staging memorymodel), which made
  whichever implementation came first (pmap) look 7.7x slower to transfer;
- one warm-up call is excluded; every timed run is kept (outliers too), with block_until_ready;
- one benchmark runs at a time per process (``TURNS``, a first-come-first-served queue that
  never waits forever: see :mod:`pmapviz.core.base.queues`), so sessions do not disturb each other;
- a sweep whose estimated time passes the operator's limit is refused before it starts, with
  the largest size that fits (see :mod:`pmapviz.core.budgets.timebudget`).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence

import numpy as np

from pmapviz.core.base import queues
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool, timebudget
from pmapviz.core.devices import compilecache, devicefacts, devicerates, deviceset, jaxstartup
from pmapviz.core.expressions.functions import Program, numpy_fn
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.features.timing.benchreports import Measurement, SweepReport
from pmapviz.features.timing.sweepsetup import BenchError, bandwidth, plan_sweep
from pmapviz.features.timing.workloads import PLAN_WORKLOAD, Workload

TURNS = queues.resource("benchmark")  # one benchmark at a time in this process
QUEUE_TIMEOUT_S = 120.0  # how long a benchmark waits for another session's to finish


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


def prepare_impl(impl: str, wl: Workload, k: int, host: list[np.ndarray]):
    """(compile thunk taking placed inputs, placement thunk) for one implementation."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    f = compilecache.renamed(wl.block_fn())  # compiled afresh: never read from JAX's cache
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
        with compilecache.kept_out():  # a one-off program (renamed: a compile, not a read)
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
) -> SweepReport:
    """Run a sweep in its turn (see TURNS). Inputs are generated once per size.

    Refused (BenchError) when it would not fit the memory budget or the time limit. While
    another sweep runs, or other actions hold the memory it needs, ``on_wait(position,
    waited_s, message)`` is called every fraction of a second; a stop while waiting returns an
    empty, cancelled report; after ``queue_timeout`` seconds of waiting, queues.WaitTimeout is
    raised."""
    budget = memorypool.budget() if budget is None else memorymodel.Budget.of(budget)
    runs = plan_sweep(wl, sizes, ks, impls, budget, repeat=repeat, time_limit=time_limit)
    jaxstartup.large_arrays_return_to_the_os()
    need = memoryestimates.sweep_bytes(wl, sizes, ks, impls, budget)
    try:
        turn = TURNS.acquire(queue_timeout, should_stop, on_wait)
        grant = _reserve(turn, need, "a timing sweep", on_wait, should_stop, queue_timeout)
    except queues.Cancelled:
        return SweepReport({}, 0.0, wl.key, cancelled=True)
    with turn, grant:
        rates = bandwidth(budget)
        bw = rates.bandwidth_gbs
        report = SweepReport(machine_info(), bw, wl.key, floor_method=rates.floor_words())
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
    turn: queues.Turn, need: memorymodel.Need, label: str, on_wait, should_stop, timeout: float
) -> queues.Grant:
    """The memory of a benchmark that holds its turn; the turn is given back if none comes."""
    try:
        return memorypool.reserve(need, label, on_wait, should_stop, timeout)
    except BaseException:
        turn.release()
        raise


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
) -> SweepReport:
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
    # once: its scratch memorymodel, then the runs
    compiled = pmapcompile.compile_plan(program, plan)
    need = memorymodel.with_temporaries(
        memoryestimates.plan_timing_bytes(plan), pmapcompile.temporaries(compiled)
    )
    turn = TURNS.acquire(queue_timeout, should_stop, on_wait)
    if sandbox.applies(program):  # your own f: in a process stopped at the time limit
        with turn:
            bw = bandwidth_gbs or bandwidth(memorypool.budget()).bandwidth_gbs
            args = (scenarios.program_ref(program), plan.key, repeat, bw)
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
    program: Program,
    plan: Plan,
    compiled: pmapcompile.Compiled,
    repeat: int,
    bandwidth_gbs: float,
) -> SweepReport:
    """:func:`measure_plan`'s measurement alone (no estimate, turn or memory: the caller's,
    e.g. the sandbox's worker), against a floor of ``bandwidth_gbs``."""
    return _measure_plan(program, plan, compiled, repeat, bandwidth_gbs, time.perf_counter)


def _measure_plan(
    program: Program,
    plan: Plan,
    compiled: pmapcompile.Compiled,
    repeat: int,
    bandwidth_gbs: float | None,
    clock: Callable[[], float],
) -> SweepReport:
    import jax

    jaxstartup.large_arrays_return_to_the_os()
    rates = None if bandwidth_gbs else bandwidth(memorypool.budget())
    bw = bandwidth_gbs or rates.bandwidth_gbs
    report = SweepReport(
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
