"""The traps of JAX's pmap migration guide (docs/migrate_pmap.md), each run on the explorer's
pmap settings and read from the run, not stated.

* ``out[0]`` on an output pmap split over the devices: the compiled program of that index
  (``jax.jit``, as the eager index runs a jitted gather) has a collective over every device,
  read from its HLO (as :mod:`pmapviz.features.compiled.hiddencomm` reads it, and timed as it
  times it); the fix, device 0's own shard (``out.addressable_shards[0].data``), has none, and
  both give the same values.
* ``out_axes=None``: pmap does not check it. Run with it, it returns device 0's value even
  where the devices' values differ; ``jax.shard_map`` with ``out_specs=P()`` refuses such an
  output (``check_vma``), in JAX's words.
* nested pmap: ``jax.pmap(jax.pmap(f))`` with the mapped axis split in two, asked of JAX on
  abstract inputs; its refusal as it words it.
* ``jax.device_put_replicated``, ``jax.device_put_sharded`` and ``jax.sharding.PmapSharding``:
  whether the installed JAX has them (``hasattr``) and what it says when they are used; the
  replacements, ``jax.device_put(x, NamedSharding(mesh, P()))`` and ``P(name)``, run and read
  back shard by shard, then given to the pmap.
* host-local and global arrays: ``jax.make_array_from_process_local_data`` on this one
  process, and what JAX says when asked for the global shape several processes would make.

Every trap's own f runs as the explorer's live runs do (your own f in the sandbox worker).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmapviz.core.base import pytrees
from pmapviz.core.base.valuetext import quote
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.budgets.memorymodel import device_dtype, nbytes
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.core.running.programanalysis import rows_for
from pmapviz.core.xla.hlo import parse_hlo
from pmapviz.features.compiled import hiddencomm
from pmapviz.features.meshes import migrationapis
from pmapviz.features.meshes.migrationapis import Trap

LABEL = "the pmap migration's traps"


@dataclass(frozen=True)
class Traps:
    """Every trap, in the guide's order, for one run of the explorer's settings."""

    devices: int
    traps: tuple[Trap, ...]

    def get(self, key: str) -> Trap:
        """The trap with this key."""
        return next(t for t in self.traps if t.key == key)


def traps_bytes(program: Program, plan: Plan) -> memorymodel.Need:
    """The run's peak: a live run's (:func:`memoryestimates.live_run_bytes`) with the plan's
    temporaries, plus the outputs of the two more pmap runs kept for comparison and each input
    placed again (the replacements and the global array)."""
    base = memorymodel.with_temporaries(
        memoryestimates.live_run_bytes(plan, program.key),
        pmapcompile.plan_temporaries(program, plan),
    )
    ins = sum(nbytes(leaf.shape, device_dtype(leaf.dtype)) for leaf in plan.leaves)
    outs = sum(
        nbytes(shape, device_dtype(str(dt)))
        for (_, shape), dt in zip(
            pytrees.leaves(plan.out_shapes, "out"), _leaves(plan.out_dtypes), strict=True
        )
    )
    extra = 3 * ins + 3 * outs
    return memorymodel.Need(base.total + extra, base.host + extra, base.device + extra)


def _leaves(tree) -> list:
    """A tree's leaves (dtypes) in the order :func:`pytrees.leaves` gives its shapes."""
    return [
        v
        for _, v in pytrees.leaves(
            tree, "", is_leaf=lambda v: not isinstance(v, dict | tuple | list)
        )
    ]


def run_traps(
    program: Program, plan: Plan, kind: str = "random", seed: int = 0, on_wait=None
) -> Traps:
    """Every trap on these settings (a valid plan on this process's devices), holding the
    run's memory in the server's pool; your own f in the sandbox worker."""
    need = traps_bytes(program, plan)
    if sandbox.applies(program):
        args = (scenarios.program_ref(program), plan.key, kind, seed)
        return sandbox.call("traps", args, need, LABEL, sandbox.largest_axis(plan), on_wait)
    with memorypool.reserve(need, LABEL, on_wait):
        return run_traps_here(program, plan, kind, seed)


def run_traps_here(program: Program, plan: Plan, kind: str = "random", seed: int = 0) -> Traps:
    """:func:`run_traps`' runs alone (the caller holds the memory: the sandbox's worker)."""
    import jax

    if not plan.ok:
        raise ValueError("only a valid plan's traps are run")
    fn = pmapcompile.own_function(plan.leaf_fn(program.build(plan.axis_name)))
    xs = pmaprun.make_values(plan, kind, seed)
    devs = devicefacts.local_devices_for_work()[: plan.devices_used]

    def run(out_axes, inputs=None):
        pm = jax.pmap(
            fn,
            in_axes=plan.leaf_axes,
            out_axes=out_axes,
            axis_name=plan.axis_name,
            devices=devs,
        )
        return pm(*(xs if inputs is None else inputs))

    try:
        found = (
            index_trap(run(plan.out_axes), plan),
            out_axes_none_trap(fn, plan, xs, run),
            migrationapis.nested_trap(fn, plan),
            migrationapis.deprecated_trap(plan, xs, devs, run),
            migrationapis.host_local_trap(plan, xs, devs),
        )
    finally:
        pmapcompile.forget_pmap(fn)
        pmapcompile.bound_jax_caches()
    return Traps(plan.devices_used, found)


# ---------------------------------------------------------------- out[0]
def index_text(axis: int) -> str:
    """``[0]`` on axis 0, ``[:, 0]`` on axis 1: index 0 of the mapped axis."""
    return "[" + ":, " * axis + "0]"


def collective_kinds(compiled, n: int) -> list[str]:
    """The collectives a compiled program for ``n`` devices has, read from its HLO (the kind
    of each instruction)."""
    return [kind for kind, _ in collectives(compiled, n)]


