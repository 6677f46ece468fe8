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

A trace from elsewhere is untrusted: reading one returns a Timeline or raises TraceError with
one line saying what is wrong and where (:func:`trace_events`), never anything else; a folder
is searched within bounds (:func:`find_trace`), a gzip inflated only up to a limit
(:func:`inflate`), the memory parsing takes can be held while it parses (:func:`load`), and
a figure draws at most the busiest lanes and their longest ops (:func:`drawn`).
"""

from __future__ import annotations

import bisect
import contextlib
import fnmatch
import gzip
import io
import json
import math
import os
import re
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from pmapviz import collectiveops as col
from pmapviz import devicefacts, folders, memory, queues, tracelanes
from pmapviz.hlo import KINDS
from pmapviz.placement import pmap_sharding
from pmapviz.programanalysis import analyse_collective

TURNS = queues.resource("profiler", "profiler capture")  # one trace at a time per process
LOCK_TIMEOUT_S = 60.0
MAX_TRACE_BYTES = 256 * 2**20  # decompressed JSON a trace may have (parsing costs ~12x that)
INFLATE_CHUNK = 2**20  # bytes of JSON inflated at a time
# Bytes reading a trace takes at its peak, per byte of its JSON: the JSON itself and
# json.loads' objects (the events read are a few percent of them: trace_events). Measured with
# tracemalloc over load() (Python 3.11), the fixtures' events repeated 50 times to leave out
# the fixed 1 MiB inflate buffer: TPU v5e 7.0 (12.4 MB of JSON; 6.9 for the fixture itself,
# 248 KB), H200 6.0 (0.93 MB), CPU 6.0 (2.7 MB). A trace of nothing but device ops, which
# every one is kept (benchmarks/hostile_load.py: 849k events, 100 MiB), took 10.7: twelve
# covers it; JSON of nothing but empty objects takes 25 (tests/core/test_timeline.py
# measures both again).
PARSE_FACTOR = 12
# a TPU plane's line with one event per call: its name is the module's, args.run_id the call's
MODULES_THREAD = "XLA Modules"
_COUNT = re.compile(r"[0-9]{1,20}")  # bytes or FLOPs of one op: more digits is no real count
# how far find_trace looks under a folder: levels below it, entries seen, seconds
SEARCH_DEPTH = 6
SEARCH_ENTRIES = 20_000
SEARCH_S = 5.0
TRACE_NAMES = ("perfetto_trace.json.gz", "*.trace.json.gz")  # what the profiler writes
# what a timeline figure draws at most: the busiest lanes, each lane's longest ops, and ops
# in all (a browser draws some ten thousand bars in about a second)
MAX_DRAWN_LANES = 64
MAX_LANE_EVENTS = 2_000
MAX_DRAWN_EVENTS = 10_000


class ProfilerBusy(RuntimeError):
    """A capture's wait for its turn ended without one: another capture held the profiler, or
    other actions the memory it needs; the message says what it waited for."""


class TraceError(ValueError):
    """A trace file that cannot be read; the message says why and what to load instead."""


@dataclass(frozen=True)
class Event:
    """One HLO op on one device's lane: when it started, how long it took, and what it was."""

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
    """One traced call: every device's HLO ops in time order, and how it was captured."""

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
        return {
            "module": self.module,
            "calls_seen": self.calls_seen,
            "lanes": [
                {
                    "device": lane,
                    "events": [
                        {
                            "op": e.op,
                            "start_us": e.start_us,
                            "dur_us": e.dur_us,
                            "collective": e.collective,
                            "bytes_accessed": e.bytes_accessed,
                            "model_flops": e.model_flops,
                            "category": e.category,
                        }
                        for e in events
                    ],
                }
                for lane, events in self.lanes.items()
            ],
        }


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
_BY_PRIMITIVE = {
    "psum": "all-reduce",
    "pmean": "all-reduce",
    "pmax": "all-reduce",
    "pmin": "all-reduce",
    "all_gather": "all-gather",
    "ppermute": "collective-permute",
    "psum_scatter": "reduce-scatter",
    "reduce_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
}


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
    or not a plain non-negative integer). TraceError for a malformed trace
    (:func:`trace_events`)."""
    events = trace_events(trace)
    planes, threads = tracelanes.trace_planes(events)
    runs = _runs(events, planes)
    calls = _module_calls(events, planes, threads)
    out = []
    for e in events:
        where = tracelanes.event_lane(e, planes, threads)
        if where is None:
            continue
        args, ts = e["args"], e["ts"]
        module, run = args.get("hlo_module"), None
        if "run_id" not in args and (call := calls(e["pid"], ts)):
            module, run = module or call[0], call[1]  # run None: the host's events say
        out.append(
            OpEvent(
                where[0],
                where[1],
                ts,
                e["dur"],
                module,
                runs(e) if run is None else run,
                _count(args.get("bytes_accessed")),
                _count(args.get("model_flops")),
                _category(args.get("hlo_category")),
            )
        )
    return out


def trace_events(trace: Any) -> list[dict]:
    """The trace's events that are read, checked and cut down to what is read, in plain
    types: its ``ph: "M"`` (metadata) events, then its ``ph: "X"`` (complete) ones on a device
    plane or with an ``args`` key of :data:`_WANTED_ARGS` (the rest, the host's own work, are
    checked and dropped). Each has ``pid``, ``tid`` (a number or text, None when absent),
    ``ts``, ``dur`` (finite floats, 0.0 when absent), ``name`` (text) and ``args`` (text of
    the keys in :data:`_TEXT_ARGS`, the counts as written). What is not a JSON object is no
    event, and an ``args`` that is not an object holds nothing (both skipped); any other value
    of the wrong type is a TraceError that names it and where it is (``traceEvents[12].ts is
    'abc', not a number``). Never raises anything else."""
    if isinstance(trace, dict):
        if "traceEvents" not in trace:
            raise TraceError(
                "The JSON has no traceEvents: it is not a Chrome trace. Load the "
                "perfetto_trace.json.gz that jax.profiler.trace wrote."
            )
        trace = trace["traceEvents"]
    if not isinstance(trace, list):
        raise TraceError(f"The trace's traceEvents is {_shown(trace)}, not a list of events.")
    kept = [
        _checked(k, e) for k, e in enumerate(trace) if isinstance(e, dict) and e.get("ph") == "M"
    ]
    planes = tracelanes.trace_planes(kept)[0]
    for k, e in enumerate(trace):
        if isinstance(e, dict) and e.get("ph") == "X":
            event = _checked(k, e)
            if event["pid"] in planes or not _WANTED_ARGS.isdisjoint(event["args"]):
                kept.append(event)
    return kept


_TEXT_ARGS = ("name", "device_ordinal", "hlo_op", "hlo_module", "run_id", "correlation_id")
_WANTED_ARGS = frozenset({"device_ordinal", "hlo_op", "run_id", "correlation_id"})
_COUNT_ARGS = ("bytes_accessed", "model_flops", "hlo_category")  # read leniently: _count
_ORDINAL = re.compile(r"[0-9]{1,9}")
MAX_NAME = 1_000  # characters kept of a name: longer ones are no real op's, module's or plane's


def _checked(k: int, e: dict) -> dict:
    """Event ``k`` of the trace (a complete or metadata one) in the plain types
    :func:`trace_events` promises; TraceError naming the first value that is not."""
    at = f"traceEvents[{k}]"
    raw = e.get("args")
    raw = raw if isinstance(raw, dict) else {}  # not an object: no args to read
    ordinal = raw.get("device_ordinal")
    if ordinal is not None and not _is_ordinal(ordinal):
        raise TraceError(f"{at}.args.device_ordinal is {_shown(ordinal)}, not a device number.")
    args = {key: _text(raw[key], f"{at}.args.{key}") for key in _TEXT_ARGS if key in raw}
    args = {key: v for key, v in args.items() if v is not None}  # null: as if absent
    args.update((key, raw[key]) for key in _COUNT_ARGS if key in raw)
    return {
        "ph": e["ph"],
        "pid": _ident(e.get("pid"), f"{at}.pid"),
        "tid": _ident(e.get("tid"), f"{at}.tid"),
        "ts": _us(e.get("ts"), f"{at}.ts"),
        "dur": _us(e.get("dur"), f"{at}.dur"),
        "name": _text(e.get("name"), f"{at}.name") or "",
        "args": args,
    }


def _is_ordinal(value: Any) -> bool:
    """A CPU device's number as a trace writes it: ``"3"`` or 3, at most 9 digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return 0 <= value < 10**9
    return isinstance(value, str) and _ORDINAL.fullmatch(value) is not None


