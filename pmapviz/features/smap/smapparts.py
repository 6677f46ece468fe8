"""Where smap and pmap part without a refusal: settings pmap refuses and smap runs (a mapped axis
larger than the devices, in blocks), and settings both run that give something else: a collective
in f over blocks of several elements (it combines the devices' values one element of the block at
a time), and a negative out_axes (smap in JAX 0.10 puts the blocks together along axis 0 whatever
it says, and raises nothing). Each is read from JAX's own traces of the calls
(:mod:`pmapviz.features.smap.smapcall`) and shown with the measured difference and a fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pmapviz.core.base.valuetext import counted, fmt_shape
from pmapviz.core.planning.planning import Plan
from pmapviz.features.smap.pmappipeline import Pipeline
from pmapviz.features.smap.smapcall import axis_name, block, mapped_size
from pmapviz.features.smap.smapsettings import SmapSettings


# ---------------------------------------------------------------- where pmap refuses, smap runs
def pmap_refusal_words(plan: Plan, s: SmapSettings) -> str:
    """Why smap runs settings pmap refuses, in the user's numbers ('' when pmap's plan is
    valid)."""
    if plan.ok:
        return ""
    codes = {q.code for q in plan.problems}
    m = s.devices_for(plan.n_devices)
    if "mapped_axis_too_large" in codes:
        size = mapped_size(plan) or 0
        return (
            f"pmap puts one element of the mapped axis on each device, so {size:,} elements "
            f"need {size:,} devices; smap gives each of its {m} devices a block of "
            f"{size // max(1, m):,}, and vmaps f over it."
        )
    if "negative_in_axes" in codes:
        return (
            "pmap in JAX 0.10 splits axis 0 whatever a negative in_axes says; a negative "
            "in_axes that means axis 0 is the one both run."
        )
    if "needs_axis_name" in codes:
        return (
            f"pmap had no axis_name for f's collective; a mesh axis always has a name, and "
            f"smap's is {axis_name(plan)!r}."
        )
    return "pmap refuses these settings (see the plan above); smap runs them."


# ---------------------------------------------------------------- where both run, but part
@dataclass(frozen=True)
class Part:
    """Where smap runs but computes something else than pmap would: the plain words, the
    fix, and the smap settings that apply it."""

    code: str
    message: str
    fix: str
    changes: Mapping[str, Any] = field(default_factory=dict)
    explorer: Mapping[str, str] = field(default_factory=dict)


COLLECTIVE_PARAMS = ("axes", "axis_name")  # an equation bound over a named axis has one


def collectives(stages, name: str) -> tuple[str, ...]:
    """f's equations that communicate over the mesh axis ``name`` (psum, all_gather,
    ppermute ...: their ``axes`` or ``axis_name`` parameter names it; pvary only marks a value
    as varying), read from smap's traced pipeline."""
    f = next((st for st in stages if st.kind == "f"), None)
    found = []
    for e in f.equations if f else ():
        named = any(k in COLLECTIVE_PARAMS and repr(name) in v for k, v in e.params)
        if named and e.primitive != "pvary" and e.primitive not in found:
            found.append(e.primitive)
    return tuple(found)


def blocks_part(plan: Plan, s: SmapSettings, stages, n_local: int) -> Part | None:
    """Blocks of several elements and a collective in f: the collective reduces over the
    mesh's devices, one element of each block at a time, where pmap's and jit(vmap)'s
    reduce over the whole mapped axis (measured: they differ)."""
    m, name = s.devices_for(plan.n_devices), axis_name(plan)
    b, size = block(plan, m), mapped_size(plan) or 0
    used = collectives(stages, name)
    if b is None or b <= 1 or not used:
        return None
    fits = size <= min(n_local, plan.n_devices)
    return Part(
        "collective_over_blocks",
        f"Each of the {m} devices vmaps f over a block of {b} elements, so f's "
        f"{', '.join(used)} over {name!r} combines the {m} devices' values one element of the "
        f"block at a time; pmap and jit(vmap) combine all {size:,} elements. The results "
        "differ (below).",
        f"A mesh of {counted(size, 'device')}: blocks of one element, as pmap's."
        if fits
        else f"Reduce each block first, or run on {size:,} devices: this server has {n_local}.",
        {"mesh_devices": size} if fits else {},
    )


def _negative_ints(prefix: Any) -> bool:
    if isinstance(prefix, int):
        return prefix < 0
    if isinstance(prefix, dict):
        return any(_negative_ints(v) for v in prefix.values())
    if isinstance(prefix, (tuple, list)):
        return any(_negative_ints(v) for v in prefix)
    return False


def shapes_part(plan: Plan, smap: Pipeline, vmap: Pipeline) -> Part | None:
    """smap's output shapes against jit(vmap)'s, both read from their traces: a negative
    out_axes that does not mean axis 0 is where they part. smap in JAX 0.10 puts the blocks
    together along axis 0 whatever it says (measured: out_axes=-1 on (8, 3, 4) gives
    (24, 4, 1), vmap (3, 4, 8)), and raises nothing."""
    if smap.refused is not None or vmap.refused is not None:
        return None
    got = [shape for _, shape, _ in smap.outputs]
    want = [shape for _, shape, _ in vmap.outputs]
    if got == want or not _negative_ints(plan.out_axes):
        return None
    o = plan.out_axes
    fixed = len(want[0]) + o if isinstance(o, int) and len(want) == 1 else None
    return Part(
        "negative_out_axes",
        f"out_axes={o!r}: smap in JAX 0.10 does not count a negative out_axes from the end: "
        f"it puts the blocks together along axis 0 and returns "
        f"{', '.join(map(fmt_shape, got))}, where jit(vmap) returns "
        f"{', '.join(map(fmt_shape, want))}. JAX raises nothing: the shapes say it.",
        "Write out_axes as a non-negative number"
        + (f": out_axes={fixed}." if fixed is not None else "."),
        explorer={"out": str(fixed)} if fixed is not None else {},
    )


def part_of(
    plan: Plan, s: SmapSettings, smap: Pipeline, vmap: Pipeline, n_local: int
) -> Part | None:
    """Where smap, accepting the call, computes something else than pmap and jit(vmap) would
    (:func:`blocks_part`, :func:`shapes_part`); None when it refuses, or agrees."""
    if smap.refused is not None:
        return None
    return blocks_part(plan, s, smap.stages, n_local) or shapes_part(plan, smap, vmap)
