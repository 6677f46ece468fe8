"""From pmap to today's API: the explorer's settings as ``jax.shard_map`` over a named mesh,
and both run on the same values to show that they agree.

``jax.pmap(f, in_axes, out_axes, axis_name)`` over n devices is ``jax.shard_map`` over a
one-axis mesh of those n devices named ``axis_name``: an argument mapped along axis k gets
``P(None, ..., axis_name)`` with the name at position k (``P()`` when not mapped), and each
output likewise from its out_axes. Two things differ, and :func:`equivalent` says both in the
user's numbers: shard_map keeps the mapped axis in each device's block (size 1 here, where
pmap removes it), so the per-device function squeezes it off and puts it back; and an output
with ``out_axes=None`` becomes ``out_specs=P()``, which shard_map checks (``check_vma``): where
pmap silently returns one device's value for an output that differs between devices,
shard_map refuses, and :func:`run_both` reports that refusal as the finding it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmapviz.core.base import pytrees
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import first_line, fmt_shape
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.features.meshes import meshownf
from pmapviz.features.meshes.meshspecs import Mesh, spec_text


@dataclass(frozen=True)
class MigrationRow:
    """One array (an input leaf or an output leaf) in both APIs."""

    name: str  # x, params['b'], out, out[0]
    shape: tuple[int, ...]
    axis: int | None  # its in_axes / out_axes entry (normalised)
    spec: tuple  # the PartitionSpec, as entries
    pmap_block: tuple[int, ...]  # what f sees on each device under pmap (axis removed)
    shard_map_block: tuple[int, ...]  # ... under shard_map (axis kept, size shape[axis] / n)


@dataclass(frozen=True)
class Equivalent:
    """A plan as shard_map: the mesh, each input's and output's row, and notes on what differs."""

    mesh: Mesh
    inputs: tuple[MigrationRow, ...]
    outputs: tuple[MigrationRow, ...]
    notes: tuple[str, ...]


def axis_spec(axis: int | None, name: str) -> tuple:
    """The PartitionSpec entries of an array pmap maps along ``axis`` (None: ``P()``)."""
    return () if axis is None else (None,) * axis + (name,)


def _row(
    name: str, shape: tuple[int, ...], axis: int | None, axis_name: str, n: int
) -> MigrationRow:
    if axis is None:
        return MigrationRow(name, shape, None, (), shape, shape)
    pm = shape[:axis] + shape[axis + 1 :]
    sm = shape[:axis] + (shape[axis] // n,) + shape[axis + 1 :]
    return MigrationRow(name, shape, axis, axis_spec(axis, axis_name), pm, sm)


def equivalent(plan: Plan) -> Equivalent:
    """The mesh, every input's and output's PartitionSpec, and the blocks f sees in each API,
    for a valid plan."""
    if not plan.ok:
        raise ValueError("only a valid plan has a shard_map equivalent")
    name, n = plan.axis_name or "i", plan.devices_used
    ins = tuple(_row(leaf.name, leaf.shape, leaf.axis, name, n) for leaf in plan.leaves)
    named = pytrees.leaves(plan.out_shapes, "out")  # out, or out[0], out['b'], ...
    outs = tuple(
        _row(o, shape, ax, name, n)
        for (o, shape), ax in zip(named, plan.out_leaf_axes, strict=True)
    )
    notes = [
        f"The mesh is the {n} device(s) pmap uses, on one axis named {name!r}: "
        f"jax.make_mesh(({n},), ({name!r},))."
    ]
    if any(r.axis is not None for r in ins):
        notes.append(
            "shard_map keeps the mapped axis in each device's block (size 1 here); "
            "pmap removes it. The per-device function squeezes it off before calling "
            "f and puts it back on f's result."
        )
    if plan.axis_name is None:
        notes.append("pmap had no axis_name; a mesh axis always has one, so it is called 'i'.")
    for r in outs:
        if r.axis is None:
            notes.append(
                f"{r.name} has out_axes=None, so its out_specs is P(): one value for "
                "every device. shard_map checks that f's output really is the same on "
                "every device (check_vma) and refuses it otherwise, where pmap would "
                "return one device's value without a word (the explorer refuses "
                "that setting too)."
            )
    return Equivalent(Mesh((n,), (name,)), ins, outs, tuple(notes))


@dataclass(frozen=True)
class DirectSplit:
    """pmap's reshape, skipped: one mapped input with its mapped axis merged into the next
    (the array before the reshape), which shard_map takes whole and its in_specs splits over
    the mesh into exactly the block f gets under pmap, the mapped axis already gone."""

    name: str  # the input: x, params['b']
    merged: tuple[int, ...]  # its shape with the mapped axis merged into the next one
    spec: tuple  # its PartitionSpec: the mesh's name at the merged axis
    block: tuple[int, ...]  # what each device gets: its pmap block
    devices: int

    def words(self) -> str:
        """The sentence, in this input's numbers."""
        return (
            "Written for shard_map from the start, you can skip pmap's reshape: "
            f"in_specs={spec_text(self.spec)} on {self.name} as one {fmt_shape(self.merged)} "
            f"array gives each of {self.devices:,} devices a {fmt_shape(self.block)} block "
            "directly, the block f gets under pmap."
        )


