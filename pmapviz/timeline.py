"""A per-device timeline of one call, from a real profiler trace, captured here or anywhere.

``capture`` runs a function a couple of times inside ``jax.profiler.trace(tmp,
create_perfetto_trace=True)`` and reads ``perfetto_trace.json.gz`` (Chrome trace events);
:func:`read_trace` reads such a file (or the folder the profiler wrote) captured on any
machine: a user's GPU box or TPU pod. Which event belongs to which device is a platform fact
(:func:`pmapviz.devicefacts.event_lane`): ``args.device_ordinal`` on CPU, a ``/device:GPU:N``
or ``/device:TPU:N`` process on accelerators. One lane per device, each HLO op with its start
and duration, collectives marked (from the compiled HLO when it is known, else by the op's
name). The last call that reached every device is shown. On TPU each op also carries what
the trace counted for it (bytes accessed, model FLOPs, its HLO category), and
:func:`op_rates` turns those into a roofline of the call: achieved GB/s and TFLOP/s per op.
The temporary folder is always removed, and one capture runs at a time in a process
(``TURNS``, a visible queue).
"""

from __future__ import annotations

import bisect
import glob
import gzip
import io
import json
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz import collectives as col
from pmapviz import devicefacts, fairlock
from pmapviz.compiled import analyse_collective
from pmapviz.hlo import KINDS
from pmapviz.layout import pmap_sharding

TURNS = fairlock.resource("profiler", "profiler capture")  # one trace at a time per process
LOCK_TIMEOUT_S = 60.0
MAX_TRACE_BYTES = 256 * 2**20  # decompressed JSON a trace may have (parsing costs ~10x that)
# a TPU plane's line with one event per call: its name is the module's, args.run_id the call's
MODULES_THREAD = "XLA Modules"
_COUNT = re.compile(r"[0-9]{1,20}")  # bytes or FLOPs of one op: more digits is no real count


class ProfilerBusy(RuntimeError):
    """Another capture holds the profiler; the message says to try again."""


class TraceError(ValueError):
    """A trace file that cannot be read; the message says why and what to load instead."""


@dataclass(frozen=True)
class Event:
    device: str  # its lane: "cpu:3", "gpu:0", "tpu:1"
    op: str  # HLO instruction name, e.g. "all-reduce.7"
    start_us: float  # from the call's first event
    dur_us: float
    collective: str | None  # its HLO kind when it is a collective
    bytes_accessed: int | None = None  # what the trace counted (TPU); None where it does not
    model_flops: int | None = None
    category: str | None = None  # XLA's hlo_category, e.g. "loop fusion", "convolution fusion"


Lanes = dict[str, tuple[Event, ...]]


@dataclass(frozen=True)
class Timeline:
    lanes: Lanes  # device lane -> its ops in time order (lanes in device order)
    module: str | None  # the HLO module the call ran
    calls_seen: int
    capture_s: float  # wall time of the traced calls and the trace's writing (0: loaded)

    def collective_times(self) -> dict[str, list[float]]:
        """HLO op name -> its duration (us) on each device, for the collectives."""
        out: dict[str, list[float]] = {}
        for events in self.lanes.values():
            for e in events:
                if e.collective:
                    out.setdefault(e.op, []).append(e.dur_us)
        return out

    def to_json(self) -> dict:
        """``{"module", "calls_seen", "lanes": [{"device", "events": [{"op", "start_us",
        "dur_us", "collective", "bytes_accessed", "model_flops", "category"}]}]}``; the last
        three are null where the trace does not count them (CPU, GPU)."""
        return {"module": self.module, "calls_seen": self.calls_seen,
                "lanes": [{"device": lane, "events": [
                    {"op": e.op, "start_us": e.start_us, "dur_us": e.dur_us,
                     "collective": e.collective, "bytes_accessed": e.bytes_accessed,
                     "model_flops": e.model_flops, "category": e.category} for e in events]}
                    for lane, events in self.lanes.items()]}  # fmt: skip


