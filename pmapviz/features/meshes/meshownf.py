"""Your own f on a named mesh, both ways: typed as two expressions over the Meshes page's
arguments (:mod:`pmapviz.core.expressions.expr`, never evaluated as Python), the global view for
``jax.jit`` with NamedSharding and the per-device view for ``jax.shard_map`` with collectives over
named axes, plus the ``out_specs`` that put the per-device blocks back together.

:func:`check` says, before anything runs, what JAX would refuse, in the user's shapes and with
a fix: an expression that does not parse, a collective over an axis the mesh lacks (or in the
global view, which has no named axes to reduce over), an ``out_specs`` that names an unknown
axis, one twice or too many dimensions, an ``out_specs`` that claims replication over an axis
where the per-device output varies (``check_vma``'s refusal), and two views whose outputs have
different shapes. Every shape and the set of varying axes come from JAX: ``jax.eval_shape``
of the jitted global f, and of the shard_map'ped per-device f, which records
``jax.typeof(out)``'s varying mesh axes while it is traced.

:func:`run` runs both (:mod:`pmapviz.features.meshes.meshviews`), each checked against the global f
on one device, inside the server's memory budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pmapviz.core.base.valuetext import first_line, fmt_shape, quote
from pmapviz.core.budgets import compiledmemory, memoryestimates, memorymodel, memorypool
from pmapviz.core.expressions import expr, exprvocab
from pmapviz.core.running import sandbox
from pmapviz.features.meshes import meshviews
from pmapviz.features.meshes.meshplacement import jax_mesh, local_shape
from pmapviz.features.meshes.meshspecs import Entry, Mesh, SpecProblem, axes_of, problems, spec_text

Spec = tuple[Entry, ...]
Args = list[tuple[str, tuple[int, ...], Spec]]  # (label, global shape, spec), as the page has them


@dataclass(frozen=True)
class MeshF:
    """f as typed: its argument names, its two bodies, and the output's PartitionSpec."""

    arg_names: str  # 'x, w'
    global_body: str  # 'x @ w'
    local_body: str  # "lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')"
    out_spec: Spec

    def programs(self) -> tuple[expr.ExprProgram, expr.ExprProgram]:
        """Both bodies checked (raises :class:`pmapviz.core.expressions.exprvocab.ExprError`
        naming which one)."""
        out = []
        for view, body in (("global f", self.global_body), ("per-device f", self.local_body)):
            try:
                out.append(expr.program(self.arg_names, body))
            except exprvocab.ExprError as err:
                raise exprvocab.ExprError(f"{view}: {err}") from None
        return out[0], out[1]


@dataclass(frozen=True)
class ViewsCheck:
    """What tracing both views said, before anything runs."""

    problems: tuple[SpecProblem, ...]
    global_out: tuple[int, ...] | None = None  # the global f's output shape
    local_out: tuple[int, ...] | None = None  # the per-device f's output block
    varying: tuple[str, ...] = ()  # mesh axes along which the per-device output differs
    dtype: str | None = None

    @property
    def ok(self) -> bool:
        """Whether tracing found no problem."""
        return not self.problems


def _problem(code: str, message: str, fix: str) -> ViewsCheck:
    return ViewsCheck((SpecProblem(code, message, fix),))


def check(mesh: Mesh, args: Args, f: MeshF, devices: list | None = None) -> ViewsCheck:
    """Every problem JAX would raise for these settings, each with a fix; the arguments'
    own specs are checked by :func:`pmapviz.features.meshes.meshspecs.problems` first (the page
    stops there)."""
    try:
        g, loc = f.programs()
    except exprvocab.ExprError as err:
        return _problem(
            "expression",
            str(err),
            "Edit that expression; the message names the column of the first thing refused.",
        )
    if len(g.arg_names) != len(args):
        return _problem(
            "arg_count",
            f"f takes {len(g.arg_names)} argument(s) "
            f"({', '.join(g.arg_names)}), and {len(args)} shape(s) are given above.",
            f"Name {len(args)} argument(s), one per shape, or give {len(g.arg_names)} shape(s).",
        )
    if found := _axis_problems(mesh, g, loc):
        return ViewsCheck(tuple(found))
    if found := [p for p in _spec_problems(mesh, f.out_spec) if p]:
        return ViewsCheck(tuple(found))
    traced = _trace(mesh, args, g, loc, devices)
    if isinstance(traced, ViewsCheck):
        return traced
    global_out, local_out, varying, dtype = traced
    found = _out_problems(mesh, f.out_spec, global_out, local_out, varying, loc.source)
    return ViewsCheck(tuple(found), global_out, local_out, varying, dtype)


