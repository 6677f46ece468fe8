"""python -m pmapviz trace: one lane per device of a profiler trace from any machine."""

from __future__ import annotations

import argparse
import sys

from pmapviz.core.devices.cliflags import _print
from pmapviz.core.xla import timeline, traceevents, tracefiles


def _trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        help="a perfetto_trace.json.gz (or .json), or the folder that "
        "jax.profiler.trace(folder, create_perfetto_trace=True) wrote",
    )
    p.add_argument(
        "--module",
        default=None,
        metavar="NAME",
        help="show the last complete call of this module (its name as the "
        "trace gives it, e.g. jit__fun(1615...)); default: the last complete "
        "call of any",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_trace(args: argparse.Namespace) -> int:
    """One lane per device of a profiler trace from any machine (CPU, GPU or TPU), each op's
    bytes and achieved GB/s where the trace counts them (TPU); no JAX."""
    try:
        raw = tracefiles.read_trace(args.path)
        tl = timeline.from_trace(raw, args.module)
    except (tracefiles.TraceError, OSError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if args.module is not None and not tl.calls_seen:
        names = sorted({e.module for e in traceevents.device_events(raw) if e.module})
        print(
            f"pmapviz: no call of module {args.module[:80]!r} in the trace; its modules: "
            f"{', '.join(names) or 'none named'}",
            file=sys.stderr,
        )
        return 2
    _print(args.json, tl.to_json(), timeline.summary_lines(tl))
    return 0
