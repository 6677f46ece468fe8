"""A timeline captured here with the profiler, and the playground's collectives traced
beside the ring model.

:func:`capture` runs a function a couple of times inside ``jax.profiler.trace(tmp,
create_perfetto_trace=True)`` and reads the ``perfetto_trace.json.gz`` it wrote
(:mod:`pmapviz.core.xla.tracefiles`) into a Timeline (:mod:`pmapviz.core.xla.timeline`). The
temporary folder is always removed, and one capture runs at a time in a process (``TURNS``, a
visible queue). No trace is ever kept for the user, so none can be left half-written: where the
disk refuses the profiler's files (a full or read-only ``TMPDIR``), :class:`TraceNotWritten`
says so in one line, the folder is removed all the same, and the profiler is freed for the
next capture (:func:`release_profiler`).
:func:`collective_timeline` compiles a collective, holds its memory, traces it, and sets each
collective's measured time beside the ring model's.
"""

from __future__ import annotations

import errno
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import queues
from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions import collectivedefs
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.xla.timeline import Timeline, lanes_of
from pmapviz.core.xla.traceevents import device_events
from pmapviz.core.xla.tracefiles import read_trace
from pmapviz.features.collectives import collectiveruns as col
from pmapviz.features.collectives.collectiveanalysis import analyse_collective

TURNS = queues.resource("profiler", "profiler capture")  # one trace at a time per process
LOCK_TIMEOUT_S = 60.0


class ProfilerBusy(RuntimeError):
    """A capture's wait for its turn ended without one: another capture held the profiler, or
    other actions the memory it needs; the message says what it waited for."""


class TraceNotWritten(ProfilerBusy):
    """The profiler could not write its trace (a full disk, a temporary folder that cannot be
    written): one line saying where, why and what to do. Nothing is kept (the temporary
    folder is removed) and the profiler is free for the next capture. A ProfilerBusy, so a
    caller that shows one shows this too."""


# what a failed write of the profiler says, in its own words (XLA's RESOURCE_EXHAUSTED ...)
DISK_WORDS = tuple(
    os.strerror(e)
    for e in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EIO)
)


def capture(
    run: Callable[[], Any],
    collectives: dict[str, str],
    calls: int = 2,
    module: str | None = None,
    timeout_s: float = LOCK_TIMEOUT_S,
    on_wait=None,
) -> Timeline:
    """Trace ``calls`` calls of ``run`` (already compiled and warm; its result is waited for),
    in this process's profiler queue (``TURNS``: ``on_wait(position, waited_s)`` while
    waiting; ProfilerBusy after ``timeout_s``; TraceNotWritten where the disk refused it)."""
    try:
        turn = TURNS.acquire(timeout_s, None, on_wait)
    except (queues.WaitTimeout, queues.Cancelled) as err:
        raise ProfilerBusy(str(err)) from err
    try:
        trace, seconds = _traced(run, calls)
    finally:
        turn.release()
    lanes, name, seen = lanes_of(device_events(trace), collectives, module)
    return Timeline(lanes, name, seen, seconds)


def _traced(run: Callable[[], Any], calls: int) -> tuple[dict, float]:
    """The trace of ``calls`` calls, written by the profiler into a temporary folder, read,
    and the folder removed (also when writing failed: nothing half-written is kept)."""
    import jax

    try:
        with tempfile.TemporaryDirectory(prefix="pmapviz-trace-") as folder:
            t = time.perf_counter()
            try:
                with jax.profiler.trace(folder, create_perfetto_trace=True):
                    for _ in range(calls):
                        jax.block_until_ready(run())
            except (RuntimeError, OSError) as err:
                why = disk_reason(err)
                if why is None and isinstance(err, RuntimeError):  # a trace started elsewhere
                    raise ProfilerBusy(f"The profiler is busy: {err}") from err
                release_profiler()  # JAX keeps a session whose export failed: next would fail
                raise _not_written(why or str(err)) from err
            return read_trace(folder), time.perf_counter() - t
    except OSError as err:  # the temporary folder itself: cannot be made, or removed
        raise _not_written(disk_reason(err) or str(err)) from err


def _not_written(why: str) -> TraceNotWritten:
    where = tempfile.gettempdir()
    full = why in (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))
    fix = (
        "free some space there, or set TMPDIR to a folder with room"
        if full
        else ("set TMPDIR to a folder you can write to")
    )
    return TraceNotWritten(
        f"The trace could not be written in {where} ({why}): nothing was kept; {fix}, and "
        "capture again."
    )


