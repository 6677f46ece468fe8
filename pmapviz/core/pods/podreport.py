"""What a compile for a pod says: per-device memory against the chip's HBM, FLOPs and bytes,
the compiler's time estimate, and every collective with its groups laid on the chips.

Pure data (no JAX): :mod:`podcompile` fills it from the compiled program; the pages, the
notebook and the CLI show it; :meth:`PodReport.to_dict` carries every figure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pmapviz.core.pods.compiledinputs import Change, Input
from pmapviz.core.pods.podtopology import Chip

GIB = 1024**3


def fmt_gib(n: float) -> str:
    """Binary units, as HBM is sold: '15.75 GiB', '512 MiB', '4.0 KiB'."""
    if abs(n) >= GIB / 10:
        return f"{n / GIB:,.2f} GiB"
    if abs(n) >= 1024**2 / 10:
        return f"{n / 1024**2:,.1f} MiB"
    return f"{n / 1024:,.1f} KiB"


def fmt_seconds(s: float | None) -> str:
    """'1.234 ms', '45.6 µs', '< 0.1 µs', or 'none'."""
    if s is None:
        return "none"
    if s >= 1e-3:
        return f"{s * 1e3:,.3f} ms"
    if s >= 1e-7:
        return f"{s * 1e6:,.1f} µs"
    return "< 0.1 µs" if s > 0 else "0"


@dataclass(frozen=True)
class PodCollective:
    """One collective of the compiled program, on the slice's chips."""

    kind: str
    name: str  # the HLO instruction
    shape: str  # 'f32[4096,4096]'
    bytes: int  # operand bytes per device
    groups: tuple[tuple[int, ...], ...]  # device ids that communicate together (a permute: pairs)
    crossing: int  # groups (or pairs) whose devices sit on more than one host
    source_line: str | None
    hlo_line: int
    model_s: float  # the communication model's time (commmodel)
    model_how: str  # the slowest group's span: '16 chips along axis 0 (ring), axis 1 (ring)'
    algorithm: str = ""  # what the TPU compiler chose to run it: 'RotatedPincerEmitter, ...'

    @property
    def group_size(self) -> int:
        """Devices in each group (a permute: 2, a pair)."""
        return max((len(g) for g in self.groups), default=0)


