"""A per-device timeline of one call, from a real profiler trace.

``capture`` runs a function a couple of times inside ``jax.profiler.trace(tmp,
create_perfetto_trace=True)``, reads ``perfetto_trace.json.gz`` (Chrome trace events) and keeps
the events that carry ``args.device_ordinal`` and ``args.hlo_op``: one lane per device, each
HLO op with its start and duration, collectives marked (their names match the HLO instruction
names that :mod:`pmapviz.hlo` reads). The last complete call is shown. The temporary folder is
always removed, and one capture runs at a time in a process (``TURNS``, a visible queue).
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz import turns

TURNS = turns.resource("profiler", "profiler capture")  # one trace at a time per process
LOCK_TIMEOUT_S = 60.0


class ProfilerBusy(RuntimeError):
    """Another capture holds the profiler; the message says to try again."""


@dataclass(frozen=True)
class Event:
    device: int  # args.device_ordinal
    op: str  # HLO instruction name, e.g. "psum.7"
    start_us: float  # from the call's first event
    dur_us: float
    collective: str | None  # its HLO kind when it is a collective


@dataclass(frozen=True)
class Timeline:
    lanes: dict[int, tuple[Event, ...]]  # device -> its ops in time order
    module: str | None  # the HLO module the call ran
    calls_seen: int
    capture_s: float  # wall time of the traced calls and the trace's writing

    def collective_times(self) -> dict[str, list[float]]:
        """HLO op name -> its duration (us) on each device, for the collectives."""
        out: dict[str, list[float]] = {}
        for events in self.lanes.values():
            for e in events:
                if e.collective:
                    out.setdefault(e.op, []).append(e.dur_us)
        return out


def device_events(trace: dict | list) -> list[dict]:
    """The trace's complete events ("X") that ran an HLO op on a device."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X" and "device_ordinal" in e.get("args", {})
            and "hlo_op" in e.get("args", {})]  # fmt: skip


Lanes = dict[int, tuple[Event, ...]]


def lanes_of(events: Sequence[dict], collectives: dict[str, str],
             module: str | None = None) -> tuple[Lanes, str | None, int]:  # fmt: skip
    """One lane per device for the last call (run_id) that reached every device seen; times
    relative to that call's first event. ``collectives``: HLO op name -> kind."""
    if module is not None:
        events = [e for e in events if e["args"].get("hlo_module") == module]
    devices = {int(e["args"]["device_ordinal"]) for e in events}
    runs: dict[str, list[dict]] = {}
    for e in events:
        runs.setdefault(str(e["args"].get("run_id", "")), []).append(e)
    complete = [r for r, evs in runs.items()
                if {int(e["args"]["device_ordinal"]) for e in evs} == devices]  # fmt: skip
    if not complete:
        return {}, module, len(runs)
    chosen = runs[max(complete, key=lambda r: min(float(e["ts"]) for e in runs[r]))]
    t0 = min(float(e["ts"]) for e in chosen)
    lanes: dict[int, list[Event]] = {d: [] for d in sorted(devices)}
    for e in sorted(chosen, key=lambda e: float(e["ts"])):
        op = e["args"]["hlo_op"]
        lanes[int(e["args"]["device_ordinal"])].append(Event(
            int(e["args"]["device_ordinal"]), op, float(e["ts"]) - t0, float(e.get("dur", 0.0)),
            collectives.get(op),
        ))  # fmt: skip
    name = module or (chosen[0]["args"].get("hlo_module") if chosen else None)
    return {d: tuple(v) for d, v in lanes.items()}, name, len(runs)


def read_trace(folder: str) -> dict:
    paths = glob.glob(os.path.join(folder, "**", "perfetto_trace.json.gz"), recursive=True)
    if not paths:
        raise RuntimeError("the profiler wrote no perfetto_trace.json.gz")
    with gzip.open(max(paths, key=os.path.getmtime), "rt", encoding="utf-8") as f:
        return json.load(f)


def capture(run: Callable[[], Any], collectives: dict[str, str], calls: int = 2,
            module: str | None = None, timeout_s: float = LOCK_TIMEOUT_S,
            on_wait=None) -> Timeline:  # fmt: skip
    """Trace ``calls`` calls of ``run`` (already compiled and warm; its result is waited for),
    in this process's profiler queue (``TURNS``: ``on_wait(position, waited_s)`` while
    waiting; ProfilerBusy after ``timeout_s``)."""
    import jax

    try:
        turn = TURNS.acquire(timeout_s, None, on_wait)
    except (turns.WaitTimeout, turns.Cancelled) as err:
        raise ProfilerBusy(str(err)) from err
    try:
        with tempfile.TemporaryDirectory(prefix="pmapviz-trace-") as folder:
            t = time.perf_counter()
            try:
                with jax.profiler.trace(folder, create_perfetto_trace=True):
                    for _ in range(calls):
                        jax.block_until_ready(run())
            except RuntimeError as err:  # e.g. a trace started elsewhere in this process
                raise ProfilerBusy(f"The profiler is busy: {err}") from err
            seconds = time.perf_counter() - t
            trace = read_trace(folder)
    finally:
        turn.release()
    lanes, name, seen = lanes_of(device_events(trace), collectives, module)
    return Timeline(lanes, name, seen, seconds)


@dataclass(frozen=True)
class CollectiveTime:
    op: str
    kind: str
    measured_us: float  # median over devices, in the call shown
    per_device_us: tuple[float, ...]
    model_bytes: float  # ring model: bytes each device sends
    model_us: float | None  # model_bytes at ``bandwidth_gbs``, if given


def collective_timeline(key: str, n: int, m: int, groups=None, perm=None,
                        bandwidth_gbs: float | None = None,
                        on_wait=None) -> tuple[Timeline, list]:  # fmt: skip
    """A collective of the playground: compiled (pmapviz.compiled), traced, and each collective's
    measured time beside the ring model."""
    import jax

    from pmapviz import collectives as col
    from pmapviz.compiled import analyse_collective
    from pmapviz.layout import pmap_sharding

    analysis = analyse_collective(key, n, m, groups, perm)
    t = analysis.target
    fn = jax.pmap(t.fn, axis_name=t.axis_name, devices=jax.local_devices()[:n])
    x = jax.device_put(col.make_input(n, m), pmap_sharding(2, 0, n))
    jax.block_until_ready(fn(x))  # compile outside the trace
    kinds = {r.hlo.name: r.hlo.kind for r in analysis.rows}
    timeline = capture(lambda: fn(x), kinds, on_wait=on_wait)
    measured = timeline.collective_times()
    rows = []
    for r in analysis.rows:
        per = tuple(measured.get(r.hlo.name, ()))
        model_us = r.model_sent / (bandwidth_gbs * 1e3) if bandwidth_gbs else None
        rows.append(CollectiveTime(r.hlo.name, r.hlo.kind,
                                   statistics.median(per) if per else float("nan"), per,
                                   r.model_sent, model_us))  # fmt: skip
    return timeline, rows


def time_rows(times: list[CollectiveTime]) -> list[dict]:
    """Measured collective times beside the ring model, as table rows."""
    return [{"HLO op": t.op, "collective": t.kind, "measured (us, median of devices)":
             round(t.measured_us, 1), "per device (us)": ", ".join(f"{x:.0f}" for x in
                                                                    t.per_device_us),
             "ring model: bytes sent": round(t.model_bytes),
             "ring model (us)": None if t.model_us is None else float(f"{t.model_us:.3g}")}
            for t in times]  # fmt: skip
