"""A benchmark's results and what they say: one Measurement per implementation, device count
and size, the SweepReport of a sweep, the speed-ups and parallel efficiency, table rows, and where
the floor comes from."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

BESIDE = " · "  # between an implementation and the set beside it was measured on


@dataclass
class Measurement:
    """One implementation on k devices at one size: compile, transfer, runs, copy back."""

    impl: str
    devices: int
    size: int
    compile_s: float
    transfer_s: float
    run_s: list[float]
    d2h_s: float
    floor_s: float
    bytes_moved: int
    device_set: str = ""  # the device set it ran on (deviceset: "cpu", "gpu", "tpu")
    beside: bool = False  # measured on the emulated set beside the machine's own, for contrast

    @property
    def run_s_median(self) -> float:
        """The median of the timed runs, in seconds."""
        return statistics.median(self.run_s)

    @property
    def label(self) -> str:
        """Its name in charts and tables: the implementation, and for a measurement on the
        set beside (the emulated CPU devices beside an accelerator) which set: 'pmap · cpu'."""
        return f"{self.impl}{BESIDE}{self.device_set}" if self.beside else self.impl

    def to_json(self) -> dict:
        """Its fields as JSON, with the median run time added."""
        d = asdict(self)
        d["run_s_median"] = self.run_s_median
        return d


@dataclass
class SweepReport:
    """A benchmark sweep: the machine, its memory bandwidth (the floor) and every measurement."""

    machine: dict
    bandwidth_gbs: float
    workload: str
    results: list[Measurement] = field(default_factory=list)
    cancelled: bool = False
    floor_method: str = ""  # how the bandwidth was measured, and on which device
    beside_floor_method: str = ""  # the same, on the set measured beside (add_beside)
    first_transfer_s: dict[int, float] = field(default_factory=dict)  # size -> untimed copy

    def to_json(self) -> dict:
        """The whole report as JSON, measurements included."""
        return {
            "machine": self.machine,
            "bandwidth_gbs": self.bandwidth_gbs,
            "floor_method": self.floor_method,
            "workload": self.workload,
            "beside_floor_method": self.beside_floor_method,
            "cancelled": self.cancelled,
            "first_transfer_s": {str(k): v for k, v in self.first_transfer_s.items()},
            "results": [m.to_json() for m in self.results],
        }


def floor_caption(report: SweepReport) -> str:
    """Where the floor comes from and what the untimed first copies were (the Timing lab)."""
    text = (
        f"The device's memory bandwidth: **{report.floor_method or report.bandwidth_gbs}**. "
        "The floor for a call is the bytes it must move divided by that bandwidth: no "
        "implementation on this device can beat it."
    )
    if report.beside_floor_method:
        text += (
            f" Beside them, marked `{BESIDE.strip()} cpu`: the emulated CPU devices, "
            f"whose floor is {report.beside_floor_method}."
        )
    if report.first_transfer_s:
        firsts = ", ".join(
            f"{t * 1e3:,.1f} ms at {s:,}" for s, t in sorted(report.first_transfer_s.items())
        )
        text += (
            " Transfers are timed after one untimed copy of the inputs at each size "
            f"({firsts}): on a GPU the first copy at a new size is slower, whoever makes "
            "it."
        )
    return text + (" (Sweep cancelled: partial results.)" if report.cancelled else "")


def speedups(results: Sequence[Measurement], baseline: str = "vmap") -> list[dict]:
    """Speed-up of each parallel run over ``baseline`` on one device of the same set at the
    same size, and parallel efficiency (speed-up / devices)."""
    base = {(m.beside, m.size): m.run_s_median for m in results if m.impl == baseline}
    rows = []
    for m in results:
        if m.impl in ("vmap", "numpy") or (m.beside, m.size) not in base:
            continue
        sp = base[(m.beside, m.size)] / m.run_s_median
        rows.append(
            {
                "impl": m.label,
                "devices": m.devices,
                "size": m.size,
                "speedup": sp,
                "efficiency": sp / m.devices,
            }
        )
    return rows


def add_beside(report: SweepReport, beside: SweepReport) -> SweepReport:
    """``report`` with ``beside``'s measurements (the same sweep on the other device set)
    marked and added, for contrast in the same charts."""
    for m in beside.results:
        m.beside = True
    report.results.extend(beside.results)
    report.beside_floor_method = beside.floor_method
    report.cancelled = report.cancelled or beside.cancelled
    return report


def rows_for_table(report: SweepReport) -> list[dict]:
    """Flat rows (one per measurement) for CSV and tables; seconds as floats."""
    out = []
    for m in report.results:
        out.append(
            {
                "impl": m.label,
                "device_set": m.device_set,
                "devices": m.devices,
                "size": m.size,
                "compile_s": m.compile_s,
                "transfer_s": m.transfer_s,
                "run_s_median": m.run_s_median,
                "run_s_min": min(m.run_s),
                "run_s_max": max(m.run_s),
                "runs": len(m.run_s),
                "d2h_s": m.d2h_s,
                "floor_s": m.floor_s,
                "bytes_moved": m.bytes_moved,
            }
        )
    return out


def fastest_words(rows: list[dict], size: int, mark: str = "") -> str:
    """Which run was fastest at ``size`` against its memory floor, in one sentence (the
    Timing lab's verdict; ``mark``: "**" makes the winner bold in Markdown). Runs measured on
    the set beside are not counted where the set's own were measured."""
    at = [r for r in rows if r["size"] == size]
    own = [r for r in at if BESIDE not in r["impl"]] or at
    best = min(own, key=lambda r: r["run_s_median"])
    run, floor = best["run_s_median"], best["floor_s"]
    return (
        f"At size {size:,}, the fastest is {mark}{best['impl']} on {best['devices']} "
        f"device(s){mark}: {run * 1e3:.4g} ms, {run / floor:,.1f}x the memory floor of "
        f"{floor * 1e3:.3g} ms."
    )


def speedup_words(rows: list[dict], size: int, emulated: bool) -> str | None:
    """What the run shown says about speed-up at ``size``, in one sentence derived from it
    (``rows``: :func:`speedups`): the best parallel run against jit(vmap) on one device, the
    one baseline of every speed-up and efficiency on the page. None without a baseline."""
    at = [r for r in rows if r["size"] == size and BESIDE not in r["impl"]]
    if not at:
        return None
    best = max(at, key=lambda r: r["speedup"])
    sp, k = best["speedup"], best["devices"]
    if sp >= 1.1:
        verdict = f"{sp:,.2f}x as fast as"
    elif sp <= 0.9:
        verdict = f"{1 / sp:,.2f}x slower than"
    else:
        verdict = "as fast as (within 10% of)"
    text = (
        f"Measured at size {size:,}: the best parallel run, {best['impl']} on {k} device(s), "
        f"was {verdict} jit(vmap) on one device (parallel efficiency {best['efficiency']:.0%}; "
        "every speed-up and efficiency here is against jit(vmap) on one device)."
    )
    if emulated and sp >= 1.1:
        text += (
            " The devices are emulated and share the cores: the gain is XLA using those cores "
            "differently (one device's program did not keep every core busy at this size), "
            "not more hardware."
        )
    return text
