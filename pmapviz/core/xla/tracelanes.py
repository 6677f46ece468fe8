"""Profiler trace formats: which events belong to which device on CPU (args.device_ordinal), GPU
(a /device:GPU:N process) and TPU (/device:TPU:N).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pmapviz.core.base.valueparse import digits_or

_PLANE = re.compile(r"^/device:(GPU|TPU):([0-9]+)$")


OPS_THREAD = "XLA Ops"  # the line of a TPU plane that holds one event per HLO op


def trace_planes(events: Sequence[dict]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """(pid -> lane label, (pid, tid) -> thread name) from a trace's metadata events. A GPU
    plane is a process named ``/device:GPU:N`` (N: the local CUDA ordinal, not JAX's global
    id), a TPU one ``/device:TPU:N``; SparseCore planes (``/device:TPU:N SparseCore M``) and
    the host (``/host:CPU``) are not device lanes."""
    planes, threads = {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = str(e.get("args", {}).get("name", ""))
        if e.get("name") == "process_name" and (m := _PLANE.match(name)):
            planes[e.get("pid")] = lane_label(m.group(1), int(m.group(2)))
        elif e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = name
    return planes, threads


CPU_TRACE_PLATFORM = "CPU"  # a CPU trace marks device events with args.device_ordinal


def lane_label(platform: str, ordinal: int) -> str:
    """A trace lane's label in every trace format: platform and local ordinal (``gpu:0``)."""
    return f"{platform.lower()}:{ordinal}"


def event_lane(
    event: dict, planes: dict[int, str], threads: dict[tuple[int, int], str]
) -> tuple[str, str] | None:
    """(lane label, HLO op) of a complete event that ran an HLO op on a device, else None.
    CPU: any event with ``args.device_ordinal`` and ``args.hlo_op`` (lane ``cpu:N``). GPU and
    TPU: an event under a device plane with ``args.hlo_op``, or (TPU) on its "XLA Ops" line.
    Never raises: an event whose ``args`` is no object, whose ordinal is no plain number
    (at most 9 digits) or whose op or ids are no plain values is not a device op's."""
    if event.get("ph") != "X":
        return None
    args = event.get("args")
    args = args if isinstance(args, dict) else {}
    pid, tid = event.get("pid"), event.get("tid")
    if not (_plain(pid) and _plain(tid)):
        return None
    lane = planes.get(pid)
    if lane is None:
        ordinal = args.get("device_ordinal")
        if "hlo_op" in args and _plain(args["hlo_op"]) and _ordinal(ordinal) is not None:
            return lane_label(CPU_TRACE_PLATFORM, _ordinal(ordinal)), str(args["hlo_op"])
        return None
    if "hlo_op" in args:
        return (lane, str(args["hlo_op"])) if _plain(args["hlo_op"]) else None
    name = event.get("name", "")
    if threads.get((pid, tid)) == OPS_THREAD and _plain(name):
        return lane, str(name)
    return None


def _plain(value: Any) -> bool:
    """A trace's value that is safe to hash and print: text, a bool, None or a number that
    is no longer than 20 digits (not a list or an object, which may nest deep)."""
    if isinstance(value, int):
        return abs(value) < 10**20
    return value is None or isinstance(value, str | float)


def _ordinal(value: Any) -> int | None:
    """A CPU device's ordinal as a trace writes it (``"3"`` or 3): at most 9 digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < 10**9 else None
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value):
        return int(value)
    return None


def lane_order(label: str) -> tuple[str, int]:
    """Sort key of a lane label: platform, then its number (cpu:2 before cpu:10)."""
    platform, _, number = label.partition(":")
    return platform, digits_or(number)
