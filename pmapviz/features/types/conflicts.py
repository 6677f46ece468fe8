"""Sharding conflicts, played: under Explicit axes (``jax.make_mesh`` on this server's devices), an
operation whose operand specs the user picks, JAX's own verdict on it, and every legal way to
write it compiled and compared.

:func:`ask`: ``jax.make_jaxpr`` on ``ShapeDtypeStruct`` inputs under ``jax.set_mesh`` (nothing is
allocated): the result's type as JAX infers it (``f32[64@d,16]``), or JAX's exception verbatim,
with a plain explanation in the case's own sizes and axes (:func:`explain`). :func:`study`: the
call as written where JAX accepts it, each ``out_sharding=`` spec and each ``jax.reshard`` of one
operand JAX accepts, compiled on this server's mesh (collectives by
:func:`pmapviz.core.xla.hlo.parse_hlo`, bytes per device, ``memory_analysis()``) and, with a TPU
slice (``?pod=v5e:2x4``), by libtpu for it (:func:`pmapviz.core.pods.podcompile.compile_for`: the
compiler's ``optimal_seconds`` and the communication model). The compiles here hold
:data:`COMPILE_BYTES` in the server's memory pool; studies are kept (:data:`KEEP`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.devices import compilecache, devicefacts
from pmapviz.core.pods import podcompile, podprograms, podtopology
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podreport import PodReport
from pmapviz.core.running import jaxsays, pmapcompile
from pmapviz.core.running.programanalysis import Cost, cost_of
from pmapviz.core.xla.hlo import KINDS, HloCollective, parse_hlo
from pmapviz.features.meshes import meshplacement, meshspecs
from pmapviz.features.meshes.meshspecs import Entry, Mesh
from pmapviz.features.types import conflictsettings
from pmapviz.features.types.conflictsettings import Case

AS_WRITTEN, OUT, RESHARD = "as written", "out_sharding", "reshard"
MAX_OUT = 6  # out_sharding choices compiled (the fewest split dimensions first)
MAX_RESHARDS = 3  # reshards compiled per operand (the nearest specs first)
KEEP = 32  # studies kept
# measured: a study's compiles (7 to 12 of them, operands up to f32[1048576,4096]) grew a fresh
# process's peak RSS, JAX already warm, by 22-30 MiB; twice the most, rounded up
COMPILE_BYTES = 64 * 2**20
_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple, Study] = OrderedDict()


class ConflictError(ValueError):
    """The case cannot be studied here (more devices than this server has)."""


# ---------------------------------------------------------------- the case and its choices
@dataclass(frozen=True)
class Choice:
    """One way to write the case: as written, with ``out_sharding=spec``, or with operand
    ``operand`` (0: a, 1: b) resharded to ``spec`` first."""

    kind: str
    spec: tuple[Entry, ...] = ()
    operand: int = -1

    def code(self, case: Case) -> str:
        """The one line of code this choice is."""
        if self.kind == OUT:
            return case.expression(out=conflictsettings.p_text(self.spec))
        if self.kind == RESHARD:
            moved = f"jax.reshard({'ab'[self.operand]}, {conflictsettings.p_text(self.spec)})"
            return case.expression(*((moved, "b") if self.operand == 0 else ("a", moved)))
        return case.expression()


def program(case: Case, choice: Choice) -> Callable:
    """The choice as a function of (a, b), built from the case's fields (nothing typed runs)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    extra = {"out_sharding": P(*choice.spec)} if choice.kind == OUT else {}

    def f(a, b):
        if choice.kind == RESHARD and choice.operand == 0:
            a = jax.reshard(a, P(*choice.spec))
        if choice.kind == RESHARD and choice.operand == 1:
            b = jax.reshard(b, P(*choice.spec))
        if case.op == "add":
            return a + b
        if case.op == "matmul":
            return jnp.matmul(a, b, **extra)
        return jnp.einsum(case.eq, a, b, **extra)

    return f


def structs(case: Case, mesh) -> list:
    """The operands as ``ShapeDtypeStruct``s placed by their specs on the JAX mesh ``mesh``."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    return [
        jax.ShapeDtypeStruct(
            s, jnp.dtype(case.dtype), sharding=NamedSharding(mesh, PartitionSpec(*p))
        )
        for s, p in zip(case.shapes, case.specs, strict=True)
    ]


def _trace(case: Case, choice: Choice, mesh):
    """The result's aval as JAX traces the choice (raises what JAX raises)."""
    import jax

    with jax.set_mesh(mesh):
        closed = jax.make_jaxpr(program(case, choice))(*structs(case, mesh))
    return closed.jaxpr.outvars[0].aval


