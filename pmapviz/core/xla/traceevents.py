"""A trace's events, read: checked into plain types, and the HLO ops that ran on a device,
each with the call it belongs to.

Chrome trace events (``perfetto_trace.json.gz``) from CPU, GPU or TPU. :func:`trace_events`
checks every event it reads and keeps only those: a value of the wrong type is a TraceError
of one line that names it and where (:func:`trace_events`), never anything else.
:func:`device_events` turns the ops that ran on a device into OpEvents, each with its call (a
CPU op's ``run_id``, a GPU op's correlation to the host's ``Execute``, a TPU op's "XLA
Modules" event) and what the trace counted for it (TPU: bytes accessed, model FLOPs, HLO
category). Which event is which device's: :mod:`pmapviz.core.xla.tracelanes`.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz.core.xla import tracelanes
from pmapviz.core.xla.tracefiles import TraceError

# a TPU plane's line with one event per call: its name is the module's, args.run_id the call's
MODULES_THREAD = "XLA Modules"
_COUNT = re.compile(r"[0-9]{1,20}")  # bytes or FLOPs of one op: more digits is no real count


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
