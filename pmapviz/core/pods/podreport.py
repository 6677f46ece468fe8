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
_WHERE = {"ICI": "inside each slice", "DCN": "between slices"}


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
    network: str = "ICI"  # where it runs: 'ICI' inside a slice, 'DCN' between slices
    moved_bytes: float = 0.0  # bytes each device sends over that network (the model's count)
    transfer: str = ""  # a DCN send/recv: the megascale transfer type ('ALL_REDUCE')
    rendezvous: str = ""  # a DCN send/recv: the exchange it belongs to (its pair shares it)

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
    hbm_bytes: int  # what the compiler allows one device (tpuchips.COMPILER_HBM, measured)
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
    slices: int = 1  # slices joined over the data-center network (Multislice)
    hosts: int = 0  # hosts (processes) of every slice, from the devices' process_index
    roofline_s: float | None = None  # where optimal_s is None: compute + HBM against the peak
    roofline_how: str = ""  # how roofline_s was reached, with its source
    dcn_how: str = ""  # the DCN model's bandwidth and its source ('' on one slice)
    published_hbm_bytes: int = 0  # one device's share of its chip's published HBM (0: unknown)
    phase_names: tuple[tuple[str, ...], ...] = ()  # each all-reduce across slices, by name

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
    def ici_s(self) -> float:
        """The ICI model's time: every collective inside a slice."""
        return sum(c.model_s for c in self.collectives if c.network != "DCN")

    @property
    def dcn_s(self) -> float:
        """The DCN model's time: every transfer between slices."""
        return sum(c.model_s for c in self.collectives if c.network == "DCN")

    def network_bytes(self) -> dict[str, float]:
        """Bytes each device sends, per network: {'ICI': ..., 'DCN': ...} (the models' counts)."""
        out = {"ICI": 0.0, "DCN": 0.0}
        for c in self.collectives:
            out[c.network] = out.get(c.network, 0.0) + c.moved_bytes
        return out

    @property
    def compute_s(self) -> float | None:
        """Compute and HBM: the compiler's estimate, else the roofline estimate."""
        return self.optimal_s if self.optimal_s is not None else self.roofline_s

    @property
    def step_s(self) -> float | None:
        """Compute and HBM (:attr:`compute_s`) plus every collective's modelled time."""
        return None if self.compute_s is None else self.compute_s + self.comm_s

    def phases(self) -> list[list[PodCollective]]:
        """Each all-reduce across slices as the compiled program has it, in the order it runs:
        [the reduction inside each slice, each DCN send and its recv, the all-gathers inside
        each slice after] (:mod:`pmapviz.core.pods.slicephases` reads them from the data
        flow; libtpu 0.0.42 chose a reduce-scatter on v5e:2x4 slices, an all-reduce on v5e:4x4)."""
        by_name = {c.name: c for c in self.collectives}
        return [[by_name[n] for n in names] for names in self.phase_names]

    @property
    def total_s(self) -> float | None:
        """The compiler's estimate plus the model's communication (None without an estimate)."""
        return None if self.optimal_s is None else self.optimal_s + self.comm_s

    def hbm_words(self) -> str:
        """'15.75 GiB the compiler allows a device (16.00 GiB published)': the allowance the
        fit check uses, the published figure beside it."""
        if not self.published_hbm_bytes:
            return f"{fmt_gib(self.hbm_bytes)} a device"
        return (
            f"{fmt_gib(self.hbm_bytes)} the compiler allows a device "
            f"({fmt_gib(self.published_hbm_bytes)} published)"
        )

    def fit_words(self) -> str:
        """'fits: 2.4 MiB of 15.75 GiB the compiler allows a device (16.00 GiB published)' or
        'does not fit, by 3.4 GiB; ...'."""
        peak, hbm = self.peak_bytes, self.hbm_bytes
        if self.refusal:
            return (
                f"does not fit at batch {self.asked_batch:,}: {self.refusal}. Shown instead: "
                f"batch {self.batch:,}, the largest that fits ({self.batch_words}), "
                f"{fmt_gib(peak)} a device at peak, of the {self.hbm_words()}"
            )
        if self.fits:
            return f"fits: {fmt_gib(peak)} of {self.hbm_words()}"
        words = f"does not fit, by {fmt_gib(peak - hbm)}: {fmt_gib(peak)} of {self.hbm_words()}"
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
        out["ici_s"], out["dcn_s"] = self.ici_s, self.dcn_s
        out["network_bytes"] = self.network_bytes()
        out["compute_s"], out["step_s"] = self.compute_s, self.step_s
        out["phases"] = [[c.name for c in p] for p in self.phases()]
        return out

    def lines(self) -> list[str]:
        """The report as terminal text."""
        est = (
            fmt_seconds(self.optimal_s)
            if self.optimal_s is not None
            else "none (libtpu has no cost model for it)"
            if self.roofline_s is None
            else f"none from libtpu; {fmt_seconds(self.roofline_s)} by the {self.roofline_how}"
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
        if self.slices > 1:
            out += self._network_lines()
        for c in self.collectives:
            where = f" [{c.network}]" if self.slices > 1 else ""
            out.append(
                f"  {c.kind}{where} {c.shape} ({fmt_gib(c.bytes)}): {len(c.groups)} group(s) of "
                f"{c.group_size}, {c.crossing} crossing hosts; {fmt_seconds(c.model_s)} "
                f"({c.model_how}); {c.source_line or 'no source line'}"
            )
        return out

    def _network_lines(self) -> list[str]:
        """Multislice: bytes and time per network, and each all-reduce across slices in its
        phases, every figure from this report's collectives."""
        sent = self.network_bytes()
        out = [
            f"slices: {self.slices} over the data-center network (DCN), {self.hosts} hosts; "
            f"each device sends {fmt_gib(sent['ICI'])} over ICI ({fmt_seconds(self.ici_s)}, "
            f"model) and {fmt_gib(sent['DCN'])} over DCN ({fmt_seconds(self.dcn_s)}, "
            f"{self.dcn_how or 'model'})",
            f"one step (compute + HBM, then every collective added): {fmt_seconds(self.step_s)}",
        ]
        phases = self.phases()
        for k, phase in enumerate(phases, start=1):
            steps, n = [], 0
            for c in phase:
                if c.kind == "recv" and steps:  # the send's partner: one phase
                    steps[-1] = steps[-1].replace("send ", "send + recv ", 1)
                    continue
                n += 1
                steps.append(
                    f"{n}. {c.kind} {c.shape}, {fmt_gib(c.moved_bytes)} a device, "
                    f"{_WHERE[c.network]} ({c.network})"
                )
            which = f" ({k} of {len(phases)})" if len(phases) > 1 else ""
            out.append(f"all-reduce across slices{which}, as the HLO has it: {'; '.join(steps)}")
        return out
