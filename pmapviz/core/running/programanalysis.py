"""Inside the compiled program: what XLA made of a pmap, read from JAX's own objects.

For a target (the explorer's plan here; a collective of the playground in
:mod:`pmapviz.features.collectives.collectiveanalysis`, the training step in
:mod:`pmapviz.features.training.traininganalysis`):

- the collectives XLA emitted (parsed from ``compiled.as_text()`` by :mod:`pmapviz.core.xla.hlo`),
each
  beside the ring model's bytes (:func:`pmapviz.core.expressions.collectivedefs.ring_model`);
- the program at three levels: jaxpr, lowered StableHLO, compiled HLO, with the lines that
  hold collectives;
- cost (``cost_analysis``: flops, and bytes accessed, which is LOCAL memory traffic, not
  network) and memory (``memory_analysis``) per device, for four variants side by side: pmap,
  jit(vmap) on one device, jit over NamedSharding inputs, jit(shard_map); with the collectives
  each emitted (jit over sharded inputs inserts ones the user never wrote);
- hidden communication lives in :mod:`pmapviz.features.compiled.hiddencomm`, and the tables and
terminal text
  made of an analysis in :mod:`pmapviz.core.drawing.programtables`.

Nothing is hard-coded per collective: every number comes from a compilation.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.base.valuetext import first_line, fmt_bytes
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.collectivedefs import ring_model
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning, scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.xla.hlo import HloCollective, ParseReport, jaxpr_lines, parse_hlo, stablehlo_lines

VARIANTS = {
    "pmap": "jax.pmap",
    "vmap": "jax.jit(jax.vmap(f)) on one device",
    "jit_sharded": "jax.jit(jax.vmap(f)) over NamedSharding inputs",
    "shard_map": "jax.jit(jax.shard_map(f))",
}


@dataclass(frozen=True)
class Target:
    """A per-device function and the global inputs pmap maps it over."""

    label: str
    code: str
    fn: Callable  # as pmap sees it: the mapped axis removed
    args: tuple  # pytrees of jax.ShapeDtypeStruct, global shapes (device axis included)
    in_axes: tuple
    out_axes: int | None
    axis_name: str | None
    n: int  # devices


@dataclass(frozen=True)
class Row:
    """One collective XLA emitted, beside the ring model's bytes for it."""

    hlo: HloCollective
    model_sent: float  # bytes each device sends (average over devices), ring model
    model_received: float
    model: str

    def to_json(self) -> dict:
        """The collective and the ring model's bytes for it, as JSON."""
        c = self.hlo
        shape = list(c.shapes[0]) if len(c.shapes) == 1 else [list(s) for s in c.shapes]
        groups, pairs = c.replica_groups, c.source_target_pairs
        return {
            "kind": c.kind,
            "name": c.name,
            "shape": shape,
            "dtype": c.dtype,
            "bytes": c.bytes,
            "replica_groups": None if groups is None else [list(g) for g in groups],
            "source_target_pairs": None if pairs is None else [list(p) for p in pairs],
            "source_line": c.source_line,
            "hlo_line": c.line,
            "model_sent_bytes": self.model_sent,
            "model_received_bytes": self.model_received,
            "model": self.model,
        }


@dataclass(frozen=True)
class Cost:
    """Per device, from ``compiled.cost_analysis()`` and ``compiled.memory_analysis()``."""

    flops: float | None  # absent for pure data movement
    bytes_accessed: float | None  # local memory traffic, not network bytes
    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    generated_code_bytes: int
    alias_bytes: int
    peak_bytes: int  # memory_analysis's peak when it gives one, else argument+output+temp-alias
    peak_is_estimate: bool

    def to_json(self) -> dict:
        """Flops and bytes accessed per device, as JSON."""
        return {"flops": self.flops, "bytes_accessed": self.bytes_accessed}

    def memory_json(self) -> dict:
        """The memory per device (arguments, output, temporaries, peak), as JSON."""
        return {
            "argument_bytes": self.argument_bytes,
            "output_bytes": self.output_bytes,
            "temp_bytes": self.temp_bytes,
            "generated_code_bytes": self.generated_code_bytes,
            "alias_bytes": self.alias_bytes,
            "peak_bytes": self.peak_bytes,
            "peak_is_estimate": self.peak_is_estimate,
        }