@dataclass(frozen=True)
class OpEvent:
    """One HLO op that ran on a device, as read from a trace."""

    lane: str
    op: str
    ts: float
    dur: float
    module: str | None
    run: str  # the call it belongs to ("" when the trace does not say)
    bytes_accessed: int | None = None
    model_flops: int | None = None
    category: str | None = None


_SUFFIX = re.compile(r"(-start|-done)?(\.[0-9]+)?$")
# JAX names a collective's HLO instruction after its primitive (CPU traces: "psum.7")
_BY_PRIMITIVE = {"psum": "all-reduce", "pmean": "all-reduce", "pmax": "all-reduce",
                 "pmin": "all-reduce", "all_gather": "all-gather",
                 "ppermute": "collective-permute", "psum_scatter": "reduce-scatter",
                 "reduce_scatter": "reduce-scatter", "all_to_all": "all-to-all"}  # fmt: skip


def collective_kind(op: str) -> str | None:
    """The collective an HLO op is, by its name alone (for a trace loaded without its HLO):
    XLA's kinds ('all-reduce-start.3' -> 'all-reduce') and the JAX primitives instructions are
    named after ('psum.7' -> 'all-reduce')."""
    base = _SUFFIX.sub("", op)
    return base if base in KINDS else _BY_PRIMITIVE.get(base)


def device_events(trace: dict | list) -> list[OpEvent]:
    """The trace's complete events that ran an HLO op on a device, on CPU, GPU or TPU, each
    with the call it belongs to (see :func:`_runs`; on TPU, the "XLA Modules" event that
    contains it names the module and the call: :func:`_module_calls`) and what the trace
    counted for it (``bytes_accessed``, ``model_flops``, ``hlo_category``; None where absent
    or not a plain non-negative integer)."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    events = [e for e in events if isinstance(e, dict)]
    planes, threads = devicefacts.trace_planes(events)
    runs = _runs(events, planes)
    calls = _module_calls(events, planes, threads)
    out = []
    for e in events:
        where = devicefacts.event_lane(e, planes, threads)
        if where is None:
            continue
        args = e.get("args") or {}
        ts = _us(e.get("ts", 0.0))
        module, run = args.get("hlo_module"), None
        if "run_id" not in args and (call := calls(e.get("pid"), ts)):
            module, run = module or call[0], call[1]  # run None: the host's events say
        out.append(OpEvent(where[0], where[1], ts, _us(e.get("dur", 0.0)),
                           None if module is None else str(module),
                           runs(e) if run is None else run, _count(args.get("bytes_accessed")),
                           _count(args.get("model_flops")),
                           _category(args.get("hlo_category"))))  # fmt: skip
    return out


def _us(value: Any) -> float:
    """A trace's time (us) as a float; 0.0 for what is not a finite number (uploaded traces)."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def _count(value: Any) -> int | None:
    """A count the trace gives an op (TPU writes them as strings: ``"8388608"``) as an int;
    None for anything but a plain non-negative integer: a string of at most 20 ASCII digits
    or a JSON number ("abc", -5, a 5,000-digit string, null or a list never raise)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if 0 <= value < 10**20 else None
    if isinstance(value, str) and _COUNT.fullmatch(value):
        return int(value)
    return None


def _category(value: Any) -> str | None:
    """XLA's ``hlo_category`` of an op, when the trace gives one as text."""
    return value[:80] if isinstance(value, str) and value else None


Call = tuple[str, str | None]  # (module, run_id) of a call on a TPU's "XLA Modules" line


