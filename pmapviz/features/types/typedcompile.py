"""One mode of a program compiled once, and what the compiled module says about it: every
collective XLA emitted (:func:`pmapviz.core.xla.hlo.parse_hlo`) with the source position it
came from, each device's memory (``memory_analysis``), and for Auto the sharding the compiler
chose for every value.

Those choices are read from the module XLA's sharding propagation leaves, just before the SPMD
partitioner splits it per device (the compiled module has per-device shapes and keeps a
sharding only on its parameters). The compile itself writes that module out
(``compiler_options``: ``xla_dump_to`` a temporary folder, ``xla_dump_hlo_pass_re`` the
partitioning pass, whose "before" module it is): one compile, no second one. JAX keys its
persistent compilation cache without the dump options, so that compile is of a function named
afresh (:func:`renamed`) and kept out of the cache (``compilecache.kept_out``): a read from
the cache would write no module.

A compile holds its estimate (:func:`compile_need`) in the server's memory pool while it runs.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import tempfile
import time
import types
from dataclasses import dataclass

from pmapviz.core.budgets import compiledmemory, memorymodel, memorypool
from pmapviz.core.devices import compilecache
from pmapviz.core.xla.hlo import HloCollective, parse_hlo
from pmapviz.features.types import hlosource
from pmapviz.features.types.hlosource import HloInstr, Where

# host memory one compile holds: benchmarks/types_speed.py measures a 200-equation program's
# compile at 0.1-8 MiB of growth (Auto's most: its module written and read back); held with a
# wide margin for a process's first compiles and larger programs
COMPILE_BASE = 64 * memorymodel.MiB
COMPILE_PER_EQN = 256 * 1024
# XLA writes the module before and after the SPMD partitioning pass: "before" holds every
# value's sharding as propagation left it (Shardy's or GSPMD's); no other pass is written
PARTITIONING_PASS = "spmd-partitioning"
PARTITIONING_PIPELINE = "spmd-partitioner"
PROPAGATED = "before_spmd-partitioning"
_FRESH = itertools.count()


@dataclass(frozen=True)
class ModeCompile:
    """What one compile of a mode says: its collectives (each with the source position its
    metadata names), the lines pmapviz could not read, the values' shardings XLA chose
    (``chosen``: instructions of the propagated module; empty unless asked for), each
    device's memory and the compile's seconds."""

    collectives: tuple[HloCollective, ...]
    collective_where: tuple[Where | None, ...]
    unparsed: tuple[tuple[int, str, str], ...]
    chosen: tuple[HloInstr, ...]
    propagated: bool  # whether the propagated module was read (asked for, and written)
    memory: tuple[tuple[str, int], ...]
    compile_s: float
    hlo_lines: int


def compile_need(eqns: int) -> memorymodel.Need:
    """What compiling a program of ``eqns`` equations holds in the memory pool."""
    return memorymodel.Need.host_only(COMPILE_BASE + COMPILE_PER_EQN * max(0, eqns))


def trace(fn, args: tuple, mesh, choices: bool):
    """``jax.jit(fn).trace(*args)`` under ``jax.set_mesh(mesh)``: the program's jaxpr, ready
    to lower (with ``choices``, of a function named afresh: see the module's docstring)."""
    import jax

    with jax.set_mesh(mesh):
        return jax.jit(renamed(fn) if choices else fn).trace(*args)


def renamed(fn):
    """``fn`` under a name of its own, so the persistent cache misses it: a copy of a plain
    function (the same code, no extra frame in any equation's traceback: lowering a wrapper's
    deeper tracebacks took twice as long), else :func:`compilecache.renamed`'s wrapper."""
    if not isinstance(fn, types.FunctionType):
        return compilecache.renamed(fn)
    name = f"{fn.__name__}_typed{next(_FRESH)}"
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = fn.__kwdefaults__, name
    copy.__dict__.update(fn.__dict__)  # what functools.wraps put there (a vmap's __wrapped__)
    return copy


def compile_mode(traced, mesh, eqns: int, choices: bool) -> ModeCompile:
    """Lower and compile ``traced`` (:func:`trace`) under ``jax.set_mesh(mesh)``, once,
    holding :func:`compile_need` in the pool; with ``choices``, also read the sharding XLA
    chose for every value (see the module's docstring)."""
    import jax

    folder = _dump_folder() if choices else None
    options = (
        {
            "xla_dump_to": folder,
            "xla_dump_hlo_pass_re": PARTITIONING_PASS,
            "xla_dump_hlo_pipeline_re": PARTITIONING_PIPELINE,
        }
        if folder
        else None
    )
    try:
        with memorypool.reserve(compile_need(eqns), "compiling a typed program"):
            t = time.perf_counter()
            with jax.set_mesh(mesh), _fresh(choices):
                compiled = traced.lower().compile(compiler_options=options)
            compile_s = time.perf_counter() - t
        chosen = _propagated(folder) if folder else None
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    return read(compiled, chosen, compile_s)


def _dump_folder() -> str:
    """A new folder for the compile's module: in memory (``/dev/shm``) where there is one."""
    shm = "/dev/shm"
    here = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="pmapviz-types-", dir=here)


@contextlib.contextmanager
def _fresh(choices: bool):
    if not choices:
        yield
        return
    with compilecache.kept_out():
        yield


def _propagated(folder: str) -> tuple[HloInstr, ...] | None:
    """The instructions of the module sharding propagation left (None: none was written)."""
    found = sorted(glob.glob(os.path.join(folder, f"*{PROPAGATED}*.txt")))
    if not found:
        return None
    with open(found[0], encoding="utf-8", errors="replace") as fh:
        instructions = hlosource.instructions(fh.read(), "sharding=")
    return tuple(i for i in instructions if i.sharding)


def read(compiled, chosen: tuple[HloInstr, ...] | None, compile_s: float) -> ModeCompile:
    """What a compiled program says (``chosen``: the propagated module's instructions, None
    when it was not read)."""
    text = compiled.as_text()
    report = parse_hlo(text)
    table = hlosource.frames(text)
    lines = text.splitlines()
    where = tuple(
        hlosource.instruction(lines[c.line - 1], c.line, table) for c in report.collectives
    )
    return ModeCompile(
        report.collectives,
        tuple(i.where if i else None for i in where),
        report.unparsed,
        chosen or (),
        chosen is not None,
        compiledmemory.device_memory(compiled),
        compile_s,
        len(lines),
    )