def direct_split(eq: Equivalent) -> DirectSplit | None:
    """The first mapped input that has an axis after its mapped one, merged into it; None when
    none has (a mapped axis that is the last has nothing to merge with: shard_map would give
    each device a block of length 1 where pmap gives f one element)."""
    for r in eq.inputs:
        if r.axis is not None and r.axis + 1 < len(r.shape):
            k = r.axis
            merged = r.shape[:k] + (r.shape[k] * r.shape[k + 1],) + r.shape[k + 2 :]
            return DirectSplit(r.name, merged, r.spec, r.pmap_block, eq.mesh.devices)
    return None


def spec_rows(eq: Equivalent) -> list[dict]:
    """The table: per array, its axes in pmap and its PartitionSpec, and the two blocks."""
    return [
        {
            "array": r.name,
            "shape": fmt_shape(r.shape),
            "pmap axis": "None" if r.axis is None else str(r.axis),
            "PartitionSpec": spec_text(r.spec),
            "pmap's block": fmt_shape(r.pmap_block),
            "shard_map's block": fmt_shape(r.shard_map_block),
        }
        for r in (*eq.inputs, *eq.outputs)
    ]


def meshes_settings(
    eq: Equivalent, program: Program, max_args: int, n_devices: int = 0
) -> dict[str, str] | None:
    """The Meshes page's settings (its URL keys) for these arrays: the one-axis mesh (Explicit,
    as the shard_map script's ``jax.make_mesh`` makes it), each input's global shape and
    PartitionSpec, and f. f's own body serves as both views when it
    has no collective and the Meshes page's check passes on this server's ``n_devices``
    (shard_map hands it blocks that keep the mapped axis); else the first argument as it is.
    None when there are more inputs than the page takes."""
    if len(eq.inputs) > max_args or not eq.inputs:
        return None
    names = [r.name if r.name.isidentifier() else f"a{k}" for k, r in enumerate(eq.inputs)]
    found = {
        "mesh": str(eq.mesh.shape[0]),
        "names": eq.mesh.names[0],
        "t0": "explicit",  # the shard_map script's jax.make_mesh gives Explicit
        "args": ", ".join(names),
        "gf": names[0],
        "lf": names[0],
        "out": spec_text(eq.inputs[0].spec),
    }
    for k in range(max_args):
        r = eq.inputs[k] if k < len(eq.inputs) else None
        found[f"s{k}"] = ", ".join(map(str, r.shape)) if r else ""
        found[f"p{k}"] = spec_text(r.spec) if r else "P()"
    if body := _own_body(eq, program, names, n_devices):
        found |= {"gf": body, "lf": body, "out": spec_text(eq.outputs[0].spec)}
    return found


def _own_body(eq: Equivalent, program: Program, names: list[str], n_devices: int) -> str | None:
    """f's body, when the Meshes page can run it as both views of these arrays."""
    if (
        program.needs_axis_name
        or len(eq.outputs) != 1
        or names != list(program.arg_names)
        or eq.mesh.devices > n_devices
    ):
        return None
    body = program.body(None)
    f = meshownf.MeshF(", ".join(names), body, body, eq.outputs[0].spec)
    args = [(r.name, r.shape, r.spec) for r in eq.inputs]
    try:
        return body if meshownf.check(eq.mesh, args, f).ok else None
    except SettingError:
        return None


REFUSED = (
    "shard_map refuses out_specs=P() here: its check_vma cannot prove that the output "
    "is the same on every device, though pmap accepted out_axes=None. A lax.all_gather "
    "result counts as differing between devices unless it says otherwise: in the "
    "shard_map code write lax.all_gather(..., to='invarying'). A value that really "
    "differs needs an out_axes (an out_specs naming the axis)."
)