def _shown(value: Any) -> str:
    """A value of a trace in a few words, whatever it is (a 5,000-digit number, a list nested
    100,000 deep): never printed whole, never recursed into."""
    if isinstance(value, str):
        return repr(value[:40] + "..." if len(value) > 40 else value)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        digits = int(value.bit_length() * 0.30103) + 1
        return f"a {digits:,}-digit number" if digits > 20 else str(value)
    if isinstance(value, float):
        return repr(value)
    return {list: "a list", dict: "an object"}.get(type(value), f"a {type(value).__name__}")


def _ident(value: Any, at: str) -> Any:
    """A process or thread id: a number or text, as written (None when absent)."""
    if value is None or isinstance(value, str | int | float):
        return value
    raise TraceError(f"{at} is {_shown(value)}, not a number.")


def _text(value: Any, at: str) -> str | None:
    """A name the trace gives (an op, a module, a call): text (its first :data:`MAX_NAME`
    characters), or a number as text; None when absent (null)."""
    if value is None or isinstance(value, str):
        return value if value is None else value[:MAX_NAME]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**20:
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    raise TraceError(f"{at} is {_shown(value)}, not a name.")


def _us(value: Any, at: str) -> float:
    """A trace's time (us) as a float: a number, or a number written as text; 0.0 when
    absent. TraceError for anything else (text, a list, infinity, 1e400)."""
    if value is None:
        return 0.0
    x = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        x = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str) and len(value) <= 40:
        with contextlib.suppress(ValueError):
            x = float(value)
    if not math.isfinite(x):
        raise TraceError(f"{at} is {_shown(value)}, not a number.")
    return x


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


