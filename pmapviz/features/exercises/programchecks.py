"""The exercises judged by what JAX compiles or places, nothing run:

* :func:`replicas_agree`: your own f(g) under pmap, compiled as the Compiled program page
  compiles it; the collectives XLA emitted, read from the HLO text
  (:mod:`pmapviz.core.xla.hlo`), must be one all-reduce;
* :func:`block_spec`: a PartitionSpec on a one-axis mesh of the devices; JAX's
  ``NamedSharding(...).shard_shape`` says each device's block (or refuses, in its own words),
  and the block must be the task's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pmapviz.core.devices import devicefacts
from pmapviz.core.planning import planning
from pmapviz.core.running import jaxsays, programanalysis
from pmapviz.features.exercises import verdicts
from pmapviz.features.exercises.verdicts import SOLVED, Judgement
from pmapviz.features.meshes import meshplacement, meshspecs

WANTED = "all-reduce"  # the collective the replicas' exercise compiles to
GRAD = 3  # each device's gradient: this many numbers


def compiled_kinds(program, p) -> tuple[str, ...]:
    """The collectives XLA emitted for the plan's pmap (its HLO after compile), in order."""
    analysis = programanalysis.analyse(programanalysis.plan_target(program, p), variants=False)
    return tuple(r.hlo.kind for r in analysis.rows)


def replicas_agree(values: Mapping[str, Any], n: int) -> Judgement:
    """Your own f(g) (``values["body"]``) under ``jax.pmap(f, axis_name='i')`` on g of shape
    (n, 3): the compiled program must hold exactly one collective, an all-reduce over the
    devices (what makes every replica's gradient the same)."""
    program = values["body"]
    p = planning.plan(program, [(n, GRAD)], axis_name="i", n_devices=n)
    if not p.ok:
        return verdicts.plan_verdict(program, p)
    kinds = compiled_kinds(program, p)
    if kinds == (WANTED,):
        return SOLVED
    found = ", ".join(dict.fromkeys(kinds)) or "no collective"
    return verdicts.wrong(
        verdicts.WRONG,
        f"compiles to {found}, not one {WANTED}",
        f"XLA compiled f to {found} ({len(kinds)} collective(s)). Each device's gradient "
        f"becomes the same on every replica only through one {WANTED} over the devices.",
    )


AXIS = "i"


def block_target(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(x's shape, each device's block) of the spec exercise on ``n`` devices."""
    return (4, 2 * n), (4, 2)


def block_spec(values: Mapping[str, Any], n: int) -> Judgement:
    """A PartitionSpec (``values["spec"]``) for x of shape (4, 2n) on a mesh of the n devices
    with one axis 'i': each device's block must be (4, 2)."""
    spec = tuple(values["spec"])
    shape, want = block_target(n)
    mesh = meshspecs.Mesh((n,), (AXIS,))
    said, block = _jax_block(mesh, shape, spec)
    found = meshspecs.problems(mesh, shape, spec)
    if said is not None or found:
        rule = SPEC_RULES.get(found[0].code, "refused by NamedSharding") if found else ""
        words = found[0].message if found else ""
        error_type = said.name if said is not None else verdicts.REFUSED
        return verdicts.wrong(
            error_type, rule or "refused by NamedSharding", words, said.text if said else ""
        )
    if block != want:
        return verdicts.wrong(
            verdicts.WRONG,
            f"each block must be ({want[0]}, {want[1]})",
            f"{meshspecs.spec_text(spec)} gives each device a block of {block}; the task asks "
            f"for {want}.",
        )
    return SOLVED


SPEC_RULES = {  # meshspecs.problems' codes, as a rule's words
    "unknown_axis": "an axis the mesh does not have",
    "axis_twice": "one mesh axis splits two dimensions",
    "spec_too_long": "more entries than x has dimensions",
    "indivisible": "the devices do not divide a dimension",
}


def _jax_block(mesh: meshspecs.Mesh, shape, spec) -> tuple[jaxsays.JaxSaid | None, tuple]:
    """JAX's own answer: each device's block under ``NamedSharding(mesh, P(*spec))``, or its
    exception (never raised)."""
    from jax.sharding import NamedSharding, PartitionSpec

    devices = devicefacts.local_devices_for_work()[: mesh.devices]
    try:
        sharding = NamedSharding(meshplacement.jax_mesh(mesh, devices), PartitionSpec(*spec))
        return None, tuple(sharding.shard_shape(shape))
    except Exception as err:  # noqa: BLE001 -- JAX's refusal is the answer, never a traceback
        return jaxsays.said(err), ()