def _axis_problems(mesh: Mesh, g: expr.ExprProgram, loc: expr.ExprProgram) -> list[SpecProblem]:
    found = []
    if g.axis_names:
        found.append(
            SpecProblem(
                "collective_in_global",
                f"The global f uses a collective over "
                f"{', '.join(map(quote, g.axis_names))}; under jax.jit the whole "
                "arrays are in hand and there are no named axes to reduce over.",
                "Write the global f on whole arrays (x.sum(axis=0), not "
                "lax.psum); collectives belong in the per-device f.",
            )
        )
    unknown = [a for a in loc.axis_names if a not in mesh.names]
    if unknown:
        found.append(
            SpecProblem(
                "unknown_axis",
                f"The per-device f names the axis "
                f"{quote(unknown[0])}, which the mesh ({mesh.text()}) does not "
                "have.",
                f"Use one of {', '.join(mesh.names)}.",
            )
        )
    return found


def _spec_problems(mesh: Mesh, spec: Spec) -> list[SpecProblem]:
    """out_specs' own problems that do not need a shape: unknown axes, an axis twice."""
    found = []
    for p in problems(mesh, (math.prod(mesh.shape),) * len(spec), spec, "the output"):
        if p.code in ("unknown_axis", "axis_twice"):
            found.append(SpecProblem(p.code, "out_specs " + p.message, p.fix))
    return found


def _out_problems(
    mesh: Mesh, spec: Spec, global_out, local_out, varying, source: str
) -> list[SpecProblem]:
    if len(spec) > len(local_out):
        return [
            SpecProblem(
                "spec_too_long",
                f"out_specs {spec_text(spec)} has {len(spec)} entries, "
                f"but the per-device f returns a block of shape {fmt_shape(local_out)} "
                f"({len(local_out)} dimensions).",
                f"Use at most {len(local_out)} entries: {spec_text(spec[: len(local_out)])}.",
            )
        ]
    named = {a for e in spec for a in axes_of(e)}
    claimed = [a for a in mesh.names if a in varying and a not in named]
    if claimed:
        return [_claims_replication(mesh, spec, claimed, local_out, source)]
    full = tuple(spec) + (None,) * (len(local_out) - len(spec))
    assembled = tuple(
        d * math.prod(mesh.size[a] for a in axes_of(e))
        for d, e in zip(local_out, full, strict=True)
    )
    if assembled != tuple(global_out):
        return [
            SpecProblem(
                "shapes_differ",
                f"The global f returns {fmt_shape(global_out)}; the "
                f"per-device f returns blocks of {fmt_shape(local_out)}, which "
                f"out_specs {spec_text(spec)} puts together as {fmt_shape(assembled)}.",
                "Make the two views compute the same thing: change out_specs (which "
                "mesh axes each output dimension is split over) or one of the "
                "bodies.",
            )
        ]
    return []


