"""The typed program: one mode of a program, every equation of its jaxpr in order with its
primitive, source line and output types as JAX prints them, and per equation what the compiled
program has for it: its collectives and, for Auto, the sharding XLA chose for its result.

:func:`typed` traces the mode (``jax.jit(f).trace``: the jaxpr), walks it
(:mod:`pmapviz.features.types.typedeqns`), compiles it once
(:mod:`pmapviz.features.types.typedcompile`, holding its estimate in the memory pool) and
matches the compiled module to the equations (:mod:`pmapviz.features.types.typedmatch`).
Results are plain text and numbers, kept per (program, mode, devices) in a bounded cache: a
page that shows one mode compiles that mode only, and another mode costs its own compile when
it is opened. JAX's refusal (a ShardingTypeError under Explicit axes, a check_vma error in
Manual) is the answer for that mode, in JAX's words.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import first_line
from pmapviz.core.budgets.memorymodel import BudgetError
from pmapviz.core.devices import devicefacts
from pmapviz.core.xla.hlo import HloCollective
from pmapviz.features.meshes.meshspecs import Mesh
from pmapviz.features.types import chosenspec, typedcompile, typedeqns, typedmatch, typedmodes
from pmapviz.features.types.chosenspec import Chosen
from pmapviz.features.types.typedeqns import TypedEqn
from pmapviz.features.types.typedsources import TypedSource

KEEP = 48  # typed views kept (plain text: a few KB each)
_KEPT: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class TypedRow:
    """One equation, its collectives in the compiled program and (Auto) what XLA chose for
    its outputs."""

    eqn: TypedEqn
    collectives: tuple[HloCollective, ...] = ()
    chosen: tuple[Chosen, ...] = ()

    def to_dict(self) -> dict:
        """The row as plain values."""
        return {
            **self.eqn.to_dict(),
            "collectives": [collective_dict(c) for c in self.collectives],
            "chosen": [c.text for c in self.chosen],
        }


def collective_dict(c: HloCollective) -> dict:
    """A collective as plain values: kind, operand, bytes per device, groups, HLO name."""
    return {
        "kind": c.kind,
        "operand": c.shape_text,
        "bytes": c.bytes,
        "groups": None if c.replica_groups is None else [list(g) for g in c.replica_groups],
        "pairs": None
        if c.source_target_pairs is None
        else [list(p) for p in c.source_target_pairs],
        "hlo": c.name,
        "source_line": c.source_line,
    }


@dataclass(frozen=True)
class TypedView:
    """One mode of a program, typed: its inputs' and outputs' types, its equations with
    their communication, the collectives that name no equation, and JAX's refusal where there
    is one (``error``, with ``stage``: 'trace' or 'compile')."""

    mode: str
    label: str
    mesh: Mesh
    code: str
    in_types: tuple[str, ...] = ()
    out_types: tuple[str, ...] = ()
    rows: tuple[TypedRow, ...] = ()
    unmatched: tuple[HloCollective, ...] = ()
    left_out: int = 0
    error: str | None = None
    stage: str = ""
    propagated: bool = False  # Auto: XLA's choices were read
    trace_s: float = 0.0
    compile_s: float = 0.0
    memory: tuple[tuple[str, int], ...] = ()

    @property
    def mesh_words(self) -> str:
        """The mesh as this mode builds it, in words."""
        return typedmodes.mesh_words(self.mesh, self.mode)

    @property
    def collectives(self) -> tuple[HloCollective, ...]:
        """Every collective of the compiled program: the equations', then the unmatched."""
        return tuple(c for r in self.rows for c in r.collectives) + self.unmatched

    def to_dict(self) -> dict:
        """The view as plain values."""
        return {
            "mode": self.mode,
            "program": self.label,
            "mesh": {"shape": list(self.mesh.shape), "axis_names": list(self.mesh.names)},
            "mesh_words": self.mesh_words,
            "code": self.code,
            "in_types": list(self.in_types),
            "out_types": list(self.out_types),
            "equations": [r.to_dict() for r in self.rows],
            "unmatched_collectives": [collective_dict(c) for c in self.unmatched],
            "left_out": self.left_out,
            "error": self.error,
            "stage": self.stage or None,
            "compiler_choices_read": self.propagated,
            "trace_s": self.trace_s,
            "compile_s": self.compile_s,
            "memory_per_device": dict(self.memory),
        }


