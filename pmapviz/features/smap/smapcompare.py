"""The whole smap comparison of one plan, as plain data: pmap's pipeline from its jaxpr, the smap
call as written, smap's pipeline or its refusal (JAX's words and the fix), where smap runs what
pmap refuses or computes something else, and the run of smap beside pmap and jit(vmap). What
``pmapviz plan --smap`` prints and ``pmapviz.smap`` draws."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.features.smap import pmappipeline, smapcall, smapparts, smaprefusals, smaprun
from pmapviz.features.smap.pmappipeline import Pipeline
from pmapviz.features.smap.smapsettings import SmapSettings, describe


@dataclass(frozen=True)
class Comparison:
    """pmap's pipeline, the smap call, and what became of it."""

    settings: SmapSettings
    settings_line: str
    call: tuple[str, ...]  # the smap call's lines of code
    pmap: Pipeline
    smap: Pipeline
    refusal: smaprefusals.Refusal | None
    pmap_refuses: str  # why smap runs what pmap refuses ('' when pmap runs it)
    part: smapparts.Part | None
    run: smaprun.SmapRun | None
    not_run: str = ""  # why smap did not run ('' when it ran or was refused)

    @property
    def ok(self) -> bool:
        """Whether smap ran and equals every run it was checked against."""
        return self.run is not None and self.run.passed

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""
        part = self.part
        return {
            "ok": self.ok,
            "settings": self.settings_line,
            "call": list(self.call),
            "pmap_pipeline": self.pmap.to_dict(),
            "smap_pipeline": self.smap.to_dict(),
            "refusal": None if self.refusal is None else self.refusal.to_dict(),
            "pmap_refuses": self.pmap_refuses,
            "part": None if part is None else {"code": part.code, "message": part.message},
            "run": None if self.run is None else self.run.to_dict(),
            "not_run": self.not_run,
        }


def compare(
    fn: Program | Callable,
    plan: Plan,
    s: SmapSettings | None = None,
    run: bool = True,
    kind: str = "arange",
    seed: int = 0,
) -> Comparison:
    """The comparison for ``plan`` (which must be :func:`smaprefusals.callable_with`): traced
    on abstract inputs, then, when smap accepts the call and ``run``, run in this process
    within the memory budget (a notebook's or the CLI's own f is the caller's own code)."""
    s = s or SmapSettings()
    n_local = len(devicefacts.local_devices_for_work())
    pm = pmappipeline.pmap_pipeline(fn, plan)
    sm = smapcall.smap_pipeline(fn, plan, s)
    vm = smapcall.vmap_pipeline(fn, plan)
    refusal = None
    if sm.refused is not None and sm.refused.asked:
        refusal = smaprefusals.explain(plan, s, sm.refused, n_local, vm)
    part = smapparts.part_of(plan, s, sm, vm, n_local)
    result, why = None, ""
    if sm.refused is not None:
        why = sm.refused.not_asked or "smap refuses these settings"
    elif not run:
        why = "not run (run=False)"
    else:
        result = smaprun.run(fn, plan, s, sm, kind, seed, here=True)
    return Comparison(
        settings=s,
        settings_line=describe(s, plan.n_devices),
        call=tuple(smapcall.call_lines(plan, s, n_local)),
        pmap=pm,
        smap=sm,
        refusal=refusal,
        pmap_refuses=smapparts.pmap_refusal_words(plan, s),
        part=part,
        run=result,
        not_run=why,
    )


def text(c: Comparison) -> list[str]:
    """The comparison as lines of text (the CLI's and the notebook view's text form)."""
    lines = ["pmap as JAX runs it (its jaxpr):"]
    lines += pipeline_lines(c.pmap)
    lines += [f"jax.smap, {c.settings_line}:", *(f"  {line}" for line in c.call)]
    if c.refusal is not None:
        r = c.refusal
        lines += [
            f"  smap refuses [{r.code}]: {r.message}",
            f"    fix: {r.fix}",
            f"    JAX says: {r.said.text}",
        ]
        return lines
    if c.smap.refused is not None:
        return [*lines, f"  {c.not_run}"]
    lines += pipeline_lines(c.smap)
    if c.pmap_refuses:
        lines.append(f"  where they part: {c.pmap_refuses}")
    if c.part is not None:
        lines += [f"  where they part: {c.part.message}", f"    fix: {c.part.fix}"]
    if c.run is None:
        return [*lines, f"  {c.not_run}"]
    for check in (c.run.vs_pmap, c.run.vs_vmap):
        if check is not None:
            lines.append(f"  smap {check.words()}")
    lines += [f"  {name}: {t}" for name, t in c.run.types.items()]
    return lines


def pipeline_lines(pipe: Pipeline) -> list[str]:
    """One line per stage and equation: primitive, params, in types -> out types."""
    if pipe.refused is not None:
        return [f"  refused: {pipe.refused.text or pipe.refused.not_asked}"]
    lines = []
    for stage in pipe.stages:
        for e in stage.equations:
            who = f" {', '.join(e.names)}" if e.names else ""
            params = "".join(f" {k}={v}" for k, v in e.params) if stage.kind != "f" else ""
            arrow = f"{', '.join(e.in_types)} -> {', '.join(e.out_types)}"
            lines.append(f"  [{stage.kind}] {e.primitive}{who}:{params} {arrow}")
    return lines