def _claims_replication(
    mesh: Mesh, spec: Spec, claimed: list[str], local_out, source: str
) -> SpecProblem:
    axes = ", ".join(map(quote, claimed))
    first = claimed[0]
    same = (
        f"make it the same everywhere in the per-device f: `lax.psum(..., {first!r})` "
        f"adds the blocks, `lax.all_gather(..., {first!r}, tiled=True, to='invarying')` "
        "collects them"
    )
    if "lax.all_gather(" in source and "to='invarying'" not in source:
        same = (
            f"if your lax.all_gather already gives every device the same array, say so: "
            f"add to='invarying' to it (an all_gather's result counts as differing "
            f"between devices unless it says otherwise); or {same}"
        )
    free = [k for k in range(len(local_out)) if k >= len(spec) or spec[k] is None]
    named = ""
    if free:
        k = free[0]
        entries = list(spec) + [None] * (k + 1 - len(spec))
        entries[k] = first if len(claimed) == 1 else tuple(claimed)
        named = (
            f"; or, if the blocks really differ, name {'it' if len(claimed) == 1 else 'them'} "
            f"in out_specs, e.g. {spec_text(tuple(entries))}, which lays the blocks side "
            f"by side along dimension {k}"
        )
    return SpecProblem(
        "claims_replication",
        f"out_specs {spec_text(spec)} says the output is the same on every device along "
        f"{axes}, but the per-device f's output varies along "
        f"{'it' if len(claimed) == 1 else 'them'}: its blocks differ from device to device "
        "there (JAX's check_vma refuses this; pmap's out_axes=None would have returned one "
        "device's block without a word).",
        f"{same[0].upper()}{same[1:]}{named}.",
    )


def _trace(mesh: Mesh, args: Args, g, loc, devices):
    """(global out shape, local out shape, varying axes, dtype), or a ViewsCheck with the
    problem."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    m = meshes_jax(mesh, devices)
    structs = [
        jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(m, PartitionSpec(*spec)))
        for _, shape, spec in args
    ]
    shapes = ", ".join(
        f"{n} {fmt_shape(s)}" for n, (_, s, _) in zip(g.arg_names, args, strict=True)
    )
    try:
        with jax.set_mesh(m):
            out = jax.eval_shape(jax.jit(g.build()), *structs)
    except Exception as err:  # noqa: BLE001 - JAX's refusal, said in the user's shapes
        typed = type(err).__name__ == "ShardingTypeError" and "explicit" in mesh.axis_types
        return _problem(
            "global_trace",
            f"The global f on {shapes}: JAX says: {first_line(err)}",
            "Say the sharding JAX asks for (e.g. jnp.matmul(x, w, out_sharding=P(...))), or "
            "make the axes Auto so that the compiler chooses."
            if typed
            else "Change the global f or the shapes.",
        )
    if not hasattr(out, "shape"):
        return _problem(
            "not_one_array",
            f"The global f returns {type(out).__name__}, not one array.",
            "Return one array.",
        )
    seen: dict = {}
    body = loc.build()

    def probe(*blocks):
        res = body(*blocks)
        seen["shape"], seen["dtype"] = tuple(res.shape), str(res.dtype)
        seen["varying"] = _varying(jax.typeof(res))
        return ()

    mapped = jax.shard_map(
        probe,
        mesh=m,
        in_specs=tuple(PartitionSpec(*s) for _, _, s in args),
        out_specs=(),
        check_vma=True,
    )
    try:
        jax.eval_shape(mapped, *structs)
    except Exception as err:  # noqa: BLE001
        local = ", ".join(
            f"{n} {fmt_shape(local_shape(mesh, s, sp))}"
            for n, (_, s, sp) in zip(loc.arg_names, args, strict=True)
        )
        return _problem(
            "local_trace",
            f"The per-device f on each device's blocks ({local}): JAX says: {first_line(err)}",
            "Write the per-device f for the blocks, not the whole arrays.",
        )
    varying = tuple(a for a in mesh.names if a in seen["varying"])
    return tuple(out.shape), seen["shape"], varying, seen["dtype"]


def _varying(aval) -> frozenset:
    """The mesh axes an abstract value varies over (JAX 0.10: ``.mat.varying``; the
    documented ``.vma`` where it exists)."""
    vma = getattr(aval, "vma", None)
    if vma is None:
        vma = getattr(getattr(aval, "mat", None), "varying", frozenset())
    return frozenset(vma)


def meshes_jax(mesh: Mesh, devices: list | None):
    """The JAX mesh on this process's first devices."""
    return jax_mesh(mesh, meshviews.mesh_devices(mesh, devices))