@dataclass(frozen=True)
class Variant:
    """The target compiled one way (pmap, vmap, jit over shardings or shard_map): its collectives
    and cost, or why it cannot express the target."""

    key: str  # one of VARIANTS
    label: str
    rows: tuple[Row, ...] = ()
    unparsed: tuple[tuple[int, str, str], ...] = ()
    cost: Cost | None = None
    error: str | None = None  # this variant cannot express the target (first line of why)

    def to_json(self) -> dict:
        """Its collectives' kinds, cost and memory, or its error, as JSON."""
        return {
            "label": self.label,
            "error": self.error,
            "collectives": [r.hlo.kind for r in self.rows],
            "cost": self.cost.to_json() if self.cost else None,
            "memory": self.cost.memory_json() if self.cost else None,
        }


@dataclass(frozen=True)
class Levels:
    """The program as jaxpr, StableHLO and HLO, and the 1-based lines holding collectives."""

    jaxpr: str
    stablehlo: str
    hlo: str
    jaxpr_lines: tuple[int, ...]
    stablehlo_lines: tuple[int, ...]
    hlo_lines: tuple[int, ...]


def program_grid(a, labels: list[str]) -> tuple[list, str]:
    """(grid rows, what they show) for the picture of a compiled pmap: the same program on
    every device, its collectives and its memory per device (memory_analysis)."""
    n, c = a.target.n, a.cost
    names = [labels[d] if d < len(labels) else str(d) for d in range(n)]
    lines = len(a.levels.hlo.splitlines())
    kinds = ", ".join(f"{r.hlo.kind} {r.hlo.name}" for r in a.rows) or "none"
    memory = f"in {fmt_bytes(c.argument_bytes)} · out {fmt_bytes(c.output_bytes)}"
    rows = [
        ("device", [(names[d], d, f"{names[d]}: position {d}") for d in range(n)]),
        (
            "runs",
            [
                (f"{lines:,} HLO lines", d, "one compiled program, the same on every device")
                for d in range(n)
            ],
        ),
        ("collectives", [(kinds, None, "the collectives XLA emitted") for _ in range(n)]),
        (
            "memory",
            [(memory, None, "per device, from compiled.memory_analysis()") for _ in range(n)],
        ),
    ]
    label = (
        f"{a.target.code} compiled by XLA: the same {lines:,}-line program on each of {n} "
        f"devices; collectives: {kinds}; per device {memory}"
    )
    return rows, label


@dataclass(frozen=True)
class Analysis:
    """Everything one compilation of a target says: its collectives, the program at three levels,
    its cost, and the other variants beside it."""

    target: Target
    rows: tuple[Row, ...]  # pmap's collectives
    unparsed: tuple[tuple[int, str, str], ...]
    levels: Levels
    cost: Cost
    variants: dict[str, Variant]
    compile_s: float

    def to_json(self) -> dict:
        """The whole analysis as JSON (the program text left out)."""
        return {
            "label": self.target.label,
            "code": self.target.code,
            "devices": self.target.n,
            "collectives": [r.to_json() for r in self.rows],
            "unparsed": [{"line": k, "text": t, "why": w} for k, t, w in self.unparsed],
            "cost": self.cost.to_json(),
            "memory": self.cost.memory_json(),
            "variants": {k: v.to_json() for k, v in self.variants.items()},
            "compile_s": self.compile_s,
        }


# ---------------------------------------------------------------- reading a compilation
def rows_for(report: ParseReport, n: int) -> tuple[Row, ...]:
    """Each parsed collective beside the ring model for its operand, groups and pairs."""
    out = []
    devices = report.n_devices or n
    for c in report.collectives:
        groups = [list(g) for g in c.replica_groups or [tuple(range(devices))]]
        cost, model = ring_model(c.kind, c.bytes, groups, devices, c.source_target_pairs)
        out.append(Row(c, cost["sent"], cost["received"], model))
    return tuple(out)