def _module_calls(
    events: Sequence[dict], planes: dict, threads: dict
) -> Callable[[Any, float], Call | None]:
    """Which call a TPU op ran in: (module, run_id) of the event on its device plane's "XLA
    Modules" line that contains it in time (one event per call, named after the module, with
    the call's ``args.run_id``; the op events carry neither), or None outside every call."""
    spans: dict[Any, list[tuple[float, float, str, str | None]]] = {}
    lines = [
        e
        for e in events
        if e["ph"] == "X"
        and e["pid"] in planes
        and threads.get((e["pid"], e["tid"])) == MODULES_THREAD
    ]
    for e in sorted(lines, key=lambda e: e["ts"]):
        spans.setdefault(e["pid"], []).append(
            (e["ts"], e["ts"] + e["dur"], e["name"], e["args"].get("run_id"))
        )
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
    executes = sorted(
        (e["ts"], e["dur"], e["args"]["run_id"])
        for e in events
        if e["ph"] == "X" and e["pid"] not in planes and "run_id" in e["args"]
    )
    launches = {
        e["args"]["correlation_id"]: e["ts"]
        for e in events
        if e["ph"] == "X" and e["pid"] not in planes and "correlation_id" in e["args"]
    }
    starts = [x[0] for x in executes]

    def run_of(e: dict) -> str:
        args = e["args"]
        if "run_id" in args:
            return args["run_id"]
        at = launches.get(args.get("correlation_id"), e["ts"])
        k = bisect.bisect_right(starts, at) - 1
        return executes[k][2] if k >= 0 else ""

    return run_of


