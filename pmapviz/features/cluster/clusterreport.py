"""A cluster's report: what every process of a real ``jax.distributed`` cluster saw, gathered
by process 0 (``python -m pmapviz cluster --join``), written as one JSON object, and read back on
the Multi-process page.

:func:`build` makes it from the processes' records
(:func:`pmapviz.features.cluster.clusterworker.run_check`
plus each process's host and join time); :func:`parse` reads one back from text that may come from
anywhere (an upload, a file), refusing with one clear :class:`ReportError` anything that is not
a report or does not hold together (bounded: size, nesting, counts, numbers; NaN refused);
:func:`check` checks the collectives against numpy; :func:`resolve` keeps a path inside the
folder of reports named at start-up (``--reports DIR`` / ``PMAPVIZ_REPORTS``).

The report's keys: ``process_count``; ``global_devices`` (one ``{id, process_index, host}`` per
global device, in the pmap axis's order); ``hosts`` (``{hostname, process_indices}``);
``per_process`` (each process's record: its host, local devices and their ids, its inputs, ``psum``,
``all_gather``, ``axis_index``, join / first-call / steady-call seconds); ``environment`` (what JAX
detected: :meth:`pmapviz.features.cluster.clusterenv.Detection.to_json`); ``check`` (:func:`check`'s
verdict); ``jax_version``, ``created``, ``seconds``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pmapviz.core.base import folders
from pmapviz.core.base.valuetext import first_line, quote

KIND = "pmapviz cluster report"
VERSION = 1
MAX_BYTES = 8 * 2**20  # a report of 4,096 processes x 8 devices is ~ 4 MiB
MAX_PROCESSES = 4096
MAX_DEVICES = 65_536
MAX_TEXT = 255
MAX_NAME = 200  # characters of a path typed on the page
MAX_SCANNED = 2000  # folder entries the reports listing looks at, at most


class ReportError(ValueError):
    """Not a usable report; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class Process:
    """One process's record: its host, local devices and inputs, what the collectives gave it,
    and its join / first-call / steady-call seconds."""

    index: int
    hostname: str
    local_device_ids: tuple[int, ...]
    local_inputs: tuple[float, ...]
    psum: float
    all_gather: tuple[float, ...]
    axis_index: tuple[int, ...]
    sees: int  # global devices this process saw
    init_s: float | None
    first_call_s: float | None
    steady_s: float | None


@dataclass(frozen=True)
class ClusterReport:
    """A report, read back and checked (:func:`parse`): the global devices in the axis's
    order, every process's record, and where and when it was made."""

    process_count: int
    devices: tuple[tuple[int, int], ...]  # (global id, process index), in the axis's order
    processes: tuple[Process, ...]  # by process index
    environment: Mapping  # name, jax_class, coordinator, variables
    jax_version: str
    created: str
    platform: str

    @property
    def hosts(self) -> dict[str, list[Process]]:
        """Each host's processes, hosts in the order of their first process."""
        out: dict[str, list[Process]] = {}
        for p in self.processes:
            out.setdefault(p.hostname, []).append(p)
        return out


# ---------------------------------------------------------------- writing
def build(
    records: list[dict], environment: dict, seconds: float, created: str, jax_version: str
) -> dict:
    """The report (a JSON-ready dict) from every process's record, by process index."""
    records = sorted(records, key=lambda r: r["process_index"])
    host = {r["process_index"]: r["hostname"] for r in records}
    first = records[0]
    devices = [
        {"id": i, "process_index": p, "host": host.get(p)}
        for i, p in zip(first["global_device_ids"], first["global_device_processes"], strict=True)
    ]
    hosts: dict[str, list[int]] = {}
    for r in records:
        hosts.setdefault(r["hostname"], []).append(r["process_index"])
    report = {
        "kind": KIND,
        "version": VERSION,
        "created": created,
        "jax_version": jax_version,
        "environment": environment,
        "process_count": first["process_count"],
        "global_device_count": len(devices),
        "global_devices": devices,
        "hosts": [{"hostname": h, "process_indices": ps} for h, ps in hosts.items()],
        "platform": first.get("platform", ""),
        "per_process": records,
        "seconds": seconds,
    }
    report["check"] = check(parse(json.dumps(report))).to_json()
    return report


# ---------------------------------------------------------------- reading
def parse(text: str | bytes) -> ClusterReport:
    """A report from JSON text, checked; ReportError says what is wrong."""
    if len(text) > MAX_BYTES:
        raise ReportError(
            f"The file is {len(text):,} bytes; a report is at most {MAX_BYTES // 2**20} MiB."
        )
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise ReportError("The file is not text (UTF-8): not a report.") from err
    except json.JSONDecodeError as err:
        raise ReportError(
            f"The file is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}."
        ) from err
    except RecursionError as err:
        raise ReportError("The file's JSON is nested too deeply to be a report.") from err
    if not isinstance(data, dict) or "per_process" not in data or "process_count" not in data:
        raise ReportError(
            "The file is JSON but not a pmapviz cluster report (it has no "
            "process_count and per_process); make one with python -m pmapviz "
            "cluster --join --report PATH."
        )
    return _report(data)


