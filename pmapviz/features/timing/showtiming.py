"""``pmapviz.timing()``: the Timing lab's measurement, as a notebook view.

The same harness as the lab and ``python -m pmapviz bench``
(:func:`pmapviz.features.timing.benchmarking.sweep`): every implementation compiled ahead of time,
its inputs placed once, compile, transfer, compute and device-to-host timed apart, against the floor
(the bytes a call must move over the device's own measured memory bandwidth). A sweep too big for
the memory budget or the time limit is refused before it runs
(:func:`pmapviz.features.timing.sweepsetup.plan_sweep`), as the lab and the CLI refuse it.

Defaults are small, so a call takes a couple of seconds: the lab's device counts (1, 2, 4, ...
up to the devices this process has), every implementation, and the two smallest of the lab's
sizes for the workload (each a multiple of every device count).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts, deviceset
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.features.timing import benchmarking, benchreports, sweepsetup, timebars, workloads
from pmapviz.features.timing.benchreports import SweepReport

MAX_REPEATS = 100  # timed runs per measurement, as the CLI's --repeat allows
DEFAULT_SIZES = 2  # the first sizes of the lab's choices


def timing(
    workload: str = "matmul",
    sizes: int | Sequence[int] | None = None,
    devices: int | Sequence[int] | None = None,
    implementations: str | Sequence[str] | None = None,
    repeats: int = 5,
    device_set: str = "auto",
) -> View:
    """Time ``workload`` (``"dot"``, ``"matmul"`` or ``"elementwise"``) under each of
    ``implementations`` (pmap, vmap, jit_sharded, shard_map, numpy; default all) at each of
    ``sizes`` on each of ``devices`` (a device count or a list of them; default 1, 2, 4, ...
    up to all), ``repeats`` timed runs per measurement. Returns a view with the lab's bars per
    size, a table (``data["rows"]``: one row per implementation, device count and size, with
    compile, transfer and compute seconds, the floor and the speed-up over jit(vmap)) and
    which was fastest. ``device_set``: whose devices to time ("auto": the machine's own, a
    GPU or TPU chip where there is one, as the lab; "cpu": the emulated CPU devices beside it).
    Raises ValueError for settings the lab refuses, with its message."""
    notes = notebookviews.ready()
    name = deviceset.parse(device_set, "device_set")
    with deviceset.use(deviceset.default("real") if name == "auto" else name):
        return _timed(workload, sizes, devices, implementations, repeats, notes)


def _timed(workload, sizes, devices, implementations, repeats, notes) -> View:
    """:func:`timing` on the device set in use."""
    wl = workloads.WORKLOADS[
        valueparse.parse_choice(workload, "workload", list(workloads.WORKLOADS))
    ]
    ks = _ints(devices, "devices") or sweepsetup.device_counts(devicefacts.facts().local_count)
    chosen = _ints(sizes, "sizes") or sweepsetup.size_choices(wl.key, ks)[:DEFAULT_SIZES]
    impls = _names(implementations)
    repeat = valueparse.parse_int(repeats, "repeats", 1, MAX_REPEATS)
    report = benchmarking.sweep(wl, sorted(set(chosen)), sorted(set(ks)), impls, repeat=repeat)
    return _view(report, wl, notes)


def _ints(value: Any, name: str) -> list[int]:
    """One whole number or a list of them (empty for None); ValueError for anything else."""
    if value is None:
        return []
    values = [value] if isinstance(value, int) else list(value)
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int)]
    if bad or not values:
        raise ValueError(
            f"{name}={value!r}: give a whole number or a list of them, e.g. {name}=[1, 2]."
        )
    return values


def _names(value: str | Sequence[str] | None) -> list[str]:
    """The implementations asked for (each checked), or all of them."""
    if value is None:
        return list(sweepsetup.IMPLS)
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        raise ValueError(f"implementations is empty: choose from {', '.join(sweepsetup.IMPLS)}.")
    return [valueparse.parse_choice(v, "implementations", sweepsetup.IMPLS) for v in values]


# ---------------------------------------------------------------- the view
def table_rows(report: SweepReport) -> list[dict]:
    """The lab's table rows (:func:`pmapviz.features.timing.benchreports.rows_for_table`), each with
    its speed-up over jit(vmap) on one device at the same size (1.0 for vmap itself; None where
    there is no vmap to compare with, and for numpy)."""
    rows = benchreports.rows_for_table(report)
    sp = {
        (r["impl"], r["devices"], r["size"]): r["speedup"]
        for r in benchreports.speedups(report.results)
    }
    for row in rows:
        key = (row["impl"], row["devices"], row["size"])
        row["speedup_vs_vmap"] = 1.0 if row["impl"] == "vmap" else sp.get(key)
    return rows


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.4g}"


def shown_rows(rows: list[dict]) -> list[dict]:
    """The table as it is shown: milliseconds, the speed-up as 'N.NNx'."""
    return [
        {
            "implementation": r["impl"],
            "devices": r["devices"],
            "size": f"{r['size']:,}",
            "compile (ms)": _ms(r["compile_s"]),
            "transfer (ms)": _ms(r["transfer_s"]),
            "compute (ms, median)": _ms(r["run_s_median"]),
            "device to host (ms)": _ms(r["d2h_s"]),
            "floor (ms)": _ms(r["floor_s"]),
            "speed-up vs vmap": ""
            if r["speedup_vs_vmap"] is None
            else f"{r['speedup_vs_vmap']:.2f}x",
        }
        for r in rows
    ]


def text_table(rows: list[dict]) -> str:
    """Rows of the same keys as a plain-text table, columns aligned."""
    if not rows:
        return ""
    keys = list(rows[0])
    cells = [keys, *[[str(r[k]) for k in keys] for r in rows]]
    widths = [max(len(line[c]) for line in cells) for c in range(len(keys))]
    return "\n".join(
        "  ".join(
            v.ljust(w) if c == 0 else v.rjust(w)
            for c, (v, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    )


def verdicts(rows: list[dict], report: SweepReport) -> list[str]:
    """Per size, the fastest run against the floor (the lab's sentence), and where the floor
    comes from."""
    out = []
    for size in sorted({r["size"] for r in rows}):
        at = [r for r in rows if r["size"] == size]
        out.append(benchreports.fastest_words(rows, size))
        sped = [r for r in at if r["impl"] != "vmap" and r["speedup_vs_vmap"] is not None]
        if sped:
            top = max(sped, key=lambda r: r["speedup_vs_vmap"])
            out.append(
                f"  Best speed-up over jit(vmap) on one device: {top['impl']} on "
                f"{top['devices']} device(s), {top['speedup_vs_vmap']:.2f}x."
            )
    out.append(
        f"The floor: the bytes a call must move over the device's memory bandwidth, "
        f"{report.floor_method or f'{report.bandwidth_gbs:.1f} GB/s'}; no implementation on "
        "this device can beat it."
    )
    return out


def _view(report: SweepReport, wl: workloads.Workload, notes: tuple[str, ...]) -> View:
    """The report as a View: the bars per size, the table, the words; text and data."""
    rows = table_rows(report)
    said = verdicts(rows, report)
    parts = [notebookviews.paragraph(" ".join(notes))] if notes else []
    parts.append(notebookviews.paragraph(f"{wl.label}: {wl.description}."))
    for size in sorted({r["size"] for r in rows}):
        parts.append(notebookviews.heading(f"Size {size:,} ({wl.unit})"))
        parts.append(timebars.bars_html([r for r in rows if r["size"] == size], size))
    parts.append(notebookviews.table(shown_rows(rows), f"timings of {wl.label}"))
    parts.extend(notebookviews.paragraph(s) for s in said)
    text = "\n".join([text_table(shown_rows(rows)), *said, *notes])
    data = {
        "workload": wl.key,
        "rows": rows,
        "bandwidth_gbs": report.bandwidth_gbs,
        "floor_method": report.floor_method,
        "machine": report.machine,
        "notes": list(notes),
    }
    return View(f"Timing: {wl.label}", "".join(parts), text, data, report)