def collectives(compiled, n: int) -> list[tuple[str, int]]:
    """Each collective's kind and how many devices take part in each of its groups (read from
    its replica groups; none listed: all ``n``)."""
    rows = rows_for(parse_hlo(compiled.as_text()), n)
    return [(r.hlo.kind, len(r.hlo.replica_groups[0]) if r.hlo.replica_groups else n) for r in rows]


def _comm_words(found: list[tuple[str, int]], n: int) -> str:
    """'all-reduce over all 8 devices', or 'no collective'."""
    if not found:
        return "no collective"
    return ", ".join(
        f"{kind} over {'all ' if size == n else 'groups of '}{size} device{'s' * (size != 1)}"
        for kind, size in found
    )


def index_trap(out, plan: Plan) -> Trap:
    """``out[0]`` (index 0 of the mapped axis) on the first output leaf pmap split over the
    devices: its collectives and time against device 0's own shard."""
    import jax

    title = "out[0] of a split output talks to every device"
    named = pytrees.leaves(plan.out_shapes, "out")
    leaves = jax.tree.leaves(out)
    mapped = [
        (name, leaf, ax)
        for (name, _), leaf, ax in zip(named, leaves, plan.out_leaf_axes, strict=True)
        if ax is not None
    ]
    if not mapped:
        return Trap(
            "index",
            title,
            "out[0]",
            "Every output has out_axes=None: pmap returns it whole on every device (`P()`), so "
            "indexing it needs no communication.",
            applies=False,
        )
    name, leaf, ax = mapped[0]
    idx = (slice(None),) * ax + (0,)
    got = np.asarray(leaf[idx])  # the eager index itself
    n = plan.devices_used
    found = collectives(jax.jit(lambda a: a[idx]).lower(leaf).compile(), n)
    kinds = [kind for kind, _ in found]
    shard = leaf.addressable_shards[0].data
    fix = np.asarray(jax.numpy.squeeze(shard, ax))
    squeeze = jax.jit(lambda b: jax.numpy.squeeze(b, ax))
    fix_kinds = collective_kinds(squeeze.lower(shard).compile(), n)
    took = hiddencomm.median_time(lambda: leaf[idx])  # as the Compiled page times out[0]
    fix_took = hiddencomm.median_time(lambda: jax.numpy.squeeze(shard, ax))
    code = f"{name}{index_text(ax)}"
    said = (
        f"{quote(name)} is `{leaf.dtype}{list(leaf.shape)}` split over {n} device(s) on axis "
        f"{ax} (sharding `{leaf.sharding.spec}`). {quote(code, 60)} compiles to "
        + _comm_words(found, n)
        + (
            ": JAX cannot know the devices' blocks are alike, so it brings the row to every "
            "device (its result is `P()`: replicated)."
            if found
            else " here: one device holds all of it. On more devices the same index "
            "communicates with every one of them."
        )
    )
    return Trap(
        "index",
        title,
        code,
        said,
        fix_code=f"{name}.addressable_shards[0].data.squeeze({ax})",
        fix_said=(
            "Device 0's own shard: "
            + (", ".join(fix_kinds) if fix_kinds else "no collective")
            + f"; the same values: {bool(np.array_equal(got, fix))}. Median of 5 warm calls: "
            f"{code} {took * 1e3:.3f} ms, the shard {fix_took * 1e3:.3f} ms."
        ),
        facts={
            "leaf": name,
            "axis": ax,
            "collectives": kinds,
            "fix_collectives": fix_kinds,
            "same_values": bool(np.array_equal(got, fix)),
            "time_s": took,
            "fix_time_s": fix_took,
            "shape": list(got.shape),
        },
    )


# ---------------------------------------------------------------- out_axes=None
def out_axes_none_trap(fn, plan: Plan, xs, run) -> Trap:
    """pmap with ``out_axes=None`` (every output), against every device's own values (run
    with ``out_axes=0``); ``jax.shard_map`` with ``out_specs=P()`` on the same f."""
    import jax

    stacked = [np.asarray(o) for o in jax.tree.leaves(run(0))]
    got = [np.asarray(o) for o in jax.tree.leaves(run(None))]
    named = [name for name, _ in pytrees.leaves(plan.out_shapes, "out")]
    differ = [
        name
        for name, s in zip(named, stacked, strict=True)
        if s.shape[0] > 1 and not all(np.array_equal(s[0], s[k]) for k in range(1, s.shape[0]))
    ]
    device0 = all(np.array_equal(g, s[0]) for g, s in zip(got, stacked, strict=True))
    refused = migrationapis.shard_map_replicated(fn, plan, xs)
    code = "jax.pmap(f, ..., out_axes=None)"
    if differ:
        said = (
            f"pmap ran and returned device 0's value of {', '.join(map(quote, differ))}, though "
            f"the devices' values differ: no error, no warning (device 0's value: {device0})."
        )
    else:
        said = (
            "Every device returns the same output here, so out_axes=None is right for these "
            f"settings; pmap returned it (device 0's value: {device0})."
        )
    fix_said = (
        "`jax.shard_map(..., out_specs=P(), check_vma=True)` refuses it."
        if refused
        else "`jax.shard_map(..., out_specs=P())` runs: its check_vma proves the output is the "
        "same on every device."
    )
    return Trap(
        "out_axes_none",
        "out_axes=None is not checked by pmap",
        code,
        said,
        jax_words=refused,
        fix_code="jax.shard_map(f, mesh=mesh, in_specs=..., out_specs=P())",
        fix_said=fix_said,
        facts={
            "differ": differ,
            "returned_device0": device0,
            "shard_map_refused": bool(refused),
            "values": [g.tolist() for g in got] if sum(g.size for g in got) <= 64 else None,
        },
    )