def cost_dict(compiled) -> dict:
    """``compiled.cost_analysis()`` as one dict (older JAX: one dict per program; none: {})."""
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return ca or {}


def estimate_seconds(compiled) -> float | None:
    """The compiler's own time estimate (``optimal_seconds``: compute and memory traffic, no
    communication); None where it gives none (absent, or negative: libtpu 0.0.42 on v6e)."""
    s = cost_dict(compiled).get("optimal_seconds")
    return s if s is not None and s >= 0 else None


def cost_of(compiled) -> Cost:
    """Cost and memory per device of a compiled program, from its own analyses."""
    ca = cost_dict(compiled)
    ma = compiled.memory_analysis()
    get = lambda name: int(getattr(ma, name, 0) or 0)  # noqa: E731
    arg, out, temp = (
        get("argument_size_in_bytes"),
        get("output_size_in_bytes"),
        get("temp_size_in_bytes"),
    )
    alias, peak = get("alias_size_in_bytes"), get("peak_memory_in_bytes")
    return Cost(
        ca.get("flops"),
        ca.get("bytes accessed"),
        arg,
        out,
        temp,
        get("generated_code_size_in_bytes"),
        alias,
        peak or arg + out + temp - alias,
        not peak,
    )


# ---------------------------------------------------------------- the four variants
def _placed(target: Target, sharding_for: Callable[[int, int | None], Any]) -> list:
    """The target's argument structs, each leaf given the sharding ``sharding_for(rank, axis)``."""
    import jax

    return [
        jax.tree.map(
            lambda s, ax=ax: jax.ShapeDtypeStruct(
                s.shape, s.dtype, sharding=sharding_for(s.ndim, ax)
            ),
            a,
        )
        for a, ax in zip(target.args, target.in_axes, strict=True)
    ]


def _pmap_lowered(target: Target):
    import jax

    devs = devicefacts.local_devices_for_work()[: target.n]
    pm = jax.pmap(
        target.fn,
        in_axes=target.in_axes,
        out_axes=target.out_axes,
        axis_name=target.axis_name,
        devices=devs,
    )
    args = _placed(target, lambda r, ax: pmap_sharding(r, ax, target.n))
    return pm, args, pm.lower(*args)


def _vmapped(target: Target) -> Callable:
    import jax

    return jax.vmap(
        target.fn, in_axes=target.in_axes, out_axes=target.out_axes, axis_name=target.axis_name
    )


def block_specs(target: Target, name: str) -> tuple[tuple, Any]:
    """``(in_specs, out_specs)`` of the target's pmap as shard_map writes it over a one-axis
    mesh ``name``: each mapped axis split over it, the rest whole (out_axes spread per leaf)."""
    import jax
    from jax.sharding import PartitionSpec

    def spec(ax):
        return PartitionSpec() if ax is None else PartitionSpec(*([None] * ax), name)

    in_specs = tuple(spec(ax) for ax in target.in_axes)
    return in_specs, jax.tree.map(spec, target.out_axes, is_leaf=lambda x: x is None)


def per_block(target: Target) -> Callable:
    """f as shard_map runs pmap's f on each block, rank kept: squeeze each mapped axis, call f,
    put the axis back on each output leaf (out_axes may be a prefix of the output)."""
    import jax
    import jax.numpy as jnp

    def run(*blocks):
        args = [
            b if ax is None else jax.tree.map(lambda v, ax=ax: jnp.squeeze(v, ax), b)
            for b, ax in zip(blocks, target.in_axes, strict=True)
        ]
        out = target.fn(*args)
        axes = jax.tree.broadcast(target.out_axes, out, is_leaf=lambda x: x is None)
        return jax.tree.map(
            lambda o, ax: o if ax is None else jnp.expand_dims(o, ax),
            out,
            axes,
            is_leaf=lambda x: x is None,
        )

    return run