@dataclass(frozen=True)
class Agreement:
    """Both APIs on the same values: plain numbers and text, no device arrays."""

    pmap_shapes: tuple[tuple[int, ...], ...]  # every output leaf
    shard_map_shapes: tuple[tuple[int, ...], ...]
    max_abs_diff: float | None  # None when shard_map refused
    refused: str | None  # shard_map's refusal (check_vma), first line

    @property
    def agree(self) -> bool:
        """Whether shard_map ran and gave pmap's shapes and values (within 1e-5)."""
        return (
            self.refused is None
            and self.max_abs_diff is not None
            and (self.max_abs_diff <= 1e-5 and self.pmap_shapes == self.shard_map_shapes)
        )


def shard_map_fn(fn, plan: Plan, eq: Equivalent):
    """``jax.jit(jax.shard_map(f_block))`` on the mesh of ``plan.devices_used`` devices:
    f_block squeezes the mapped axis off each block, calls ``fn`` (one array per leaf) and
    puts each output leaf's axis back."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh as JaxMesh
    from jax.sharding import PartitionSpec

    out_axes = plan.out_leaf_axes

    def f_block(*blocks):
        args = [
            b if ax is None else jnp.squeeze(b, ax)
            for b, ax in zip(blocks, plan.leaf_axes, strict=True)
        ]
        leaves, tree = jax.tree.flatten(fn(*args))
        back = [
            o if ax is None else jnp.expand_dims(o, ax)
            for o, ax in zip(leaves, out_axes, strict=True)
        ]
        return jax.tree.unflatten(tree, back)

    out_specs = pytrees.unflatten(
        pytrees.skeleton(plan.out_shapes), [PartitionSpec(*r.spec) for r in eq.outputs]
    )
    devs = devicefacts.local_devices_for_work()[: plan.devices_used]
    mesh = JaxMesh(np.array(devs), eq.mesh.names)
    return jax.jit(
        jax.shard_map(
            f_block,
            mesh=mesh,
            in_specs=tuple(PartitionSpec(*r.spec) for r in eq.inputs),
            out_specs=out_specs,
            check_vma=True,
        )
    )


def run_both(
    program: Program, plan: Plan, kind: str = "random", seed: int = 0, on_wait=None
) -> Agreement:
    """pmap and its shard_map equivalent on the same values, compared leaf by leaf."""
    eq = equivalent(plan)
    need = memorymodel.with_temporaries(
        memoryestimates.live_run_bytes(plan, program.key),
        pmapcompile.plan_temporaries(program, plan),
    )
    if sandbox.applies(program):  # your own f: in a process stopped at the time limit
        args = (scenarios.program_ref(program), plan.key, kind, seed)
        largest = sandbox.largest_axis(plan)
        return sandbox.call("both", args, need, "pmap beside shard_map", largest, on_wait)
    with memorypool.reserve(need, "pmap beside shard_map", on_wait):
        return _run_both(program, plan, eq, kind, seed)


def run_both_here(program: Program, plan: Plan, kind: str, seed: int) -> Agreement:
    """:func:`run_both`'s runs alone (the caller holds the memory: the sandbox's worker)."""
    return _run_both(program, plan, equivalent(plan), kind, seed)


def _run_both(program: Program, plan: Plan, eq: Equivalent, kind: str, seed: int) -> Agreement:
    import jax

    fn = pmapcompile.own_function(plan.leaf_fn(program.build(plan.axis_name)))
    xs = pmaprun.make_values(plan, kind, seed)
    pm = jax.pmap(
        fn,
        in_axes=plan.leaf_axes,
        out_axes=plan.out_axes,
        axis_name=plan.axis_name,
        devices=devicefacts.local_devices_for_work()[: plan.devices_used],
    )
    want = [np.asarray(o) for o in jax.tree.leaves(pm(*xs))]
    pmapcompile.forget_pmap(fn)
    pshapes = tuple(tuple(w.shape) for w in want)
    try:
        got = [np.asarray(o) for o in jax.tree.leaves(shard_map_fn(fn, plan, eq)(*xs))]
    except ValueError as err:  # check_vma: out_specs P() for an output that varies
        return Agreement(pshapes, (), None, REFUSED + f" JAX says: {first_line(err)}")
    finally:
        pmapcompile.bound_jax_caches()  # every few programs, refused ones included
    diffs = [
        float(np.max(np.abs(w.astype(np.float64) - g.astype(np.float64)))) if w.size else 0.0
        for w, g in zip(want, got, strict=True)
        if w.shape == g.shape
    ]
    return Agreement(
        pshapes, tuple(tuple(g.shape) for g in got), max(diffs) if diffs else None, None
    )