def operand_types(case: Case, mesh) -> tuple[str, str]:
    """a's and b's types as JAX writes them ('f32[64,32@d]'), read from a trace."""
    import jax

    with jax.set_mesh(mesh):
        closed = jax.make_jaxpr(lambda a, b: (a, b))(*structs(case, mesh))
    a, b = (v.aval.str_short(short_dtypes=True) for v in closed.jaxpr.invars)
    return a, b


# ---------------------------------------------------------------- JAX's verdict
@dataclass(frozen=True)
class Verdict:
    """JAX's verdict on the call as written: the result's type, or its exception."""

    out_type: str  # as JAX writes it ('' where it refuses)
    out_spec: tuple[Entry, ...]  # the result's spec as JAX infers it (() where it refuses)
    said: jaxsays.JaxSaid | None  # JAX's exception, verbatim (None: accepted)
    explanation: str = ""  # in plain words, the case's own sizes and axes

    @property
    def accepted(self) -> bool:
        """Whether JAX accepts the call as written."""
        return self.said is None


def ask(case: Case, mesh) -> Verdict:
    """JAX's verdict, from a real trace on abstract inputs (never raises)."""
    try:
        aval = _trace(case, Choice(AS_WRITTEN), mesh)
    except Exception as err:  # noqa: BLE001  (JAX's refusal is the answer)
        said = jaxsays.said(err)
        return Verdict("", (), said, explain(case, said.message))
    spec = tuple(aval.sharding.spec)
    spec += (None,) * (len(aval.shape) - len(spec))
    return Verdict(aval.str_short(short_dtypes=True), spec, None)


def explain(case: Case, message: str) -> str:
    """JAX's refusal in plain words, from the case's own letters, sizes and axes."""
    la, lb, lo = case.letters()
    on_a, on_b = case.axes_by_letter(0), case.axes_by_letter(1)
    size = dict(zip(la, case.shapes[0], strict=True)) | dict(zip(lb, case.shapes[1], strict=True))
    read = f"Reading {conflictsettings.operation_text(case.op, case.eq)} as {la},{lb}->{lo}: "
    read = read if case.op == "matmul" else ""
    summed = [c for c in la if c in lb and c not in lo and on_a[c] & on_b[c]]
    if "ambiguous" in message and summed:
        c = summed[0]
        axes = ", ".join(sorted(on_a[c] & on_b[c]))
        return (
            f"{read}a and b both split the dimension the product sums over ({c!r}, {size[c]:,} "
            f"long) over {axes}: each device multiplies its own slices and holds a partial sum "
            "of the whole result. Adding the partial sums takes communication, and JAX will not "
            f"choose where the sums end: whole on every device, or split over {axes} along one "
            "of the result's dimensions. Say which with out_sharding=, or reshard one operand."
        )
    clash = [
        (x, ca, cb)
        for ca in lo
        for cb in lo
        if ca != cb
        for x in sorted(on_a.get(ca, set()) & on_b.get(cb, set()))
    ]
    if "illegally sharded" in message and clash:
        x, ca, cb = clash[0]
        dim = lambda c: f"dimension {la.index(c)}" if case.op == "add" else f"dimension {c!r}"  # noqa: E731
        fix = "reshard one operand" + (
            "" if case.op == "add" else ", or say how to lay out the result with out_sharding="
        )
        return (
            f"{read}a splits the result's {dim(ca)} over {x} and b splits the result's "
            f"{dim(cb)} over {x} too, so the result would be split over {x} twice; a "
            f"mesh axis splits one dimension of an array at most. To fix it, {fix}."
        )
    return "JAX refuses this call under Explicit axes; its own words follow."


# ---------------------------------------------------------------- what each choice compiles to
@dataclass(frozen=True)
class Moved:
    """One collective of a compiled choice."""

    kind: str  # all-reduce, all-gather, ...
    shape: str  # its operand, 'f32[64,16]'
    bytes: int  # operand bytes per device
    groups: int  # groups (a collective-permute: pairs)
    group_size: int


