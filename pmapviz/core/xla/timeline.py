"""A per-device timeline of one call, read from a profiler trace, and what it shows.

:func:`from_trace` keeps the last call that reached every device: one lane per device (a
platform fact: :mod:`pmapviz.core.xla.tracelanes`), each HLO op with its start and duration,
collectives marked (from the compiled HLO when it is known, else by the op's name:
:func:`collective_kind`). :func:`load` reads a trace file's bytes
(:mod:`pmapviz.core.xla.tracefiles`)
into one while it holds the memory parsing takes. On TPU each op also carries what the trace
counted for it (bytes accessed, model FLOPs, its HLO category), and :func:`op_rates` turns
those into a roofline of the call: achieved GB/s and TFLOP/s per op. A figure draws at most
the busiest lanes and their longest ops (:func:`drawn`); :func:`lane_rows` and
:func:`summary_lines` are its table and its text. Capturing one:
:mod:`pmapviz.features.compiled.tracecapture`.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from pmapviz.core.expressions import collectivedefs
from pmapviz.core.xla import tracelanes
from pmapviz.core.xla.hlo import KINDS
from pmapviz.core.xla.traceevents import OpEvent, device_events
from pmapviz.core.xla.tracefiles import TraceError, inflate, parse_bytes, parse_json

# what a timeline figure draws at most: the busiest lanes, each lane's longest ops, and ops
# in all (a browser draws some ten thousand bars in about a second)
MAX_DRAWN_LANES = 64
MAX_LANE_EVENTS = 2_000
MAX_DRAWN_EVENTS = 10_000


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


_SUFFIX = re.compile(r"(-start|-done)?(\.[0-9]+)?$")


def collective_kind(op: str) -> str | None:
    """The collective an HLO op is, by its name alone (for a trace loaded without its HLO):
    XLA's kinds ('all-reduce-start.3' -> 'all-reduce') and the JAX primitives instructions are
    named after ('psum.7' -> 'all-reduce')."""
    base = _SUFFIX.sub("", op)
    return base if base in KINDS else collectivedefs.HLO_BY_PRIMITIVE.get(base)


def lanes_of(
    events: Sequence[OpEvent], collectives: dict[str, str] | None = None, module: str | None = None
) -> tuple[Lanes, str | None, int]:
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
    lanes: dict[str, list[Event]] = {d: [] for d in sorted(lanes_seen, key=tracelanes.lane_order)}
    for e in sorted(chosen, key=lambda e: e.ts):
        kind = known.get(e.op) or collective_kind(e.op)
        lanes[e.lane].append(
            Event(e.lane, e.op, e.ts - t0, e.dur, kind, e.bytes_accessed, e.model_flops, e.category)
        )
    name = module or next((e.module for e in chosen if e.module), None)
    return {d: tuple(v) for d, v in lanes.items()}, name, len(runs)


def load(
    data: bytes,
    name: str,
    limit: int,
    module: str | None = None,
    hold: Callable[[int], AbstractContextManager] | None = None,
) -> Timeline:
    """The timeline of a trace file's bytes (gzipped or not): inflated up to ``limit`` bytes
    of JSON (refused beyond), then parsed and read inside ``hold(bytes)``, a reservation of
    what parsing takes (:func:`pmapviz.core.xla.tracefiles.parse_bytes`), released once read. Raises
    TraceError, or what ``hold`` raises."""
    text = inflate(data, name, limit)
    with hold(parse_bytes(len(text))) if hold else contextlib.nullcontext():
        trace = parse_json(text, name)
        del text  # read: its bytes go back before the events are
        return from_trace(trace, module)


def from_trace(trace: dict | list, module: str | None = None) -> Timeline:
    """The last complete call of a parsed trace, one lane per device; TraceError when the trace
    is malformed (:func:`pmapviz.core.xla.traceevents.trace_events`) or has no HLO op on any
    device."""
    events = device_events(trace)
    if not events:
        raise TraceError(
            "The trace has no HLO ops on a device: it holds host events only. "
            "Trace a jitted or pmapped call, and wait for its result inside the "
            "trace (block_until_ready)."
        )
    lanes, name, seen = lanes_of(events, None, module)
    return Timeline(lanes, name, seen, 0.0)


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