@dataclass(frozen=True)
class PodReport:
    """One program compiled for one slice."""

    topology: str  # 'v5e:4x4'
    summary: str  # 'v5e:4x4: 16 chips on 4 hosts (TPU v5e, 16 GiB HBM a chip)'
    generation: str
    chips: tuple[Chip, ...]
    mesh_axes: tuple[tuple[str, int], ...]
    program: str  # the program's key
    label: str  # the program as compiled: 'data-parallel step: w f32[4096,4096], x f32[...]'
    code: str
    batch: int | None  # the batch compiled, read from the lowered program (None: no batch)
    batch_words: str
    argument_bytes: int  # per device, from memory_analysis()
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    code_bytes: int
    hbm_bytes: int  # one device's share of its chip's HBM (tpuchips)
    flops: float | None  # per device, from cost_analysis()
    bytes_accessed: float | None
    optimal_s: float | None  # the compiler's estimate (compute and HBM); None where it has none
    collectives: tuple[PodCollective, ...]
    unparsed: tuple[tuple[int, str, str], ...]
    compile_s: float
    hlo: str = ""
    largest_batch: int | None = None  # where it does not fit: the largest batch that does
    largest_note: str = ""
    asked_batch: int | None = None  # the batch asked for (None: the program has no batch)
    refusal: str = ""  # the compiler's words when the batch asked for ran out of HBM
    mesh_order: tuple[int, ...] = ()  # device ids in the mesh's row-major order
    inputs: tuple[Input, ...] = ()  # every argument as compiled, read from the lowered program
    changes: tuple[Change, ...] = ()  # every size pmapviz changed before compiling, and why
    title: str = ""  # the program's name alone, sizes apart: 'data-parallel step'
    notes: tuple[str, ...] = ()  # what to know of the layout before any figure

    def at_batch(self) -> str:
        """Where a figure holds for one batch: ' at batch 1,008' ('' without a batch)."""
        return "" if self.batch is None else f" at batch {self.batch:,}"

    def change_lines(self, name_as=lambda name: name) -> list[str]:
        """What pmapviz changed before compiling, a sentence each (said before any figure);
        ``name_as`` writes an argument's name (a page quotes it)."""
        return [c.sentence(name_as) for c in self.changes]

    def mesh_label(self, device_id: int) -> str:
        """Where a device sits on the mesh: 'data 0 · model 3' ('' if not on it)."""
        if device_id not in self.mesh_order:
            return ""
        k, where = self.mesh_order.index(device_id), []
        for name, size in reversed(self.mesh_axes):
            where.append(f"{name} {k % size}")
            k //= size
        return " · ".join(reversed(where))

    @property
    def peak_bytes(self) -> int:
        """Arguments + output + temporaries - aliased + code: what one device holds at peak."""
        return (
            self.argument_bytes
            + self.output_bytes
            + self.temp_bytes
            - self.alias_bytes
            + self.code_bytes
        )

    @property
    def fits(self) -> bool:
        """Whether one device's peak fits its share of HBM (and the compiler took the batch
        asked for: a refused one is shown at the largest batch that fits)."""
        return not self.refusal and self.peak_bytes <= self.hbm_bytes

    @property
    def comm_s(self) -> float:
        """The communication model's time, every collective added."""
        return sum(c.model_s for c in self.collectives)

    @property
    def total_s(self) -> float | None:
        """The compiler's estimate plus the model's communication (None without an estimate)."""
        return None if self.optimal_s is None else self.optimal_s + self.comm_s

    def fit_words(self) -> str:
        """'fits: 1.2 GiB of 16 GiB a chip' or 'does not fit, by 3.4 GiB; ...'."""
        peak, hbm = self.peak_bytes, self.hbm_bytes
        if self.refusal:
            return (
                f"does not fit at batch {self.asked_batch:,}: {self.refusal}. Shown instead: "
                f"batch {self.batch:,}, the largest that fits ({self.batch_words}), "
                f"{fmt_gib(peak)} a device at peak, of the chip's {fmt_gib(hbm)}"
            )
        if self.fits:
            return f"fits: {fmt_gib(peak)} of {fmt_gib(hbm)} on each device"
        words = f"does not fit, by {fmt_gib(peak - hbm)}: {fmt_gib(peak)} of {fmt_gib(hbm)}"
        if self.largest_batch:
            words += f"; the largest batch that fits is {self.largest_batch:,} {self.batch_words}"
        elif self.largest_note:
            words += f"; {self.largest_note}"
        return words

    def to_dict(self) -> dict:
        """Every figure, as JSON (the HLO text left out)."""
        out = asdict(self)
        out.pop("hlo")
        out["chips"] = [asdict(c) for c in self.chips]
        out["inputs"] = [i.to_dict() for i in self.inputs]
        out["changes"] = [c.to_dict() for c in self.changes]
        out["notes"] = list(self.notes)
        out["peak_bytes"] = self.peak_bytes
        out["fits"] = self.fits
        out["comm_s"] = self.comm_s
        out["total_s"] = self.total_s
        out["n_devices"] = len(self.chips)
        out["n_hosts"] = len({c.host for c in self.chips})
        return out

    def lines(self) -> list[str]:
        """The report as terminal text."""
        est = (
            "none (libtpu has no cost model for it)"
            if self.optimal_s is None
            else fmt_seconds(self.optimal_s)
        )
        out = [
            self.summary,
            f"program: {self.label}",
            *(f"changed: {line}" for line in self.change_lines()),
            *(f"note: {line}" for line in self.notes),
            *(f"  {i.layout_text()}" for i in self.inputs),
            f"memory per device{self.at_batch()}: {self.fit_words()} (arguments "
            f"{fmt_gib(self.argument_bytes)}, output {fmt_gib(self.output_bytes)}, temporaries "
            f"{fmt_gib(self.temp_bytes)})",
            f"per device{self.at_batch()}: {self.flops or 0:,.0f} FLOPs, "
            f"{self.bytes_accessed or 0:,.0f} bytes accessed; compiler's estimate "
            f"(compute + HBM) {est}",
            f"communication (model): {fmt_seconds(self.comm_s)} over "
            f"{len(self.collectives)} collective(s)",
        ]
        for c in self.collectives:
            out.append(
                f"  {c.kind} {c.shape} ({fmt_gib(c.bytes)}): {len(c.groups)} group(s) of "
                f"{c.group_size}, {c.crossing} crossing hosts; {fmt_seconds(c.model_s)} "
                f"({c.model_how}); {c.source_line or 'no source line'}"
            )
        return out
