"""The smap comparison as HTML (the page and the notebook view draw the same): a pipeline as a
row of boxes, one per stage, each with its primitive, the parameters that matter and its
types as JAX printed them; and per device, smap's block beside pmap's slice of every array
(:func:`pmapviz.core.drawing.gridhtml.block_grid`, coloured by device). Every text is
escaped here: names and types come from the user's settings and from JAX."""

from __future__ import annotations

import html

from pmapviz.core.base.palette import MONO_CSS
from pmapviz.core.drawing import gridhtml
from pmapviz.features.smap.pmappipeline import Equation, Pipeline, Stage
from pmapviz.features.smap.smaprun import SmapRun

# what each stage is, in words (the primitive itself is the box's title)
STAGE_WORDS = {
    "jit": "pmap compiles its call as one jit",
    "reshard": "each mapped input split over the mesh: its type says how",
    "shard_map": "one instance per device, on its block",
    "squeeze": "each block's mapped axis (size 1) removed: the slice f sees",
    "f": "f's equations, as JAX traced them",
    "broadcast_in_dim": "the mapped axis put back on f's result",
    "other": "",
}
F_SHOWN = 10  # of f's equations, drawn in a box (every one is in the jaxpr text)
_BOX = (
    "flex:1 1 0;min-width:10.5rem;max-width:18rem;border:1px solid #d0d7de;border-radius:8px;"
    "padding:6px 10px;background:{fill}"
)
_FILLS = {"f": "#fff8c5", "shard_map": "#ddf4ff", "jit": "#f6f8fa", "reshard": "#dafbe1"}
_MONO = f"{MONO_CSS};font-size:0.8em;overflow-wrap:anywhere"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _types(e: Equation) -> str:
    ins = ", ".join(e.in_types) or "()"
    outs = ", ".join(e.out_types) or "()"
    return f"{_e(ins)} &rarr; {_e(outs)}"


def _equation_line(e: Equation, with_params: bool) -> str:
    who = f"<b>{_e(', '.join(e.names))}</b>: " if e.names else ""
    params = ""
    if with_params and e.params:
        params = "<br>" + "<br>".join(f"{_e(k)}={_e(v)}" for k, v in e.params)
    return f"<div style='{_MONO};margin-top:3px'>{who}{_types(e)}{params}</div>"


def stage_html(stage: Stage) -> str:
    """One stage's box: its primitive, what it is, and each equation's types (f's stage: its
    first :data:`F_SHOWN` equations by primitive)."""
    fill = _FILLS.get(stage.kind, "#ffffff")
    title = f"font-weight:700;{MONO_CSS};overflow-wrap:anywhere"
    head = f"<div style='{title}'>{_e(stage.primitive)}</div>"
    words = STAGE_WORDS.get(stage.kind, "")
    sub = f"<div style='font-size:0.8em;color:#57606a'>{_e(words)}</div>" if words else ""
    if stage.kind == "f":
        shown = stage.equations[:F_SHOWN]
        lines = "".join(
            f"<div style='{_MONO};margin-top:3px'><b>{_e(e.primitive)}</b> {_types(e)}</div>"
            for e in shown
        )
        more = len(stage.equations) - len(shown)
        if more > 0:
            lines += f"<div style='font-size:0.8em'>... {more} more (the jaxpr has them)</div>"
        if not stage.equations:
            lines = "<div style='font-size:0.8em'>no equation: f returns its input</div>"
    else:
        first = stage.equations[0]
        shared = "".join(f"<div style='{_MONO}'>{_e(k)}={_e(v)}</div>" for k, v in first.params)
        many = stage.kind in ("squeeze", "broadcast_in_dim", "reshard")
        lines = (
            "".join(_equation_line(e, False) for e in stage.equations) + shared
            if many
            else shared + _equation_line(first, False)
        )
    return f"<div style='{_BOX.format(fill=fill)}'>{head}{sub}{lines}</div>"


def pipeline_html(pipe: Pipeline, label: str) -> str:
    """The pipeline as a row of boxes joined by arrows (wrapping on a narrow screen), a picture
    ``label`` describes; or JAX's refusal, when it refused the call."""
    if pipe.refused is not None:
        words = pipe.refused.text or pipe.refused.not_asked
        return (
            f"<div role='note' style='border-left:4px solid #cf222e;padding:6px 10px'>"
            f"<div style='{_MONO}'>{_e(words)}</div></div>"
        )
    arrow = "<div aria-hidden='true' style='align-self:center;font-size:1.4em'>&rarr;</div>"
    boxes = arrow.join(stage_html(s) for s in pipe.stages)
    return (
        f"<div role='img' aria-label='{_e(label)}' style='display:flex;flex-wrap:wrap;"
        f"gap:6px;align-items:stretch;margin:4px 0 12px'>{boxes}</div>"
    )


def pipeline_label(pipe: Pipeline) -> str:
    """The picture's words for a screen reader: the stages in order."""
    return f"{pipe.api}'s pipeline, read from its jaxpr: " + " then ".join(
        s.primitive for s in pipe.stages
    )


# ---------------------------------------------------------------- blocks beside slices
def _cell(piece: dict | None, position: int, api: str) -> tuple[str, int | None, str]:
    if piece is None:
        return ("&mdash;", None, f"{api} gives this device nothing of it")
    shape = "(" + ", ".join(map(str, piece["shape"])) + ("," if len(piece["shape"]) == 1 else "")
    text = gridhtml.titled(piece["index"], shape + ")")
    return (text, position, f"{piece['device']}: {piece['index']} {piece['values']}")


def blocks_html(run: SmapRun, limit: int = 16) -> str:
    """Per array, two rows of the first ``limit`` devices: the slice pmap gives each device
    (read from pmap's arrays) and the block smap gives it (from smap's), coloured by device."""
    rows: gridhtml.Rows = []
    shown = run.rows[:limit]
    if not shown:
        return ""
    header = [(_e(r["device"]), r["position"], r["device"]) for r in shown]
    rows.append(("device", header))
    for k, first in enumerate(shown[0]["arrays"]):
        name = _e(first["name"])
        pm = [_cell(r["arrays"][k]["pmap"], r["position"], "pmap") for r in shown]
        sm = [_cell(r["arrays"][k]["smap"], r["position"], "smap") for r in shown]
        if run.pmap_devices:
            rows.append((f"{name} &middot; pmap", pm))
        rows.append((f"{name} &middot; smap", sm))
    label = (
        f"Each of the first {len(shown)} devices: smap's block of every array"
        + (" beside the slice pmap gives it" if run.pmap_devices else "")
        + ", read from the arrays' addressable_shards"
    )
    return gridhtml.block_grid(rows, label)