def lanes_of(
    events: Sequence[OpEvent], collectives: dict[str, str] | None = None, module: str | None = None
) -> tuple[Lanes, str | None, int]:
    """One lane per device for the last call that reached every device seen; times relative
    to that call's first event. ``collectiveops``: HLO op name -> kind (from the compiled HLO);
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
    lanes: dict[str, list[Event]] = {d: [] for d in sorted(lanes_seen, key=tracelanes.lane_order)}
    for e in sorted(chosen, key=lambda e: e.ts):
        kind = known.get(e.op) or collective_kind(e.op)
        lanes[e.lane].append(
            Event(e.lane, e.op, e.ts - t0, e.dur, kind, e.bytes_accessed, e.model_flops, e.category)
        )
    name = module or next((e.module for e in chosen if e.module), None)
    return {d: tuple(v) for d, v in lanes.items()}, name, len(runs)


def find_trace(
    path: str, depth: int = SEARCH_DEPTH, entries: int = SEARCH_ENTRIES, seconds: float = SEARCH_S
) -> str:
    """The trace file at ``path``: the file itself, or the newest ``perfetto_trace.json.gz``
    (else ``*.trace.json.gz``) under a folder the profiler wrote, looked for at most
    ``depth`` levels down, ``entries`` entries and ``seconds`` seconds (``trace /`` answers
    quickly), never through a symlinked folder."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise TraceError(f"{path} is neither a file nor a folder.")
    found, looked, levels, stop = _search(path, depth, entries, seconds)
    for pattern in TRACE_NAMES:
        paths = [p for p in found if fnmatch.fnmatch(os.path.basename(p), pattern)]
        if paths:
            return max(paths, key=_mtime)
    names = " or ".join(TRACE_NAMES)
    if stop is None:
        raise TraceError(
            f"No {names} under {path} ({looked:,} entries in {levels} level(s)): "
            "capture with jax.profiler.trace(folder, create_perfetto_trace=True)"
            "."
        )
    raise TraceError(
        f"Looked at {looked:,} entries in {levels} level(s) under {path!r} "
        f"({stop}) and found no {names}; give the file or the folder "
        "jax.profiler.trace wrote."
    )


def _search(
    root: str, depth: int, entries: int, seconds: float
) -> tuple[list[str], int, int, str | None]:
    """Trace files under ``root`` (:func:`folders.entries`): (paths, entries looked at,
    levels opened, why it stopped early or None when it saw every entry ``depth`` levels
    down)."""
    walk = folders.Walk()
    found = [
        e.path
        for e in folders.entries(root, walk, depth, entries, seconds)
        if any(fnmatch.fnmatch(e.name, p) for p in TRACE_NAMES) and folders.is_file(e)
    ]
    return found, walk.looked, walk.levels, walk.stopped


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def inflate(data: bytes, name: str = "trace", limit: int = MAX_TRACE_BYTES) -> bytes | bytearray:
    """The JSON text of ``data``, gunzipped if it is gzip, at most ``limit`` bytes of it: a
    gzip is inflated a chunk at a time and refused as soon as it passes ``limit`` (one read
    of ``limit`` bytes would set aside all of them at once)."""
    if data[:2] != b"\x1f\x8b":
        text: bytes | bytearray = data[: limit + 1]
    else:
        text = bytearray()
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                while len(text) <= limit and (chunk := f.read(INFLATE_CHUNK)):
                    text += chunk
        except (OSError, EOFError, zlib.error) as err:
            raise TraceError(f"{name} is not a readable gzip file ({err}).") from err
    if len(text) > limit:
        raise TraceError(
            f"{name} holds more than {limit / 2**20:,.0f} MiB of JSON, the most "
            "read here; trace fewer calls (two are enough for a timeline)"
            "."
        )
    return text


def parse_json(text: bytes | bytearray, name: str = "trace") -> dict | list:
    """Chrome trace JSON from ``text``; TraceError for what is not JSON, nests too deep for
    Python's parser, or is not an object or a list."""
    try:
        trace = json.loads(text)
    except RecursionError as err:
        raise TraceError(
            f"{name} nests its JSON too deep to read (arrays or objects "
            "thousands of levels inside each other): not a trace."
        ) from err
    except (ValueError, UnicodeDecodeError) as err:
        raise TraceError(
            f"{name} is not trace JSON ({type(err).__name__}: {str(err)[:80]})."
        ) from err
    if not isinstance(trace, dict | list):
        raise TraceError(f"{name} is JSON but not a trace: expected traceEvents.")
    return trace


