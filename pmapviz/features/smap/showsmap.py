"""``pmapviz.smap`` for a notebook: the settings of a ``jax.pmap`` as JAX 0.10 runs them
(its pipeline, read from its jaxpr) and as ``jax.smap`` beside it, as the explorer's smap
section shows them.

A view of its own rather than an option of ``pmapviz.plan``: the comparison has settings of
its own (the mesh, its axis type, what the call leaves out), it traces and runs JAX where a
plan only reads shapes, and its data (``to_dict()``: both pipelines, the refusal, the run) is
not a plan's. It takes ``plan``'s arguments, so one line turns into the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.core.expressions.functions import Program
from pmapviz.features.explorer import showplan
from pmapviz.features.explorer.showplan import DEFAULT
from pmapviz.features.smap import smaphtml, smaprefusals
from pmapviz.features.smap.smapcompare import Comparison, compare, text
from pmapviz.features.smap.smapsettings import SmapSettings, from_texts


def smap(
    f: Callable | str | Program,
    shapes: Sequence | None = None,
    in_axes: Any = DEFAULT,
    out_axes: Any = DEFAULT,
    dtypes: str | Sequence[str] | None = None,
    axis_name: str | None = "i",
    mesh_devices: int | None = None,
    mode: str = "Explicit",
    set_mesh: bool = True,
    give_in_axes: bool = True,
    reshard: bool = True,
    run: bool = True,
) -> View:
    """``jax.pmap(f, in_axes, out_axes, axis_name)`` on arguments of ``shapes`` as JAX runs it
    (jit -> shard_map -> squeeze -> f -> broadcast_in_dim, read from its jaxpr), and the same
    settings as ``jax.smap`` on a one-axis mesh of ``mesh_devices`` devices (default: all of
    this process's) with ``mode`` axes (Explicit or Auto). ``set_mesh``, ``give_in_axes`` and
    ``reshard`` False leave that part out of the call, to meet JAX's refusal and its fix.
    With ``run``, smap runs beside pmap and jit(vmap) on the same values: each device's block
    beside pmap's slice, checked element by element. ``f`` and the axes as for
    :func:`pmapviz.plan`. Raises ValueError for settings that are not usable."""
    notes = notebookviews.ready()
    n = devicefacts.facts().local_count
    fn, name, p = showplan.planned(f, shapes, in_axes, out_axes, dtypes, axis_name, n)
    s = _settings(mesh_devices, mode, set_mesh, give_in_axes, reshard, n)
    if not smaprefusals.callable_with(p):
        problems = "; ".join(q.message for q in p.problems)
        raise ValueError(f"smap cannot be called with these settings: {problems}")
    return view(compare(fn, p, s, run=bool(run)), name, notes)


def _settings(mesh_devices, mode, set_mesh, give_in_axes, reshard, n: int) -> SmapSettings:
    texts = {
        "mesh": str(n if mesh_devices is None else mesh_devices),
        "mode": str(mode),
        "setmesh": "1" if set_mesh else "0",
        "inaxes": "1" if give_in_axes else "0",
        "reshard": "1" if reshard else "0",
    }
    s, errors = from_texts(texts, n)
    if errors:
        raise ValueError(errors[0])
    return s


def view(c: Comparison, name: str, notes: Sequence[str] = ()) -> View:
    """The comparison as a view: HTML as the page draws it, its text, its data."""
    verdict = "smap runs and agrees" if c.ok else "smap refuses" if c.refusal else "smap runs"
    if c.run is not None and not c.run.passed:
        verdict = "smap runs, and they part"
    return View(
        title=f"pmap and jax.smap of {name}: {verdict}",
        body=body_html(c, notes),
        text="\n".join(text(c)),
        data=c.to_dict(),
        source=c,
    )


def body_html(c: Comparison, notes: Sequence[str] = ()) -> str:
    """Both pipelines, the call, the refusal or the run (every text escaped)."""
    para, heading = notebookviews.paragraph, notebookviews.heading
    parts = [para(note) for note in notes]
    parts += [heading("pmap, as JAX 0.10 runs it (its jaxpr)")]
    parts.append(smaphtml.pipeline_html(c.pmap, smaphtml.pipeline_label(c.pmap)))
    parts += [heading(f"jax.smap: {c.settings_line}")]
    parts.append(notebookviews.code_block("\n".join(c.call), "the jax.smap call"))
    if c.refusal is not None:
        r = c.refusal
        parts.append(notebookviews.problem_box(r.message, r.fix))
        parts.append(para("What JAX itself says:"))
        parts.append(notebookviews.code_block(r.said.text, "JAX's own words"))
        return "".join(parts)
    if c.smap.refused is not None:
        return "".join([*parts, para(c.not_run)])
    parts.append(smaphtml.pipeline_html(c.smap, smaphtml.pipeline_label(c.smap)))
    for words in (c.pmap_refuses, c.part.message if c.part else ""):
        if words:
            parts.append(notebookviews.notice_box(words))
    if c.run is None:
        return "".join([*parts, para(c.not_run)])
    checks = [ch for ch in (c.run.vs_pmap, c.run.vs_vmap) if ch is not None]
    parts.append(para("; ".join(f"smap {ch.words()}" for ch in checks) + "."))
    parts.append(smaphtml.blocks_html(c.run))
    parts.append(
        notebookviews.code_block(
            "\n".join(f"{k}: {t}" for k, t in c.run.types.items()), "jax.typeof of smap's arrays"
        )
    )
    return "".join(parts)
