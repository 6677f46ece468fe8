"""The typed program as terminal text (``pmapviz types`` and a notebook view's ``str``): per
mode, its mesh and timings, the inputs' types, one line per equation (its number, primitive,
output types as JAX prints them, source line; for Auto, XLA's choice), its collectives under
it, and the outputs' types."""

from __future__ import annotations

from pmapviz.core.base.valuetext import fmt_bytes
from pmapviz.core.xla.hlo import HloCollective
from pmapviz.features.types.typedmodes import MODES, TITLES, WORDS
from pmapviz.features.types.typedprogram import TypedView

MAX_LINES = 400  # equations printed per mode; the data has every one


def collective_line(c: HloCollective) -> str:
    """'all-reduce f32[16] · 4 group(s) of 2 · 64 B/device'."""
    if c.replica_groups is not None:
        sizes = sorted({len(g) for g in c.replica_groups})
        who = f"{len(c.replica_groups)} group(s) of {'/'.join(map(str, sizes))}"
    else:
        who = f"{len(c.source_target_pairs or ())} pair(s)"
    return f"{c.kind} {c.shape_text} · {who} · {fmt_bytes(c.bytes)}/device"


def view_lines(view: TypedView) -> list[str]:
    """One mode's lines."""
    head = f"{TITLES[view.mode]}: {view.mesh_words}; traced in {view.trace_s * 1e3:,.0f} ms"
    if view.error is None:
        head += f", compiled in {view.compile_s * 1e3:,.0f} ms"
    lines = [head, f"  {WORDS[view.mode]}", f"  code: {view.code}"]
    if view.error:
        lines.append(f"  JAX refused it ({view.stage}): {view.error}")
    lines.append("  in   " + "  ".join(view.in_types))
    for row in view.rows[:MAX_LINES]:
        e = row.eqn
        indent = "  " * min(e.depth, 12)
        where = f"   [{e.source}]" if e.source else ""
        lines.append(f"  {e.index:>4} {indent}{e.primitive} -> {', '.join(e.out_types)}{where}")
        lines += [f"       {indent}XLA chose {c.text}" for c in row.chosen]
        lines += [f"       {indent}<-> {collective_line(c)}" for c in row.collectives]
    if len(view.rows) > MAX_LINES:
        lines.append(f"  ... {len(view.rows) - MAX_LINES:,} more equations (in the data)")
    if view.left_out:
        lines.append(f"  {view.left_out:,} equations beyond the walk's bounds, not listed")
    lines.append("  out  " + "  ".join(view.out_types))
    lines += [f"  <-> {collective_line(c)} (no equation named)" for c in view.unmatched]
    return lines


def text(views: dict[str, TypedView], label: str) -> str:
    """Every mode's lines, in :data:`MODES` order, under the program's label."""
    lines = [label]
    for mode in MODES:
        if mode in views:
            lines += ["", *view_lines(views[mode])]
    return "\n".join(lines)
