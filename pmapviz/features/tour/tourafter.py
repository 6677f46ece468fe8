"""Tour step 11, after pmap: ``jax.smap``, pmap's successor, run beside pmap on this server's
devices (pmap's own pipeline read from its jaxpr: jit, shard_map, squeeze, f, broadcast), and
the sharding in every value's type under Explicit axes, read from JAX (issue 64).

Everything shown is live and read from JAX objects: the first line of the installed JAX's
``jax.pmap`` docstring, the pipelines (:mod:`pmapviz.features.smap.pmappipeline`), each
device's block beside pmap's slice (:mod:`pmapviz.features.smap.smaprun`), and the typed program
(:mod:`pmapviz.features.types.typedprogram`). The step's words are written from those objects.
"""

from __future__ import annotations

import re

from pmapviz.core.base.valuetext import counted, fmt_shape
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.smap import smapcompare, smaphtml
from pmapviz.features.tour.tourblocks import Context, TourBlock, page_url
from pmapviz.features.types import typedcatalog, typedprogram

ROWS = 3  # the columns of each device's row of x


def pmap_said() -> str:
    """The first line of the installed JAX's own ``jax.pmap`` docstring."""
    import jax

    lines = [line.strip() for line in (jax.pmap.__doc__ or "").strip().splitlines()]
    first = next((line for line in lines if line), "")
    return re.sub(r":py:\w+:`([^`]*)`", r"`\1`", first)  # reST's roles as code spans


def step_after(ctx: Context) -> list[TourBlock]:
    """Step 11: smap beside pmap, live, and one program's types under Explicit axes."""
    n = ctx.n
    program = functions.get("double")
    plan = planning.plan(program, [(n, ROWS)], axis_name="i", n_devices=n)
    c = smapcompare.compare(program, plan)
    blocks = [
        TourBlock(
            "markdown",
            f"The installed JAX's own `help(jax.pmap)` opens: *{pmap_said()}* Its successor for "
            f"pmap's settings is `jax.smap(f, in_axes=, out_axes=, axis_name=)`: a one-axis "
            f"`shard_map` under `jax.set_mesh`. Live, `lambda x: x * 2` on x "
            f"{fmt_shape(plan.leaves[0].shape)} over {counted(n, 'device')}:",
        ),
        TourBlock("html", smaphtml.pipeline_html(c.pmap, smaphtml.pipeline_label(c.pmap))),
        TourBlock(
            "markdown",
            "That is pmap as JAX 0.10 runs it, read from its jaxpr: `jit` of `shard_map`, each "
            "device's block squeezed to the slice f sees, and broadcast back. smap hands f the "
            "block itself, its axis kept:",
        ),
        TourBlock("code", "\n".join(c.call), "python"),
    ]
    if c.run is not None:
        verdict = "equal" if c.ok else "not equal"
        blocks += [
            TourBlock("html", smaphtml.blocks_html(c.run)),
            TourBlock(
                "markdown",
                f"smap's outputs and pmap's, element by element against `jit(vmap(f))`: "
                f"**{verdict}**.",
            ),
        ]
    else:
        blocks.append(TourBlock("info", c.not_run or "smap refuses these settings here."))
    blocks += _typed(n)
    scenario = Scenario.defaults("double", n).with_changes({"s0": f"{n}, {ROWS}", "name": "i"}, n)
    blocks += [
        TourBlock("link", "Explorer: smap beside pmap for any settings", scenario.url("explorer")),
        TourBlock("link", "Types: every value of a program, in three modes", page_url("types")),
    ]
    return blocks


def _typed(n: int) -> list[TourBlock]:
    """The Types page's default program under Explicit axes: each equation's type, as JAX
    prints it, and the collectives the compiled program has for it."""
    view = typedprogram.typed(typedcatalog.named("meshes", n), "explicit")
    if view.error:
        return [TourBlock("info", f"Typed under Explicit axes, JAX refuses it: {view.error}")]
    rows = [
        {
            "equation": r.eqn.primitive,
            "type (as JAX prints it)": ", ".join(r.eqn.out_types),
            "communication": ", ".join(f"{c.kind} {c.shape_text}" for c in r.collectives) or "none",
        }
        for r in view.rows
    ]
    return [
        TourBlock(
            "markdown",
            f"And the sharding is now in the types. {view.label}, under Explicit axes "
            f"({view.mesh_words}): its inputs are typed "
            + ", ".join(f"`{t}`" for t in view.in_types)
            + ", each equation's output below; `@data` means split over the mesh axis `data`.",
        ),
        TourBlock("table", rows),
    ]