@dataclass(frozen=True)
class Resolution:
    """One legal choice, compiled on this server's mesh (and, with a target, for a slice)."""

    choice: Choice
    code: str
    out_type: str  # the result's type as JAX infers it
    collectives: tuple[Moved, ...]
    unread: tuple[str, ...]  # collectives parse_hlo could not read: 'all-reduce: why'
    cost: Cost  # per device: memory_analysis() and cost_analysis()
    compile_s: float
    pod: PodReport | None = None  # compiled for the slice (its HLO text left out)
    pod_error: str = ""  # libtpu's refusal

    @property
    def sent_bytes(self) -> int:
        """Operand bytes of every collective, per device."""
        return sum(c.bytes for c in self.collectives)


def _moved(c: HloCollective) -> Moved:
    groups = c.source_target_pairs if c.source_target_pairs is not None else c.replica_groups
    groups = groups or ()
    size = max((len(g) for g in groups), default=0)
    return Moved(c.kind, c.shape_text, c.bytes, len(groups), size)


def _unread(raw: str, why: str) -> str:
    kind = re.search(rf"\s({'|'.join(KINDS)})(?:-start)?\(", raw)
    return f"{kind[1] if kind else 'a collective'}: {why}"


def compile_here(case: Case, choice: Choice, out_type: str, mesh) -> Resolution:
    """The choice compiled on ``mesh`` (this server's devices), read back."""
    import jax

    with jax.set_mesh(mesh), compilecache.kept_out():
        t = time.perf_counter()
        compiled = jax.jit(program(case, choice)).lower(*structs(case, mesh)).compile()
        took = time.perf_counter() - t
    parsed = parse_hlo(compiled.as_text())
    return Resolution(
        choice,
        choice.code(case),
        out_type,
        tuple(_moved(c) for c in parsed.collectives),
        tuple(_unread(raw, why) for _, raw, why in parsed.unparsed),
        cost_of(compiled),
        took,
    )


def choices(case: Case, verdict: Verdict) -> list[Choice]:
    """The choices to try, in order: each out_sharding (not the one JAX infers as written; add
    has none), then each reshard of a, then of b, the nearest specs first."""
    out = []
    if case.op != "add":
        out += [
            Choice(OUT, s)
            for s in conflictsettings.specs_on(case.mesh, case.out_shape)
            if not (verdict.accepted and s == verdict.out_spec)
        ]
    for k in (0, 1):
        own = case.specs[k]
        near = sorted(
            (s for s in conflictsettings.specs_on(case.mesh, case.shapes[k]) if s != own),
            key=lambda s, own=own: sum(x != y for x, y in zip(s, own, strict=True)),
        )
        out += [Choice(RESHARD, s, k) for s in near]
    return out


def legal(case: Case, verdict: Verdict, mesh) -> tuple[list[tuple[Choice, str]], int, int]:
    """The choices JAX accepts (with the result type it infers), within :data:`MAX_OUT` and
    :data:`MAX_RESHARDS`; how many it refused; how many legal ones were left out."""
    kept = [(Choice(AS_WRITTEN), verdict.out_type)] if verdict.accepted else []
    refused = left_out = 0
    counts: dict[tuple[str, int], int] = {}
    for choice in choices(case, verdict):
        try:
            aval = _trace(case, choice, mesh)
        except Exception:  # noqa: BLE001  (JAX refuses this choice too: counted)
            refused += 1
            continue
        slot = (choice.kind, choice.operand)
        counts[slot] = counts.get(slot, 0) + 1
        if counts[slot] > (MAX_OUT if choice.kind == OUT else MAX_RESHARDS):
            left_out += 1
            continue
        kept.append((choice, aval.str_short(short_dtypes=True)))
    return kept, refused, left_out


# ---------------------------------------------------------------- on a TPU slice
def pod_program(case: Case, choice: Choice) -> PodProgram:
    """The choice as a program :func:`podcompile.compile_for` compiles for a slice: ``case.mesh``
    (sized for the slice) with Explicit axes on its chips, laid out as ``jax.make_mesh`` would
    (``podprograms.on_mesh``)."""
    digest = hashlib.sha1(repr((case, choice)).encode()).hexdigest()[:12]
    inputs = [(s, case.dtype, tuple(p)) for s, p in zip(case.shapes, case.specs, strict=True)]
    return podprograms.on_mesh(
        f"conflict:{digest}",
        choice.code(case),
        choice.code(case),
        program(case, choice),
        lambda _b: inputs,
        axes=tuple(zip(case.mesh.names, case.mesh.shape, strict=True)),
        names=("a", "b"),
        explicit=True,
    )