def values(args: Args, seed: int = 0) -> list[np.ndarray]:
    """Random float32 inputs of the arguments' global shapes."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _, shape, _ in args]


def run_bytes(mesh: Mesh, args: Args, checked: ViewsCheck, temps: int = 0) -> memorymodel.Need:
    """What :func:`run` holds at its peak
    (:func:`pmapviz.core.budgets.memoryestimates.mesh_run_bytes`); ``temps``:
    the largest temporaries XLA planned for one of the programs, all devices together
    (:func:`planned_temps`)."""
    inputs = sum(4 * math.prod(s) for _, s, _ in args)
    placed = sum(4 * math.prod(local_shape(mesh, s, sp)) * mesh.devices for _, s, sp in args)
    output = 4 * math.prod(checked.global_out or ())
    return memoryestimates.mesh_run_bytes(inputs, placed, output, temps)


def compile_views(mesh: Mesh, args: Args, f: MeshF, devices: list | None = None) -> dict:
    """The three programs a run needs, compiled from abstract inputs before anything is
    allocated: ``"global"`` and ``"per-device"`` on the mesh, ``"reference"`` (the global f)
    on one device; ``"mesh"`` is the JAX mesh. Compiled once: read for their memory here,
    then run."""
    g, loc = f.programs()
    m = meshes_jax(mesh, devices)
    specs = [sp for _, _, sp in args]
    structs = meshviews.abstract(m, values_like(args), specs)
    return {
        "mesh": m,
        "global": meshviews.compile_global(g.build(), m, structs, specs, f.out_spec),
        "per-device": meshviews.compile_per_device(loc.build(), m, structs, specs, f.out_spec),
        "reference": meshviews.compile_one_device(g.build(), m, structs),
    }


def planned_temps(mesh: Mesh, views: dict) -> int:
    """The largest temporaries XLA plans for one of the compiled programs, all devices
    together (``compiled.memory_analysis()``): an f whose output is small can still build a
    huge intermediate (``(x[:, :, None] * w[None]).sum(1)``)."""
    temps = [
        dict(compiledmemory.device_memory(views[v])).get("temporaries", 0) * mesh.devices
        for v in ("global", "per-device")
    ]
    return max(
        [*temps, dict(compiledmemory.device_memory(views["reference"])).get("temporaries", 0)]
    )


def values_like(args: Args) -> list:
    """Stand-ins with the arguments' shapes and dtype that allocate nothing (a broadcast
    zero), for :func:`pmapviz.features.meshes.meshviews.abstract`."""
    return [np.broadcast_to(np.float32(0), shape) for _, shape, _ in args]


def run(
    mesh: Mesh,
    args: Args,
    f: MeshF,
    checked: ViewsCheck,
    devices: list | None = None,
    repeat: int = meshviews.REPEAT,
    on_wait=None,
    seed: int = 0,
) -> tuple[meshviews.RunResult, meshviews.RunResult]:
    """Both views, each checked against the global f on one device; ``checked`` must be ok.
    Each program is compiled once; the run waits for room in the server's memory budget for
    its arrays and the temporaries XLA planned (BudgetError when it could never fit)."""
    if not checked.ok:
        raise ValueError("run only settings that check() passed")
    views = compile_views(mesh, args, f, devices)
    need = run_bytes(mesh, args, checked, planned_temps(mesh, views))
    if devices is None and sandbox.wanted():  # in a process stopped at the time limit
        largest = max((max(shape, default=0) for _, shape, _ in args), default=None)
        return sandbox.call(
            "mesh",
            (mesh, args, f, repeat, seed),
            need,
            "running your f on the mesh",
            largest,
            on_wait,
        )
    with memorypool.reserve(need, "running your f on the mesh", on_wait):
        return run_views(mesh, args, f, views, repeat, seed)


def run_views(
    mesh: Mesh,
    args: Args,
    f: MeshF,
    views: dict | None = None,
    repeat: int = meshviews.REPEAT,
    seed: int = 0,
) -> tuple[meshviews.RunResult, meshviews.RunResult]:
    """:func:`run`'s runs alone (the caller holds the memory: :func:`run`, or the sandbox's
    worker), compiling the views first when ``views`` is None."""
    views = views or compile_views(mesh, args, f)
    specs = [spec for _, _, spec in args]
    xs = values(args, seed)
    return tuple(
        meshviews.run_compiled(
            view, views[view], views["mesh"], views["reference"], xs, specs, f.out_spec, repeat
        )
        for view in ("global", "per-device")
    )