def _module_calls(events: Sequence[dict], planes: dict,
                  threads: dict) -> Callable[[Any, float], Call | None]:  # fmt: skip
    """Which call a TPU op ran in: (module, run_id) of the event on its device plane's "XLA
    Modules" line that contains it in time (one event per call, named after the module, with
    the call's ``args.run_id``; the op events carry neither), or None outside every call."""
    spans: dict[Any, list[tuple[float, float, str, str | None]]] = {}
    lines = [e for e in events if e.get("ph") == "X" and e.get("pid") in planes
             and threads.get((e.get("pid"), e.get("tid"))) == MODULES_THREAD]  # fmt: skip
    for e in sorted(lines, key=lambda e: _us(e.get("ts", 0.0))):
        ts, run = _us(e.get("ts", 0.0)), (e.get("args") or {}).get("run_id")
        spans.setdefault(e.get("pid"), []).append((ts, ts + _us(e.get("dur", 0.0)),
                                                   str(e.get("name", "")),
                                                   None if run is None else str(run)))  # fmt: skip
    starts = {pid: [s[0] for s in v] for pid, v in spans.items()}
    slack = 1e-3  # us: the trace rounds picoseconds to microseconds

    def call_of(pid: Any, ts: float) -> Call | None:
        k = bisect.bisect_right(starts.get(pid, []), ts + slack) - 1
        if k < 0 or ts > spans[pid][k][1] + slack:
            return None
        return spans[pid][k][2], spans[pid][k][3]

    return call_of


def _runs(events: Sequence[dict], planes: dict) -> Callable[[dict], str]:
    """Which call a device event belongs to. The CPU backend writes ``args.run_id`` on each
    op. A GPU op has none: its ``correlation_id`` names the host's launch event, which lies
    inside the host's ``Execute`` event that carries the run_id; without a correlation, the
    last ``Execute`` that started before the op is its call."""
    executes = sorted((_us(e.get("ts", 0.0)), _us(e.get("dur", 0.0)), str(e["args"]["run_id"]))
                      for e in events if e.get("ph") == "X" and e.get("pid") not in planes
                      and "run_id" in (e.get("args") or {}))  # fmt: skip
    launches = {str(e["args"]["correlation_id"]): _us(e.get("ts", 0.0)) for e in events
                if e.get("ph") == "X" and e.get("pid") not in planes
                and "correlation_id" in (e.get("args") or {})}  # fmt: skip
    starts = [x[0] for x in executes]

    def run_of(e: dict) -> str:
        args = e.get("args") or {}
        if "run_id" in args:
            return str(args["run_id"])
        at = launches.get(str(args.get("correlation_id")), _us(e.get("ts", 0.0)))
        k = bisect.bisect_right(starts, at) - 1
        return executes[k][2] if k >= 0 else ""

    return run_of


def lanes_of(events: Sequence[OpEvent], collectives: dict[str, str] | None = None,
             module: str | None = None) -> tuple[Lanes, str | None, int]:  # fmt: skip
    """One lane per device for the last call that reached every device seen; times relative
    to that call's first event. ``collectives``: HLO op name -> kind (from the compiled HLO);
    an op not in it is classified by its name (:func:`collective_kind`)."""
    known = collectives or {}
    if module is not None:
        events = [e for e in events if e.module == module]
    lanes_seen = {e.lane for e in events}
    runs: dict[str, list[OpEvent]] = {}
    for e in events:
        runs.setdefault(e.run, []).append(e)
    complete = [r for r, evs in runs.items() if {e.lane for e in evs} == lanes_seen]
    if not complete:
        return {}, module, len(runs)
    chosen = runs[max(complete, key=lambda r: min(e.ts for e in runs[r]))]
    t0 = min(e.ts for e in chosen)
    lanes: dict[str, list[Event]] = {d: [] for d in sorted(lanes_seen, key=devicefacts.lane_order)}
    for e in sorted(chosen, key=lambda e: e.ts):
        kind = known.get(e.op) or collective_kind(e.op)
        lanes[e.lane].append(Event(e.lane, e.op, e.ts - t0, e.dur, kind, e.bytes_accessed,
                                   e.model_flops, e.category))  # fmt: skip
    name = module or next((e.module for e in chosen if e.module), None)
    return {d: tuple(v) for d, v in lanes.items()}, name, len(runs)