def typed(source: TypedSource, mode: str) -> TypedView:
    """``source`` in ``mode``, typed and compiled (cached when the source has a key)."""
    typedmodes.check_mode(mode)
    devices = devicefacts.local_devices_for_work()
    key = None
    if source.key is not None:
        key = (source.key, mode, tuple(str(d) for d in devices[: source.mesh.devices]))
        with _LOCK:
            if key in _KEPT:
                _KEPT.move_to_end(key)
                return _KEPT[key]
    view, keep = _typed(source, mode, devices)
    if key is not None and keep:
        with _LOCK:
            _KEPT[key] = view
            while len(_KEPT) > KEEP:
                _KEPT.popitem(last=False)
    return view


def _typed(source: TypedSource, mode: str, devices: list) -> tuple[TypedView, bool]:
    """(the view, whether to keep it: not when the memory budget refused the compile or the
    wait for it ended: the next visit tries again)."""
    blank = TypedView(mode, source.label, source.mesh, "")
    choices = mode == "auto"
    t = time.perf_counter()
    try:
        program = source.mode(mode, devices)
        blank = TypedView(mode, source.label, source.mesh, program.code)
        traced = typedcompile.trace(program.fn, program.args, program.mesh, choices)
        walked = typedeqns.walk(traced.jaxpr)
    except Exception as err:  # noqa: BLE001 - JAX's refusal is this mode's answer
        return _failed(blank, err, "trace"), True
    trace_s = time.perf_counter() - t
    base = TypedView(
        mode,
        source.label,
        source.mesh,
        program.code,
        walked.in_types,
        walked.out_types,
        tuple(TypedRow(e) for e in walked.eqns),
        left_out=walked.left_out,
        trace_s=trace_s,
    )
    try:
        compiled = typedcompile.compile_mode(traced, program.mesh, len(walked.eqns), choices)
    except (BudgetError, queues.WaitTimeout, queues.Cancelled) as err:  # memory: not kept
        return _failed(base, err, "compile"), False
    except Exception as err:  # noqa: BLE001 - the compiler's refusal, said as it says it
        return _failed(base, err, "compile"), True
    return _matched(base, walked.eqns, compiled, program.mesh), True


def _failed(view: TypedView, err: BaseException, stage: str) -> TypedView:
    return TypedView(
        view.mode,
        view.label,
        view.mesh,
        view.code,
        view.in_types,
        view.out_types,
        view.rows,
        left_out=view.left_out,
        error=f"{type(err).__name__}: {first_line(err)}",
        stage=stage,
        trace_s=view.trace_s,
    )


def _matched(base: TypedView, eqns, compiled, mesh) -> TypedView:
    comm, unmatched = typedmatch.collectives_by_eqn(
        eqns, compiled.collectives, compiled.collective_where
    )
    picked = typedmatch.chosen_by_eqn(eqns, compiled.chosen) if compiled.propagated else {}
    rows = []
    for e in eqns:
        chosen = tuple(
            chosenspec.read(i.sharding, mesh, len(i.dims or ())) for i in picked.get(e.index, ())
        )
        rows.append(TypedRow(e, tuple(comm.get(e.index, ())), chosen))
    return TypedView(
        base.mode,
        base.label,
        base.mesh,
        base.code,
        base.in_types,
        base.out_types,
        tuple(rows),
        tuple(unmatched),
        base.left_out,
        propagated=compiled.propagated,
        trace_s=base.trace_s,
        compile_s=compiled.compile_s,
        memory=compiled.memory,
    )


def forget() -> None:
    """Empty the cache (tests)."""
    with _LOCK:
        _KEPT.clear()