def parse_trace(data: bytes, name: str = "trace", limit: int = MAX_TRACE_BYTES) -> dict | list:
    """Chrome trace JSON from ``data``, gzipped or not, at most ``limit`` bytes of JSON (a
    gzip that inflates beyond it is refused, not inflated)."""
    return parse_json(inflate(data, name, limit), name)


def read_file(path: str, limit: int = MAX_TRACE_BYTES) -> tuple[str, bytes]:
    """(the file found at ``path``: :func:`find_trace`, its bytes): at most ``limit`` of
    them are read; a larger file is refused."""
    found = find_trace(path)
    with open(found, "rb") as f:
        data = f.read(min(os.fstat(f.fileno()).st_size, limit) + 1)  # a file: it has a size
    if len(data) > limit:
        raise TraceError(
            f"{found} is larger than {limit / 2**20:,.0f} MiB, the most read "
            "here. Trace fewer calls."
        )
    return found, data


def read_trace(path: str, limit: int = MAX_TRACE_BYTES) -> dict | list:
    """The trace at ``path`` (a file, or a folder the profiler wrote), parsed."""
    found, data = read_file(path, limit)
    return parse_trace(data, os.path.basename(found), limit)


def parse_bytes(json_bytes: int) -> int:
    """Bytes reading a trace of ``json_bytes`` of JSON takes at its peak (:data:`PARSE_FACTOR`),
    for a memory reservation."""
    return PARSE_FACTOR * json_bytes


def load(
    data: bytes,
    name: str,
    limit: int,
    module: str | None = None,
    hold: Callable[[int], AbstractContextManager] | None = None,
) -> Timeline:
    """The timeline of a trace file's bytes (gzipped or not): inflated up to ``limit`` bytes
    of JSON (refused beyond), then parsed and read inside ``hold(bytes)``, a reservation of
    what parsing takes (:func:`parse_bytes`), released once read. Raises TraceError, or what
    ``hold`` raises."""
    text = inflate(data, name, limit)
    with hold(parse_bytes(len(text))) if hold else contextlib.nullcontext():
        trace = parse_json(text, name)
        del text  # read: its bytes go back before the events are
        return from_trace(trace, module)


def from_trace(trace: dict | list, module: str | None = None) -> Timeline:
    """The last complete call of a parsed trace, one lane per device; TraceError when the trace
    is malformed (:func:`trace_events`) or has no HLO op on any device."""
    events = device_events(trace)
    if not events:
        raise TraceError(
            "The trace has no HLO ops on a device: it holds host events only. "
            "Trace a jitted or pmapped call, and wait for its result inside the "
            "trace (block_until_ready)."
        )
    lanes, name, seen = lanes_of(events, None, module)
    return Timeline(lanes, name, seen, 0.0)


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
    waiting; ProfilerBusy after ``timeout_s``)."""
    import jax

    try:
        turn = TURNS.acquire(timeout_s, None, on_wait)
    except (queues.WaitTimeout, queues.Cancelled) as err:
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
    """The JSON a trace may hold here: reading it takes :data:`PARSE_FACTOR` times its size,
    so that share of the host budget, at least 1 MiB and at most :data:`MAX_TRACE_BYTES`."""
    return max(2**20, min(MAX_TRACE_BYTES, host_budget // PARSE_FACTOR))


def drawn(
    tl: Timeline,
    lanes: int = MAX_DRAWN_LANES,
    per_lane: int = MAX_LANE_EVENTS,
    events: int = MAX_DRAWN_EVENTS,
) -> tuple[Timeline, str]:
    """What a figure of ``tl`` draws, and a line saying what it leaves out ('' when nothing):
    the ``lanes`` busiest lanes (most op time; in device order), and of each the longest
    ops, at most ``per_lane`` and ``events`` in all (in time order)."""
    busy = {lane: sum(e.dur_us for e in evs) for lane, evs in tl.lanes.items()}
    kept = set(sorted(busy, key=lambda lane: -busy[lane])[:lanes])
    each = max(1, min(per_lane, events // max(1, len(kept))))
    out = {
        lane: evs if len(evs) <= each else _longest(evs, each)
        for lane, evs in tl.lanes.items()
        if lane in kept
    }
    words = []
    if len(kept) < len(tl.lanes):
        words.append(f"{len(tl.lanes):,} lanes: showing the {len(kept):,} busiest (most op time)")
    if cut := sum(len(tl.lanes[lane]) > each for lane in kept):
        words.append(f"{cut:,} lane(s) with more than {each:,} ops: showing their {each:,} longest")
    return Timeline(out, tl.module, tl.calls_seen, tl.capture_s), "; ".join(words)


def _longest(events: tuple[Event, ...], k: int) -> tuple[Event, ...]:
    """The ``k`` longest of a lane's ops, in time order."""
    keep = sorted(range(len(events)), key=lambda i: -events[i].dur_us)[:k]
    return tuple(events[i] for i in sorted(keep))