def find_trace(path: str) -> str:
    """The trace file at ``path``: the file itself, or the newest ``perfetto_trace.json.gz``
    (else ``*.trace.json.gz``) under a folder the profiler wrote."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise TraceError(f"{path} is neither a file nor a folder.")
    for pattern in ("perfetto_trace.json.gz", "*.trace.json.gz"):
        paths = glob.glob(os.path.join(path, "**", pattern), recursive=True)
        if paths:
            return max(paths, key=os.path.getmtime)
    raise TraceError(f"No perfetto_trace.json.gz under {path}: capture with "
                     "jax.profiler.trace(folder, create_perfetto_trace=True).")  # fmt: skip


def parse_trace(data: bytes, name: str = "trace", limit: int = MAX_TRACE_BYTES) -> dict | list:
    """Chrome trace JSON from ``data``, gzipped or not, at most ``limit`` bytes of JSON (a
    gzip that inflates beyond it is refused, not inflated)."""
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                text = f.read(limit + 1)
        except (OSError, EOFError) as err:
            raise TraceError(f"{name} is not a readable gzip file ({err}).") from err
    else:
        text = data[: limit + 1]
    if len(text) > limit:
        raise TraceError(f"{name} holds more than {limit / 2**20:,.0f} MiB of JSON; trace fewer "
                         "calls (two are enough for a timeline).")  # fmt: skip
    try:
        trace = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise TraceError(f"{name} is not trace JSON ({type(err).__name__}: "
                         f"{str(err)[:80]}).") from err  # fmt: skip
    if not isinstance(trace, dict | list):
        raise TraceError(f"{name} is JSON but not a trace: expected traceEvents.")
    return trace


def read_trace(path: str, limit: int = MAX_TRACE_BYTES) -> dict | list:
    """The trace at ``path`` (a file, or a folder the profiler wrote), parsed."""
    found = find_trace(path)
    size = os.path.getsize(found)
    if size > limit:
        raise TraceError(f"{found} is {size / 2**20:,.0f} MiB; at most {limit / 2**20:,.0f} MiB "
                         "is read. Trace fewer calls.")  # fmt: skip
    with open(found, "rb") as f:
        return parse_trace(f.read(), os.path.basename(found), limit)


def from_trace(trace: dict | list, module: str | None = None) -> Timeline:
    """The last complete call of a parsed trace, one lane per device; TraceError when the trace
    has no HLO op on any device."""
    events = device_events(trace)
    if not events:
        raise TraceError("The trace has no HLO ops on a device: it holds host events only. "
                         "Trace a jitted or pmapped call, and wait for its result inside the "
                         "trace (block_until_ready).")  # fmt: skip
    lanes, name, seen = lanes_of(events, None, module)
    return Timeline(lanes, name, seen, 0.0)


def capture(run: Callable[[], Any], collectives: dict[str, str], calls: int = 2,
            module: str | None = None, timeout_s: float = LOCK_TIMEOUT_S,
            on_wait=None) -> Timeline:  # fmt: skip
    """Trace ``calls`` calls of ``run`` (already compiled and warm; its result is waited for),
    in this process's profiler queue (``TURNS``: ``on_wait(position, waited_s)`` while
    waiting; ProfilerBusy after ``timeout_s``)."""
    import jax

    try:
        turn = TURNS.acquire(timeout_s, None, on_wait)
    except (fairlock.WaitTimeout, fairlock.Cancelled) as err:
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


def trace_limit(host_budget: int) -> int:
    """The JSON a trace may hold here: parsing it costs about ten times its size in Python
    objects, so a tenth of the host budget, at most :data:`MAX_TRACE_BYTES`."""
    return max(2**20, min(MAX_TRACE_BYTES, host_budget // 10))


def lane_rows(tl: Timeline) -> list[dict]:
    """One row per device lane: its ops, busy time, span and collectives (a table)."""
    rows = []
    for lane, events in tl.lanes.items():
        end = max((e.start_us + e.dur_us for e in events), default=0.0)
        start = min((e.start_us for e in events), default=0.0)
        rows.append({"device": lane, "HLO ops": len(events),
                     "busy (us)": round(sum(e.dur_us for e in events), 1),
                     "span (us)": round(end - start, 1),
                     "collectives": ", ".join(e.op for e in events if e.collective)
                     or "none"})  # fmt: skip
    return rows


def summary_lines(tl: Timeline) -> list[str]:
    """The timeline as text, one line per op, grouped by lane (the CLI); an op's bytes, its
    achieved GB/s and TFLOP/s where the trace counts them (TPU)."""
    lines = [f"module {tl.module or '(unknown)'}: {len(tl.lanes)} device lane(s), "
             f"{tl.calls_seen} call(s) in the trace, the last complete one shown"]  # fmt: skip
    for lane, events in tl.lanes.items():
        busy = sum(e.dur_us for e in events)
        lines.append(f"{lane}: {len(events)} op(s), {busy:,.1f} us busy")
        lines.extend(f"  {e.start_us:10.1f} us  +{e.dur_us:9.1f} us  {e.op}"
                     + (f"  [{e.collective}]" if e.collective else "") + _cost_words(e)
                     for e in events)  # fmt: skip
    return lines


def _cost_words(e: Event) -> str:
    """'  8,388,608 B  40.2 GB/s' (and TFLOP/s when the op did FLOPs), or '' where unknown."""
    words = "" if e.bytes_accessed is None else f"  {e.bytes_accessed:,} B"
    gbs, tflops = _rates(e)
    words += "" if gbs is None else f"  {gbs:,.1f} GB/s"
    return words + ("" if not tflops else f"  {tflops:,.2f} TFLOP/s")


_ASYNC_HALF = re.compile(r"-(start|done)(\.[0-9]+)?$")


def _rates(e: Event) -> tuple[float | None, float | None]:
    """(GB/s, TFLOP/s) the op reached: its bytes accessed and model FLOPs over its duration.
    None where the trace gives no count, the duration is 0, or the op is half of an async op
    (``copy-start``, ``all-reduce-done``): that half's duration is the issue or the wait, while
    the transfer itself overlaps other ops."""
    if e.dur_us <= 0 or _ASYNC_HALF.search(e.op) or _ASYNC_HALF.search(e.category or ""):
        return None, None
    gbs = None if e.bytes_accessed is None else e.bytes_accessed / (e.dur_us * 1e3)
    return gbs, None if e.model_flops is None else e.model_flops / (e.dur_us * 1e6)


def _positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _share(x: float | None, of: float) -> float | None:
    return None if x is None else 100 * x / of


def op_rates(tl: Timeline, bandwidth_gbs: float | None = None,
             flops_per_s: float | None = None) -> list[dict]:  # fmt: skip
    """A roofline of the call shown, from the trace's own counts: one row per op that carries
    bytes or FLOPs (TPU traces do; CPU and GPU ones do not, so none there), lane by lane in
    time order, with its bytes accessed, model FLOPs, duration, achieved GB/s (bytes /
    duration) and TFLOP/s (FLOPs / duration; see :func:`_rates` for the ops that get none).
    Given the measured floor's bandwidth ``bandwidth_gbs`` (GB/s) or a FLOP rate
    ``flops_per_s``, also the share of it achieved (%): compare only with the floor of the
    machine the trace ran on."""
    rows = []
    for lane, events in tl.lanes.items():
        for e in events:
            if e.bytes_accessed is None and e.model_flops is None:
                continue
            gbs, tflops = _rates(e)
            row = {"device": lane, "op": e.op, "category": e.category, "bytes": e.bytes_accessed,
                   "FLOPs": e.model_flops, "duration (us)": e.dur_us, "GB/s": gbs,
                   "TFLOP/s": tflops}  # fmt: skip
            if _positive(bandwidth_gbs):
                row["% of the floor's bandwidth"] = _share(gbs, bandwidth_gbs)
            if _positive(flops_per_s):
                row["% of the FLOP rate"] = _share(None if tflops is None else tflops * 1e12,
                                                   flops_per_s)  # fmt: skip
            rows.append(row)
    return rows


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

    analysis = analyse_collective(key, n, m, groups, perm)
    t = analysis.target
    fn = jax.pmap(t.fn, axis_name=t.axis_name, devices=devicefacts.local_devices_for_work()[:n])
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