def _no_constant(name: str):
    raise ReportError(f"The file holds {name}, which no report has.")


def _report(data: dict) -> ClusterReport:
    n = _int(data, "process_count", 1, MAX_PROCESSES)
    devs = _list(data, "global_devices", MAX_DEVICES)
    devices = tuple(
        (
            _int(d, "id", 0, 2**31, f"global_devices[{k}]"),
            _int(d, "process_index", 0, n - 1, f"global_devices[{k}]"),
        )
        for k, d in enumerate(_dicts(devs, "global_devices"))
    )
    if not devices or len({i for i, _ in devices}) != len(devices):
        raise ReportError("The report's global_devices are empty or name a device id twice.")
    records = _dicts(_list(data, "per_process", MAX_PROCESSES), "per_process")
    procs = tuple(
        sorted(
            (_process(r, k, n, len(devices)) for k, r in enumerate(records)), key=lambda p: p.index
        )
    )
    if [p.index for p in procs] != list(range(n)):
        raise ReportError(
            f"The report has records of processes {[p.index for p in procs][:8]}; "
            f"process_count {n} needs one for each of 0..{n - 1}."
        )
    for p in procs:
        owned = [i for i, q in devices if q == p.index]
        if sorted(p.local_device_ids) != sorted(owned):
            raise ReportError(
                f"Process {p.index}'s local devices {list(p.local_device_ids)[:8]} "
                f"are not the global devices of process {p.index} "
                f"({owned[:8]})."
            )
    env = data.get("environment") if isinstance(data.get("environment"), dict) else {}
    return ClusterReport(
        n,
        devices,
        procs,
        env,
        _text(data.get("jax_version")),
        _text(data.get("created")),
        _text(data.get("platform")),
    )


def _process(r: dict, k: int, n: int, g: int) -> Process:
    where = f"per_process[{k}]"
    ids = _ints(r, "local_device_ids", 0, 2**31, where, g)
    inputs = _numbers(r, "local_inputs", where, len(ids))
    axis = _ints(r, "axis_index", 0, g - 1, where, len(ids))
    if len(inputs) != len(ids) or len(axis) != len(ids):
        raise ReportError(
            f"The report's {where} has {len(ids)} local devices but "
            f"{len(inputs)} inputs and {len(axis)} axis indices."
        )
    return Process(
        index=_int(r, "process_index", 0, n - 1, where),
        hostname=_text(r.get("hostname")) or "?",
        local_device_ids=ids,
        local_inputs=inputs,
        psum=_number(r, "psum", where),
        all_gather=_numbers(r, "all_gather", where, g),
        axis_index=axis,
        sees=_int(r, "global_devices", 1, MAX_DEVICES, where),
        init_s=_seconds(r.get("init_s")),
        first_call_s=_seconds(r.get("first_call_s")),
        steady_s=_seconds(r.get("steady_s")),
    )


def _list(d: dict, key: str, most: int) -> list:
    v = d.get(key)
    if not isinstance(v, list):
        raise ReportError(f"The report's {key} is not a list.")
    if len(v) > most:
        raise ReportError(f"The report's {key} has {len(v):,} entries; at most {most:,}.")
    return v


def _dicts(items: list, key: str) -> list[dict]:
    if not all(isinstance(x, dict) for x in items):
        raise ReportError(f"The report's {key} holds something that is not an object.")
    return items


def _int(d: dict, key: str, lo: int, hi: int, where: str = "") -> int:
    v = d.get(key)
    name = f"{where}.{key}" if where else key
    if not isinstance(v, int) or isinstance(v, bool):
        raise ReportError(f"The report's {name} is {_show(v)}, not a whole number.")
    if not lo <= v <= hi:
        raise ReportError(f"The report's {name} is {v:,}; expected {lo:,} to {hi:,}.")
    return v


def _ints(d: dict, key: str, lo: int, hi: int, where: str, most: int) -> tuple[int, ...]:
    v = d.get(key)
    if not isinstance(v, list) or len(v) > most:
        raise ReportError(
            f"The report's {where}.{key} is not a list of at most {most:,} whole numbers."
        )
    return tuple(_int({key: x}, key, lo, hi, where) for x in v)


def _number(d: dict, key: str, where: str) -> float:
    v = d.get(key)
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        raise ReportError(f"The report's {where}.{key} is {_show(v)}, not a number.")
    return float(v)


def _numbers(d: dict, key: str, where: str, most: int) -> tuple[float, ...]:
    v = d.get(key)
    if not isinstance(v, list) or len(v) > most:
        raise ReportError(f"The report's {where}.{key} is not a list of at most {most:,} numbers.")
    return tuple(_number({key: x}, key, where) for x in v)


def _seconds(v) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return float(v) if ok else None


def _text(v) -> str:
    s = "".join(ch if ch.isprintable() else "?" for ch in str(v)) if isinstance(v, str) else ""
    return s[:MAX_TEXT]


def _show(v) -> str:
    """A value from the file, as inline code (never Markdown: the page shows the message)."""
    s = json.dumps(v) if isinstance(v, str | int | float | bool | type(None)) else type(v).__name__
    return quote(s, 24)


