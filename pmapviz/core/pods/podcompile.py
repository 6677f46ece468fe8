"""Compile a program for a pod and read everything the compiled program says.

``program.lower(pod, batch).lowered.compile()`` with libtpu, on this machine: nothing runs on
the slice (there is none). From the compiled program: ``memory_analysis()`` per device,
``cost_analysis()`` (FLOPs, bytes accessed, ``optimal_seconds``: the compiler's estimate of
compute and HBM time, negative where libtpu has no cost model, e.g. v6e), and the collectives of
its HLO (:func:`pmapviz.core.xla.hlo.parse_hlo`) with their groups mapped to the slice's chips
and timed by :mod:`commmodel`.

Budgets: a compile is an action like any other. It holds :data:`COMPILE_BYTES` of host memory
in the server's pool while it runs (measured: libtpu's load and the first two 256-chip compiles
in a fresh process, your f on a 16x16 mesh and the training step, grow it by 0.24 GB at their
peak; later compiles by 10-40 MB; ``tests/core/pods/test_podcompile.py`` measures it again),
compiles take turns (:data:`_TURN`), and results are kept (:data:`_KEEP` of them) so a page
that reruns does not compile again.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict

from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.devices import compilecache
from pmapviz.core.pods import (
    commmodel,
    compiledinputs,
    dcnmodel,
    megascale,
    podtopology,
    slicephases,
)
from pmapviz.core.pods.podprograms import Lowered, PodProgram
from pmapviz.core.pods.podreport import GIB, PodCollective, PodReport, fmt_gib
from pmapviz.core.pods.podtopology import Pod
from pmapviz.core.running.programanalysis import cost_of, estimate_seconds
from pmapviz.core.xla.hlo import HloCollective, parse_hlo

COMPILE_BYTES = 512 * 1024**2  # host memory one compile may take (see the module's docstring)
_TURN = threading.Lock()
_KEEP = 64
_KEPT: OrderedDict[tuple, PodReport] = OrderedDict()


class PodError(ValueError):
    """The program does not compile for this slice; the message says why and what to change."""


class DoesNotFit(PodError):
    """The compiler refused the program: it needs more HBM than a chip has."""

    def __init__(self, message: str, words: str, need: int = 0, allowed: int = 0):
        super().__init__(message)
        self.words = words  # 'HLO temporaries need 17.29 GiB; the compiler allows 15.75 GiB ...'
        self.need, self.allowed = need, allowed  # bytes, from the compiler's words


# libtpu: "... the total memory required for HLO temporaries (17.29G) exceeds available HBM
# (15.75G)"; its G is GiB (a v5e chip's 16 GiB less what the runtime keeps). Just above the
# allowance it words it otherwise: "Ran out of memory in memory space hbm. Used 15.75G of 15.75G
# hbm. Exceeded hbm capacity by 25.0K." (benchmarks/hbm_allowance.py prints both)
_HBM = re.compile(r"required for ([^(]*)\(([0-9.]+)G\) exceeds available HBM \(([0-9.]+)G\)")
_HBM_NEAR = re.compile(
    r"Used [0-9.]+G of ([0-9.]+)G hbm\. Exceeded hbm capacity by ([0-9.]+)([KMG])"
)
_UNIT = {"K": 1024, "M": 1024**2, "G": GIB}


def compile_for(
    program: PodProgram, topology: str, find_batch: bool = True, multislice: bool = False
) -> PodReport:
    """``program`` compiled for ``topology`` (e.g. 'v5e:4x4'; with ``multislice``, also several
    slices: '2 x v5e:4x4'), kept for the next call; where it does not fit and has a batch, with
    the largest batch that does."""
    pod = podtopology.load(topology, multislice)
    key = (program.key, program.label, program.sizes, program.batch, pod.name, find_batch)
    if key in _KEPT:
        _KEPT.move_to_end(key)
        return _KEPT[key]
    try:
        report = _compile_held(program, pod)
    except DoesNotFit as err:
        if not find_batch or program.batch is None:
            raise PodError(
                f"{err} This program has no batch to shrink: make its inputs smaller."
            ) from None
        report = _refused(program, pod, err)
    if find_batch and not report.fits and not report.refusal:
        report = _with_largest_batch(program, pod, report)
    _KEPT[key] = report
    while len(_KEPT) > _KEEP:
        _KEPT.popitem(last=False)
    return report


def _compile_held(program: PodProgram, pod: Pod) -> PodReport:
    need = memorymodel.Need.host_only(COMPILE_BYTES)
    with memorypool.reserve(need, f"compiling for {pod.name}"), _TURN:
        return compile_once(program, pod)


def compile_once(program: PodProgram, pod: Pod) -> PodReport:
    """One compile, no cache, no budget: the caller holds them."""
    t = time.perf_counter()
    try:
        low = program.lower(pod, program.batch)
        # never into the persistent compilation cache: an executable compiled for devices that
        # are not there cannot be read back (JAX warns on every later hit), so none is written
        with compilecache.kept_out():
            compiled = low.lowered.compile()
    except Exception as err:  # noqa: BLE001  (the compiler's refusal is the message)
        raise PodError(_refusal(err, program, pod)) from None
    return report_of(program, pod, low, compiled, time.perf_counter() - t)


def described(program: PodProgram, low: Lowered) -> dict:
    """A report's fields that say what was compiled, every one written from the lowered
    program (its arguments, the batch they carry, what pmapviz changed): the one source of
    every label, line and ``to_dict()`` field that names the program."""
    return {
        "program": program.key,
        "title": program.label,
        "label": compiledinputs.program_text(program.label, low.inputs),
        "code": program.code,
        "batch": low.batch,
        "asked_batch": program.batch if low.batch is not None else None,
        "batch_words": program.batch_words,
        "inputs": low.inputs,
        "changes": low.changes,
        "notes": low.notes,
    }


def report_of(program: PodProgram, pod: Pod, low: Lowered, compiled, compile_s: float):
    """Everything the compiled program says, as a :class:`PodReport`."""
    cost = cost_of(compiled)
    hlo = compiled.as_text()
    parsed, lines = parse_hlo(hlo), hlo.splitlines()
    gen = pod.topology.generation
    orders = pod.slice_order(low.order)
    optimal = estimate_seconds(compiled)
    roof, roof_how = (
        dcnmodel.roofline_seconds(cost.flops, cost.bytes_accessed, gen)
        if optimal is None
        else (None, "")
    )
    found = [(c.line, _collective(c, orders, pod, lines[c.line - 1])) for c in parsed.collectives]
    unparsed = list(parsed.unparsed)
    for t in megascale.transfers(hlo):
        try:
            found.append((t.line, _transfer(t, orders, pod)))
        except megascale.Unreadable as err:
            unparsed.append((t.line, lines[t.line - 1].strip(), str(err)))
    collectives = tuple(c for _, c in sorted(found, key=lambda lc: lc[0]))
    return PodReport(
        topology=pod.name,
        summary=pod.summary(),
        generation=gen.name,
        chips=pod.chips,
        mesh_axes=low.mesh_axes,
        argument_bytes=cost.argument_bytes,
        output_bytes=cost.output_bytes,
        temp_bytes=cost.temp_bytes,
        alias_bytes=cost.alias_bytes,
        code_bytes=cost.generated_code_bytes,
        hbm_bytes=gen.compiler_hbm.allowed_bytes,
        published_hbm_bytes=gen.hbm_bytes // pod.devices_per_chip,
        flops=cost.flops,
        bytes_accessed=cost.bytes_accessed,
        optimal_s=optimal,
        collectives=collectives,
        phase_names=slicephases.phases(collectives, hlo) if pod.n_slices > 1 else (),
        unparsed=tuple(sorted(unparsed)),
        compile_s=compile_s,
        hlo=hlo,
        mesh_order=low.order,
        slices=pod.n_slices,
        hosts=pod.n_hosts,
        roofline_s=roof,
        roofline_how=roof_how,
        dcn_how=dcnmodel.dcn_words(gen) if pod.n_slices > 1 else "",
        **described(program, low),
    )


def _refusal(err: Exception, program: PodProgram, pod: Pod) -> str:
    said = str(err).strip()
    if m := _HBM.search(said):
        need, allowed = round(float(m[2]) * GIB), round(float(m[3]) * GIB)
        words = (
            f"{m[1].strip()} need {fmt_gib(need)}; the compiler allows {fmt_gib(allowed)} of "
            "HBM a device"
            + (" (both as the compiler rounds them: it needs more)" if need <= allowed else "")
        )
        raise DoesNotFit(
            f"{program.asked_text()} does not fit on {pod.name}: {words}.", words, need, allowed
        )
    if m := _HBM_NEAR.search(said):
        allowed = round(float(m[1]) * GIB)
        over = round(float(m[2]) * _UNIT[m[3]])
        words = (
            f"the program needs {fmt_gib(over)} more than the {fmt_gib(allowed)} of HBM the "
            "compiler allows a device"
        )
        raise DoesNotFit(
            f"{program.asked_text()} does not fit on {pod.name}: {words}.",
            words,
            allowed + over,
            allowed,
        )
    first = (said.splitlines() or [type(err).__name__])[0][:240]
    if "partition" in said or "divid" in said or "tiling" in said:
        fix = (
            f"Pick a slice whose device count ({pod.n_devices} here) divides the sharded "
            "axes, or change their sizes."
        )
    else:
        fix = "Change the program so that JAX accepts it on this machine first."
    return (
        f"{program.asked_text()} does not compile for {pod.name} ({pod.n_devices} devices): "
        f"{first}. {fix}"
    )


_ALGORITHM = re.compile(
    r'"collective_algorithm_config":\{"emitter":"(\w+)"(?:,"strategy":"(\w+)")?'
)


def algorithm(hlo_line: str) -> str:
    """The collective algorithm the TPU compiler picked, from the instruction's backend_config
    ('RotatedPincerEmitter, UniDirectionNDRingStrategy'), or ''."""
    m = _ALGORITHM.search(hlo_line)
    return ", ".join(g for g in m.groups() if g) if m else ""


def _collective(
    c: HloCollective, orders: tuple[tuple[int, ...], ...], pod: Pod, hlo_line: str = ""
) -> PodCollective:
    """A parsed collective with its HLO device numbers turned into the slice's device ids: on
    several slices the HLO is one slice's program, so each group is there once per slice
    (``orders[s][k]``: device k of slice s, :meth:`Pod.slice_order`)."""
    by_id = {chip.id: chip for chip in pod.chips}
    per_slice = lambda group: [tuple(o[k] for k in group) for o in orders]  # noqa: E731
    if c.source_target_pairs is not None:
        groups = tuple(p for pair in c.source_target_pairs for p in per_slice(pair))
        coords = [(by_id[a].coords, by_id[b].coords) for a, b in groups]
        seconds, how = commmodel.collective_seconds(c.kind, c.bytes, [], pod.topology, pairs=coords)
        moved = float(c.bytes)
    else:
        groups = tuple(g for group in c.replica_groups or () for g in per_slice(group))
        coords = [[by_id[d].coords for d in g] for g in groups]
        seconds, how = commmodel.collective_seconds(c.kind, c.bytes, coords, pod.topology)
        moved = commmodel.bytes_moved(c.kind, c.bytes, max((len(g) for g in groups), default=0))
    crossing = sum(1 for g in groups if len({by_id[d].host for d in g}) > 1)
    where = megascale.network(groups, {chip.id: chip.slice for chip in pod.chips})
    return PodCollective(
        c.kind,
        c.name,
        c.shape_text,
        c.bytes,
        groups,
        crossing,
        c.source_line,
        c.line,
        seconds,
        how,
        algorithm(hlo_line),
        where,
        moved,
    )


def _transfer(t: megascale.Transfer, orders: tuple[tuple[int, ...], ...], pod: Pod):
    """A send or recv between slices, its groups as device ids and its time by the DCN model
    (on the send; its recv runs at the same time and is counted there)."""
    groups = megascale.groups(t, orders)
    by_id = {chip.id: chip for chip in pod.chips}
    moved = megascale.bytes_moved(t, {chip.id: chip.slice for chip in pod.chips})
    if t.kind == "send":
        seconds, how = dcnmodel.dcn_seconds(moved, pod.topology.generation)
    else:
        seconds, how = 0.0, f"received while {t.rendezvous}'s send runs (timed there)"
    return PodCollective(
        t.kind,
        t.name,
        t.shape_text,
        t.bytes,
        groups,
        sum(1 for g in groups if len({by_id[d].host for d in g}) > 1),
        None,
        t.line,
        seconds,
        how,
        "",
        megascale.network(groups, {chip.id: chip.slice for chip in pod.chips}),
        moved,
        t.transfer_type,
        t.rendezvous,
    )


# ---------------------------------------------------------------- the largest batch that fits
def _fits(program: PodProgram, pod: Pod, batch: int) -> PodReport | None:
    """The compile at ``batch``, or None where the compiler refuses it for HBM."""
    try:
        r = _compile_held(program.at_batch(batch), pod)
    except DoesNotFit:
        return None
    return r if r.fits else None


def _refused(program: PodProgram, pod: Pod, err: DoesNotFit) -> PodReport:
    """The batch asked for ran out of HBM: the largest batch that compiles, found by halving
    until one fits, then bisecting (at most 8 compiles), shown with the refusal's words."""
    from dataclasses import replace

    step = max(1, program.batch_step(pod))
    down = lambda b: max(step, b // step * step)  # noqa: E731
    hi, lo, best = program.batch, down(program.batch // 2), None
    for _ in range(8):
        if best is None:
            best = _fits(program, pod, lo)
            if best is None:
                if lo == step:
                    raise PodError(f"{err} Even a batch of {step:,} does not fit.") from None
                hi, lo = lo, down(lo // 2)
                continue
        mid = down((lo + hi) // 2)
        if mid <= lo or hi - lo <= max(step, hi // 50):
            break
        found = _fits(program, pod, mid)
        if found is None:
            hi = mid
        else:
            lo, best = mid, found
    clipped = compiledinputs.batch_clipped(program.batch, best.batch, err.words)
    return replace(
        best,
        largest_batch=best.batch,
        asked_batch=program.batch,
        refusal=err.words,
        changes=(*best.changes, clipped),
    )


def _with_largest_batch(program: PodProgram, pod: Pod, report: PodReport) -> PodReport:
    from dataclasses import replace

    if program.batch is None:
        note = "this program has no batch to shrink: make its inputs smaller"
        return replace(report, largest_note=note)
    found = largest_batch(program, pod, report)
    if found is None:
        return replace(report, largest_note="even one batch step does not fit: shrink the model")
    return replace(report, largest_batch=found)


def largest_batch(program: PodProgram, pod: Pod, report: PodReport) -> int | None:
    """The largest batch (a multiple of the program's batch step) whose compile fits: memory is
    close to linear in the batch, so two compiles give the line, and compiles check it."""
    step = max(1, program.batch_step(pod))
    b1 = program.batch
    b2 = max(step, (b1 // 2) // step * step)
    if b2 >= b1:
        return None
    low = _compile_held(program.at_batch(b2), pod)
    slope = (report.peak_bytes - low.peak_bytes) / (b1 - b2)
    if slope <= 0:
        return b2 if low.fits else None
    guess = int((low.hbm_bytes - low.peak_bytes) / slope) + b2
    guess = max(step, guess // step * step)
    for _ in range(4):  # the line is close; each miss steps down 3 %
        if _compile_held(program.at_batch(guess), pod).fits:
            return guess
        guess = max(step, int(guess * 0.97) // step * step)
    return b2 if low.fits else None