def lane_rows(tl: Timeline) -> list[dict]:
    """One row per device lane: its ops, busy time, span and collectives (a table)."""
    rows = []
    for lane, events in tl.lanes.items():
        end = max((e.start_us + e.dur_us for e in events), default=0.0)
        start = min((e.start_us for e in events), default=0.0)
        rows.append(
            {
                "device": lane,
                "HLO ops": len(events),
                "busy (us)": round(sum(e.dur_us for e in events), 1),
                "span (us)": round(end - start, 1),
                "collectives": ", ".join(e.op for e in events if e.collective) or "none",
            }
        )
    return rows


def summary_lines(tl: Timeline) -> list[str]:
    """The timeline as text, one line per op, grouped by lane (the CLI); an op's bytes, its
    achieved GB/s and TFLOP/s where the trace counts them (TPU)."""
    lines = [
        f"module {tl.module or '(unknown)'}: {len(tl.lanes)} device lane(s), "
        f"{tl.calls_seen} call(s) in the trace, the last complete one shown"
    ]
    for lane, events in tl.lanes.items():
        busy = sum(e.dur_us for e in events)
        lines.append(f"{lane}: {len(events)} op(s), {busy:,.1f} us busy")
        lines.extend(
            f"  {e.start_us:10.1f} us  +{e.dur_us:9.1f} us  {e.op}"
            + (f"  [{e.collective}]" if e.collective else "")
            + _cost_words(e)
            for e in events
        )
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


def op_rates(
    tl: Timeline, bandwidth_gbs: float | None = None, flops_per_s: float | None = None
) -> list[dict]:
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
            row = {
                "device": lane,
                "op": e.op,
                "category": e.category,
                "bytes": e.bytes_accessed,
                "FLOPs": e.model_flops,
                "duration (us)": e.dur_us,
                "GB/s": gbs,
                "TFLOP/s": tflops,
            }
            if _positive(bandwidth_gbs):
                row["% of the floor's bandwidth"] = _share(gbs, bandwidth_gbs)
            if _positive(flops_per_s):
                row["% of the FLOP rate"] = _share(
                    None if tflops is None else tflops * 1e12, flops_per_s
                )
            rows.append(row)
    return rows


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
    """A collective of the playground: compiled (pmapviz.programanalysis), traced, and each
    collective's measured time beside the ring model.

    Compiled first, from the input's shape alone; what the call holds
    (``collectiveops.run_need``, from its ``memory_analysis()``) is refused when it could never
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
    col.refuse_unfit(col.BY_KEY[key], n, m, need)
    kinds = {r.hlo.name: r.hlo.kind for r in analysis.rows}
    try:
        grant = memory.reserve(need, f"tracing a {key} on {n} devices", on_wait)
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