# ---------------------------------------------------------------- the check
@dataclass(frozen=True)
class ReportCheck:
    """The collectives against numpy: the inputs laid out on the global axis by each device's
    axis_index give the expected psum (their sum) and all_gather (the array itself)."""

    expected_psum: float
    psum_equal: bool  # every process saw the same psum
    psum_correct: bool  # and it is numpy's sum
    gather_correct: bool  # every process's all_gather is numpy's array of the inputs
    axis_complete: bool  # axis_index covers 0..G-1 exactly once
    inputs_as_designed: bool  # device g holds g + 1

    @property
    def ok(self) -> bool:
        """Every process saw numpy's psum and all_gather, and axis_index covers each device once."""
        return self.psum_equal and self.psum_correct and self.gather_correct and self.axis_complete

    def to_json(self) -> dict:
        """The verdict as a report's ``check``, a JSON-ready dict."""
        return {
            "expected_psum": self.expected_psum,
            "psum_equal": self.psum_equal,
            "psum_correct": self.psum_correct,
            "all_gather_correct": self.gather_correct,
            "axis_index_complete": self.axis_complete,
            "inputs_as_designed": self.inputs_as_designed,
            "ok": self.ok,
        }


def check(report: ClusterReport) -> ReportCheck:
    """The report's collectives checked against numpy."""
    import numpy as np

    g = len(report.devices)
    full = np.zeros(g, dtype=np.float64)
    seen = np.zeros(g, dtype=np.int64)
    for p in report.processes:
        for idx, x in zip(p.axis_index, p.local_inputs, strict=True):
            full[idx] = x
            seen[idx] += 1
    expected = float(full.sum())
    first = report.processes[0].psum
    return ReportCheck(
        expected_psum=expected,
        psum_equal=all(p.psum == first for p in report.processes),
        psum_correct=bool(np.isclose(first, expected)),
        gather_correct=all(
            len(p.all_gather) == g and np.allclose(p.all_gather, full) for p in report.processes
        ),
        axis_complete=bool((seen == 1).all()),
        inputs_as_designed=bool(np.array_equal(full, np.arange(1, g + 1))),
    )


# ---------------------------------------------------------------- the folder of reports
def resolve(folder: str | None, name: str) -> Path:
    """``name`` inside ``folder`` (the reports folder named at start-up), or ReportError: no
    folder, an empty or too long name, or a path that leads outside it (``..``, an absolute
    path, a link pointing out)."""
    if not folder:
        raise ReportError(
            "No reports folder was named at start-up: start the server with --reports DIR "
            "(or PMAPVIZ_REPORTS=DIR), or upload the report."
        )
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME or any(not ch.isprintable() for ch in name):
        raise ReportError(
            f"Give a report's path inside the reports folder ({MAX_NAME} "
            "characters at most), e.g. cluster-report.json."
        )
    try:
        root = Path(folder).resolve()
        path = (root / name).resolve()
    except (OSError, RuntimeError) as err:  # a link that loops (RuntimeError on 3.11)
        raise ReportError(f"{quote(name)} cannot be opened: {first_line(err)}.") from err
    if not path.is_relative_to(root) or path == root:
        raise ReportError(
            f"{quote(name, 60)} is outside the reports folder; only files inside it can be opened."
        )
    return path


def read(folder: str | None, name: str) -> ClusterReport:
    """The report at ``name`` inside ``folder`` (see :func:`resolve`), parsed."""
    path = resolve(folder, name)
    try:
        if not path.is_file():
            raise ReportError(
                f"There is no report {quote(name.strip(), 60)} in the reports folder."
            )
        if path.stat().st_size > MAX_BYTES:
            raise ReportError(
                f"{quote(name.strip(), 60)} is larger than {MAX_BYTES // 2**20} MiB: not a report."
            )
        return parse(path.read_bytes())
    except OSError as err:
        raise ReportError(f"{quote(name.strip(), 60)} cannot be read: {err.strerror}.") from err


def listing(folder: str | None, most: int = 50) -> list[str]:
    """The ``.json`` files in the reports folder and in its own subfolders (one level down), by
    name, at most ``most`` of them from at most :data:`MAX_SCANNED` entries looked at
    (:func:`folders.entries`). A linked subfolder is never entered, and a file (or link) whose
    real path is outside the folder is never listed, as :func:`resolve` would refuse to open
    it."""
    if not folder:
        return []
    root = os.path.realpath(folder)
    found = [
        os.path.relpath(e.path, root).replace(os.sep, "/")
        for e in folders.entries(root, folders.Walk(), 2, MAX_SCANNED)
        if _is_report_file(e, root)
    ]
    return sorted(found)[:most]


def _is_report_file(entry: os.DirEntry, root: str) -> bool:
    """A ``.json`` file whose real path lies inside ``root`` (a link that loops is not)."""
    if not entry.name.endswith(".json") or not folders.is_file(entry):
        return False
    real = os.path.realpath(entry.path)
    return os.path.commonpath([real, root]) == root