def disk_reason(err: BaseException) -> str | None:
    """Why a write failed, in the system's words, when the disk refused it (full, quota,
    read-only, permission): from an OSError's errno or the profiler's message; else None."""
    if isinstance(err, OSError) and err.errno is not None:
        return os.strerror(err.errno) if err.strerror is None else err.strerror
    text = str(err)
    return next((words for words in DISK_WORDS if words in text), None)


def release_profiler() -> None:
    """Forget the profiler session whose export failed. JAX 0.10's ``stop_trace`` raises
    before it resets its state, so every later capture in the process would be told
    "Profile has already been started" (measured: a trace on a full disk, then space freed,
    the next trace refused). Private to JAX, checked: where absent, nothing to do."""
    try:
        from jax._src import profiler

        state = profiler._profile_state
    except (ImportError, AttributeError):
        return
    with state.lock:
        state.reset()


@dataclass(frozen=True)
class CollectiveTime:
    """One collective's measured time per device, beside the ring model's bytes and time."""

    op: str
    kind: str
    measured_us: float  # median over devices, in the call shown
    per_device_us: tuple[float, ...]
    model_bytes: float  # ring model: bytes each device sends
    model_us: float | None  # model_bytes at ``bandwidth_gbs``, if given


def collective_timeline(
    key: str,
    n: int,
    m: int,
    groups=None,
    perm=None,
    bandwidth_gbs: float | None = None,
    on_wait=None,
) -> tuple[Timeline, list]:
    """A collective of the playground: compiled (pmapviz.core.running.programanalysis), traced, and
    each collective's measured time beside the ring model.

    Compiled first, from the input's shape alone; what the call holds
    (``collectiveruns.run_need``, from its ``memory_analysis()``) is refused when it could never
    fit (BudgetError, naming the largest block that fits), else held in the server's memory
    budget from before the input exists until the trace is read. The memory comes first, then
    the profiler's turn (:func:`capture`): nothing holds the profiler while it waits for
    memory, so the two queues cannot wait on each other. ``on_wait`` shows either queue; a
    wait that ends without a turn raises ProfilerBusy."""
    import jax

    analysis = analyse_collective(key, n, m, groups, perm)
    t = analysis.target
    fn = jax.pmap(t.fn, axis_name=t.axis_name, devices=devicefacts.local_devices_for_work()[:n])
    executable = col.compiled_for(fn, n, m)  # compiled outside the trace, no input yet
    need = col.run_need(executable, n, m)
    col.refuse_unfit(collectivedefs.BY_KEY[key], n, m, need)
    kinds = {r.hlo.name: r.hlo.kind for r in analysis.rows}
    try:
        grant = memorypool.reserve(need, f"tracing a {key} on {n} devices", on_wait)
    except (queues.WaitTimeout, queues.Cancelled) as err:
        raise ProfilerBusy(str(err)) from err
    with grant:
        x = jax.device_put(col.make_input(n, m), pmap_sharding(2, 0, n))
        jax.block_until_ready(executable(x))  # its first run, outside the trace
        timeline = capture(lambda: executable(x), kinds, on_wait=on_wait)
    measured = timeline.collective_times()
    rows = []
    for r in analysis.rows:
        per = tuple(measured.get(r.hlo.name, ()))
        model_us = r.model_sent / (bandwidth_gbs * 1e3) if bandwidth_gbs else None
        rows.append(
            CollectiveTime(
                r.hlo.name,
                r.hlo.kind,
                statistics.median(per) if per else float("nan"),
                per,
                r.model_sent,
                model_us,
            )
        )
    return timeline, rows


def time_rows(times: list[CollectiveTime]) -> list[dict]:
    """Measured collective times beside the ring model, as table rows."""
    return [
        {
            "HLO op": t.op,
            "collective": t.kind,
            "measured (us, median of devices)": round(t.measured_us, 1),
            "per device (us)": ", ".join(f"{x:.0f}" for x in t.per_device_us),
            "ring model: bytes sent": round(t.model_bytes),
            "ring model (us)": None if t.model_us is None else float(f"{t.model_us:.3g}"),
        }
        for t in times
    ]