def on_pod(case: Case, rows: list[Resolution], topology: str):
    """``rows`` with their figures on ``topology``, the slice's mesh, and '' or why there are
    none (one line). A choice libtpu refuses carries its words in ``pod_error``."""
    try:
        pod = podtopology.load(topology)
    except podtopology.PodUnavailable as err:
        return rows, None, str(err)
    mesh = conflictsettings.mesh_of(case.kind, pod.n_devices)
    for name, shape, spec in zip("ab", case.shapes, case.specs, strict=True):
        if found := meshspecs.problems(mesh, shape, spec, name):
            return rows, mesh, f"On {topology} ({mesh.text()}): {found[0].message} {found[0].fix}"
    there = replace(case, mesh=mesh)
    out = []
    for r in rows:
        try:
            report = podcompile.compile_for(pod_program(there, r.choice), topology, False)
        except podcompile.PodError as err:
            out.append(replace(r, pod_error=str(err)))
            continue
        out.append(replace(r, pod=replace(report, hlo="")))
    return out, mesh, ""


# ---------------------------------------------------------------- the study
@dataclass(frozen=True)
class Study:
    """A case, JAX's verdict, and every legal choice compiled."""

    case: Case
    devices: tuple[int, ...]  # the ids of the mesh's devices, in mesh order
    operand_types: tuple[str, str]  # as JAX writes them
    verdict: Verdict
    resolutions: tuple[Resolution, ...]
    refused: int  # choices JAX refuses too
    left_out: int  # legal choices not compiled (past MAX_OUT / MAX_RESHARDS)
    topology: str = ""
    pod_mesh: Mesh | None = None
    pod_problem: str = ""

    @property
    def timed(self) -> bool:
        """Whether every resolution has the compiler's time on the slice."""
        rows = self.resolutions
        return bool(rows) and all(r.pod is not None and r.pod.total_s is not None for r in rows)

    def best(self) -> int | None:
        """The best resolution's index: on a slice, the least compiler time plus communication
        model; else the fewest bytes sent per device, then the least peak memory (a row with a
        collective pmapviz could not read last: its bytes are not all known)."""
        rows = self.resolutions
        if not rows:
            return None
        if self.timed:
            key = lambda k: rows[k].pod.total_s  # noqa: E731
        else:
            key = lambda k: (bool(rows[k].unread), rows[k].sent_bytes, rows[k].cost.peak_bytes)  # noqa: E731
        return min(range(len(rows)), key=key)

    def best_rule(self) -> str:
        """What "best" means here, in words."""
        if self.timed:
            return f"best: the least TPU compiler time plus communication model on {self.topology}"
        return "best: the fewest collective bytes per device, then the least peak memory"

    def to_dict(self) -> dict:
        """Every field, as plain data."""
        return dataclasses.asdict(self)


def study(case: Case, topology: str = "") -> Study:
    """JAX's verdict and every legal choice compiled, on this server's first
    ``case.mesh.devices`` devices (and for ``topology``, where given); kept per case."""
    devices = devicefacts.local_devices_for_work()
    if case.mesh.devices > len(devices):
        raise ConflictError(
            f"The mesh {case.mesh.text()} needs {case.mesh.devices} devices and this server has "
            f"{len(devices)}: pick a mesh of this server's devices."
        )
    used = devices[: case.mesh.devices]
    key = (case, tuple(int(d.id) for d in used), topology)
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    found = _study(case, used, topology)
    with _LOCK:
        _KEPT[key] = found
        while len(_KEPT) > KEEP:
            _KEPT.popitem(last=False)
    return found


def _study(case: Case, devices: list, topology: str) -> Study:
    mesh = meshplacement.jax_mesh(case.mesh, devices)
    verdict = ask(case, mesh)
    kept, refused, left_out = legal(case, verdict, mesh)
    need = memorymodel.Need.host_only(COMPILE_BYTES)
    what = conflictsettings.operation_text(case.op, case.eq)
    with memorypool.reserve(need, f"compiling {len(kept)} ways to write {what}"):
        rows = [compile_here(case, c, t, mesh) for c, t in kept]
    pmapcompile.bound_jax_caches()  # the traces and jits of these choices, among the others
    pod_mesh, problem = None, ""
    if topology:
        rows, pod_mesh, problem = on_pod(case, rows, topology)
    ids = tuple(int(d.id) for d in mesh.devices.flat)
    return Study(
        case,
        ids,
        operand_types(case, mesh),
        verdict,
        tuple(rows),
        refused,
        left_out,
        topology,
        pod_mesh,
        problem,
    )