def _shard_mapped(target: Target):
    """shard_map's rank-preserving view of f: squeeze the mapped axis, call f, put it back."""
    import jax

    name = target.axis_name or "i"
    mesh = pmap_sharding(1, 0, target.n, name).mesh
    in_specs, out_specs = block_specs(target, name)
    sm = jax.shard_map(per_block(target), mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    return jax.jit(sm), _placed(target, lambda r, ax: pmap_sharding(r, ax, target.n, name))


def _variant(key: str, target: Target) -> Variant:
    """Compile one variant from abstract inputs; a variant that cannot express the target
    (e.g. vmap of a collective with axis_index_groups) is reported with JAX's reason."""
    import jax

    try:
        if key == "vmap":
            dev0 = jax.sharding.SingleDeviceSharding(devicefacts.local_devices_for_work()[0])
            fn, args = jax.jit(_vmapped(target)), _placed(target, lambda r, ax: dev0)
        elif key == "jit_sharded":
            fn = jax.jit(_vmapped(target))
            args = _placed(target, lambda r, ax: pmap_sharding(r, ax, target.n))
        else:
            fn, args = _shard_mapped(target)
        compiled = fn.lower(*args).compile()
    except Exception as err:  # noqa: BLE001  (any JAX refusal is the finding)
        return Variant(key, VARIANTS[key], error=first_line(err))
    report = parse_hlo(compiled.as_text())
    return Variant(
        key, VARIANTS[key], rows_for(report, target.n), report.unparsed, cost_of(compiled)
    )


def analyse(target: Target, variants: bool = True) -> Analysis:
    """Compile ``target`` as pmap (and, with ``variants``, the three alternatives) and read
    everything the compilation says."""
    import jax

    t = time.perf_counter()
    pm, args, lowered = _pmap_lowered(target)
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t
    hlo_text = compiled.as_text()
    report = parse_hlo(hlo_text)
    jaxpr = str(jax.make_jaxpr(pm)(*args))
    shlo = lowered.as_text()
    levels = Levels(jaxpr, shlo, hlo_text, jaxpr_lines(jaxpr), stablehlo_lines(shlo), report.lines)
    cost = cost_of(compiled)
    rows = rows_for(report, target.n)
    found = {"pmap": Variant("pmap", VARIANTS["pmap"], rows, report.unparsed, cost)}
    if variants:
        for key in ("vmap", "jit_sharded", "shard_map"):
            found[key] = _variant(key, target)
    return Analysis(target, rows, report.unparsed, levels, cost, found, compile_s)


# ---------------------------------------------------------------- targets
def plan_target(program: Program, plan: Plan) -> Target:
    """The explorer's program under a valid plan (shapes are abstract: nothing is allocated)."""
    import jax
    import jax.numpy as jnp

    if not plan.ok:
        raise ValueError("only a valid plan can be compiled")
    if plan.devices_used > devicefacts.facts().local_count:
        raise ValueError(
            f"the plan uses {plan.devices_used} devices; this process has "
            f"{devicefacts.facts().local_count}"
        )
    args = tuple(jax.ShapeDtypeStruct(leaf.shape, jnp.dtype(leaf.dtype)) for leaf in plan.leaves)
    given = plan.in_axes_given if plan.has_trees else plan.leaf_axes
    code = (
        f"jax.pmap(f, in_axes={pytrees.fmt_prefix(tuple(given))}, "
        f"out_axes={pytrees.fmt_prefix(plan.out_axes)}, "
        f"axis_name={plan.axis_name!r})  # f: {program.body(plan.axis_name)}"
    )
    return Target(
        program.label,
        code,
        plan.leaf_fn(program.build(plan.axis_name)),
        args,
        plan.leaf_axes,
        plan.out_axes,
        plan.axis_name,
        plan.devices_used,
    )


# ---------------------------------------------------------------- cached entry points
@functools.lru_cache(maxsize=64)
def _analyse_plan(ref: tuple, key: tuple) -> Analysis:
    program = scenarios.program_for(*ref)
    return analyse(plan_target(program, planning.replan(program, key)))


def analyse_plan(program: Program, plan: Plan) -> Analysis:
    """Cached by the plan's settings."""
    if not plan.ok:
        raise ValueError("only a valid plan can be compiled")

    return _analyse_plan(scenarios.program_ref(program), plan.key)
