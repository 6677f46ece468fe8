"""A compiled program's analysis as tables and text: its collectives, the four variants side by
side, hidden communication beside its fixes (the Compiled page's tables and the CLI's
summary)."""

from __future__ import annotations

from pmapviz.core.running.programanalysis import Analysis, Row


def table_rows(rows: tuple[Row, ...]) -> list[dict]:
    """The collectives as table rows: what XLA emitted beside the ring model."""
    out = []
    for r in rows:
        c = r.hlo
        where = c.source_target_pairs if c.source_target_pairs else c.replica_groups
        out.append(
            {
                "collective": c.kind,
                "HLO op": c.name,
                "operand": c.shape_text,  # dtype and shape as the HLO writes them: f32[3]
                "bytes per device": c.bytes,
                "groups / pairs": str([list(g) for g in where]) if where else "all devices",
                "ring model: sends (B)": round(r.model_sent),
                "receives (B)": round(r.model_received),
                "from": c.source_line or "?",
            }
        )
    return out


def variant_table(a: Analysis) -> tuple[list[dict], list[str]]:
    """One row per variant (cost and memory per device) and notes where a variant compiles to
    other collectives than pmap (e.g. jit over sharded inputs inserting ones nobody wrote)."""
    mine = sorted(r.hlo.kind for r in a.rows)
    rows, notes = [], []
    for key, v in a.variants.items():
        if v.error:
            rows.append({"variant": v.label, "collectives": f"cannot express it: {v.error}"})
            continue
        c = v.cost
        kinds = sorted(r.hlo.kind for r in v.rows)
        rows.append(
            {
                "variant": v.label,
                "collectives": ", ".join(kinds) or "none",
                "flops": c.flops,
                "bytes accessed": c.bytes_accessed,
                "arguments (B)": c.argument_bytes,
                "outputs (B)": c.output_bytes,
                "temporaries (B)": c.temp_bytes,
                "code (B)": c.generated_code_bytes,
                "peak (B)": c.peak_bytes,
            }
        )
        if key != "pmap" and kinds != mine:
            notes.append(
                f"{v.label} compiles to {', '.join(kinds) or 'no collective'}, where "
                f"pmap compiles to {', '.join(mine) or 'none'}: XLA chose the "
                "communication from the shardings, not from code you wrote."
            )
    return rows, notes


def summary_lines(a: Analysis) -> list[str]:
    """The analysis as lines of text for the terminal: collectives, then variants."""
    out = [
        f"{a.target.label} on {a.target.n} device(s): {a.target.code}",
        f"compiled in {a.compile_s * 1e3:.0f} ms; {len(a.rows)} collective(s) in the HLO",
    ]
    for r in a.rows:
        c = r.hlo
        where = c.replica_groups if c.source_target_pairs is None else c.source_target_pairs
        out.append(
            f"  {c.kind:<18} {c.shape_text:<14} {c.bytes:>10,} B/device  model sends "
            f"{r.model_sent:>12,.0f} B  {list(map(list, where))}  "
            f"from {c.source_line or '?'}"
        )
    for line, text, why in a.unparsed:
        out.append(f"  unparsed (line {line}: {why}): {text[:120]}")
    out.append(
        "variant        collectives                    flops     bytes accessed  "
        "argument  output  temp  (per device)"
    )
    for key, v in a.variants.items():
        if v.error:
            out.append(f"  {key:<12} cannot express it: {v.error}")
            continue
        kinds = ", ".join(r.hlo.kind for r in v.rows) or "none"
        c = v.cost
        out.append(
            f"  {key:<12} {kinds:<30} {c.flops or 0:>8,.0f} {c.bytes_accessed or 0:>14,.0f}"
            f"  {c.argument_bytes:>8,} {c.output_bytes:>7,} {c.temp_bytes:>5,}"
        )
    return out
