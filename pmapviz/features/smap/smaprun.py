"""The explorer's settings run as ``jax.smap`` beside ``jax.pmap`` and ``jit(vmap)`` on the same
values: every device's block read from the arrays' ``addressable_shards`` beside the slice pmap
gives it, and smap's output checked element by element against both.

The run holds its estimate in the server's memory pool (:func:`estimate`); your own f runs in
the sandbox's worker process, stopped at the time limit (``sandbox.call("smap", ...)``, which
runs :func:`run_here` there). Values come from ``pmaprun.make_values`` (the live run's), the
comparison is ``pmaprun.diff_stats`` (elementwise, in float64 chunks). The result is plain
data: it holds no device memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmapviz.core.base import pytrees
from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.budgets.memorymodel import OVERHEAD, device_dtype, nbytes
from pmapviz.core.devices import devicefacts, jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.arrayshards import Shard, shards_of
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.features.smap import smapcall
from pmapviz.features.smap.pmappipeline import Pipeline, function_of, out_leaf_names
from pmapviz.features.smap.smapsettings import SmapSettings, describe


@dataclass(frozen=True)
class Check:
    """smap's output against another run's: the largest difference, and whether every element
    is close (``np.allclose``'s rule at the run's tolerance) with the same shapes."""

    against: str  # "pmap" or "jit(vmap)"
    max_abs_diff: float
    passed: bool
    shapes: tuple[tuple[int, ...], ...]  # the other run's output leaves

    def words(self) -> str:
        """'equals pmap: largest difference 0' or 'differs from pmap: ...'."""
        verb = "equals" if self.passed else "differs from"
        most = f"largest difference {self.max_abs_diff:.3g}"
        return f"{verb} {self.against} element by element ({most})"


@dataclass(frozen=True)
class SmapRun:
    """smap, pmap and jit(vmap) on the same values: per device (``rows``, mesh order) each
    array's smap block beside its pmap slice; JAX's types of smap's arrays; the checks."""

    settings: str  # the call's settings in words
    mesh_devices: int
    block: int | None  # the block of the mapped axis each smap instance gets
    pmap_devices: int  # 0: pmap does not run these settings (its plan refuses them)
    rows: list[dict]
    out_shapes: tuple[tuple[int, ...], ...]  # smap's output leaves
    types: dict[str, str]  # name -> jax.typeof as JAX prints it (inputs as passed, outputs)
    vs_pmap: Check | None
    vs_vmap: Check
    rtol: float

    @property
    def passed(self) -> bool:
        """Whether smap equals every run it is checked against."""
        return self.vs_vmap.passed and (self.vs_pmap is None or self.vs_pmap.passed)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""

        def check(c: Check | None):
            if c is None:
                return None
            return {"against": c.against, "max_abs_diff": c.max_abs_diff, "passed": c.passed}

        return {
            "settings": self.settings,
            "mesh_devices": self.mesh_devices,
            "block": self.block,
            "pmap_devices": self.pmap_devices,
            "rows": self.rows,
            "out_shapes": [list(s) for s in self.out_shapes],
            "types": dict(self.types),
            "vs_pmap": check(self.vs_pmap),
            "vs_vmap": check(self.vs_vmap),
            "passed": self.passed,
            "rtol": self.rtol,
        }


# ---------------------------------------------------------------- budget
def estimate(plan: Plan, pipe: Pipeline) -> memorymodel.Need:
    """Peak bytes of :func:`run_here`, inputs I and outputs O (smap's, read from its trace):
    the host inputs, one placed copy at a time (the reference's, pmap's, smap's), and the
    reference's, pmap's and smap's outputs on the devices and read back: 3I + 4O."""
    i = sum(nbytes(leaf.shape, device_dtype(leaf.dtype)) for leaf in plan.leaves)
    o = sum(nbytes(shape, np.dtype(dt)) for _, shape, dt in pipe.outputs)
    return memorymodel.Need(3 * i + 4 * o + OVERHEAD, 3 * i + 4 * o + OVERHEAD, 2 * i + 3 * o)


def run(
    program: Program | Callable,
    plan: Plan,
    s: SmapSettings,
    pipe: Pipeline,
    kind: str = "arange",
    seed: int = 0,
    on_wait=None,
    here: bool = False,
) -> SmapRun:
    """:func:`run_here` for settings JAX accepts (``pipe``: smap's trace of them), holding its
    estimate in the pool; a server's own f in the sandbox's worker (stopped at the time
    limit), unless ``here`` (the CLI's and a notebook's own f is the caller's own code)."""
    if pipe.refused is not None:
        raise ValueError("smap refuses these settings: nothing to run")
    need = estimate(plan, pipe)
    if not here and isinstance(program, Program) and sandbox.applies(program):
        args = (scenarios.program_ref(program), plan.key, s, kind, seed)
        largest = sandbox.largest_axis(plan)
        return sandbox.call("smap", args, need, "smap beside pmap", largest, on_wait)
    with memorypool.reserve(need, "smap beside pmap", on_wait):
        result = run_here(program, plan, s, kind, seed)
    jaxstartup.return_freed_memory()
    return result


# ---------------------------------------------------------------- the runs
def _trees(plan: Plan, leaves: list) -> list:
    """The leaves put back into each argument's tree."""
    return [
        pytrees.unflatten(
            arg.skeleton,
            [x for x, leaf in zip(leaves, plan.leaves, strict=True) if leaf.argument == arg.index],
        )
        for arg in plan.arguments
    ]


def _rtol(plan: Plan) -> float:
    dtypes = [leaf.dtype for leaf in plan.leaves]
    if any(d in ("bfloat16", "float16") for d in dtypes):
        return 2e-2
    return 0.0 if all(d.startswith("int") or d == "bool" for d in dtypes) else 1e-5


def _check(against: str, got: list, want: list, rtol: float) -> Check:
    shapes = tuple(tuple(w.shape) for w in want)
    if tuple(tuple(g.shape) for g in got) != shapes:
        return Check(against, float("inf"), False, shapes)
    scale = max([1.0, *(float(np.max(np.abs(w.astype(np.float64)), initial=0)) for w in want)])
    most, _, close = pmaprun.diff_stats(zip(got, want, strict=True), rtol, rtol * scale)
    return Check(against, most, close, shapes)


def _reference(f: Callable, plan: Plan, trees: list) -> list[np.ndarray]:
    """jit(vmap(f)) with the settings as given, on one device: its output leaves on the host."""
    import jax

    dev0 = devicefacts.local_devices_for_work()[0]
    ref = jax.jit(
        jax.vmap(
            f,
            in_axes=tuple(plan.in_axes_given),
            out_axes=plan.out_axes,
            axis_name=smapcall.axis_name(plan),
        )
    )
    out = ref(*jax.device_put(trees, dev0))
    return [np.array(o) for o in jax.tree.leaves(out)]


def _pmap(fn, plan: Plan, host: list) -> tuple[list[list[Shard]], list[list[Shard]], list]:
    """pmap as the live run runs it (the plan's normalised axes, inputs placed as pmap places
    them): each input's and output's shards, and the output leaves on the host."""
    import jax

    n = plan.devices_used
    placed = [
        jax.device_put(a, pmap_sharding(a.ndim, ax, n))
        for a, ax in zip(host, plan.leaf_axes, strict=True)
    ]
    f = pmapcompile.own_function(plan.leaf_fn(function_of(fn, plan.axis_name)))
    pm = jax.pmap(
        f,
        in_axes=plan.leaf_axes,
        out_axes=plan.out_axes,
        axis_name=plan.axis_name,
        devices=devicefacts.local_devices_for_work()[:n],
    )
    try:
        outs = jax.tree.leaves(pm(*placed))
    finally:
        pmapcompile.forget_pmap(f)
    return [shards_of(p) for p in placed], [shards_of(o) for o in outs], [np.array(o) for o in outs]


def _smap(fn, plan: Plan, s: SmapSettings, trees: list):
    """smap as the script calls it: the inputs as passed (resharded, or placed by in_axes
    under Auto; a leaf not mapped placed whole on every device), the output, and JAX's types."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    m, name = s.devices_for(plan.n_devices), smapcall.axis_name(plan)
    mesh = smapcall.make_mesh(s, m, name)
    with smapcall.mesh_context(s, mesh):
        args = smapcall.place(plan, s, trees, mesh)

        def whole(leaf: Any, ax: int | None) -> Any:
            if ax is not None and s.resharded:
                return leaf
            entries = smapcall.spec(ax, np.ndim(leaf), name)
            return jax.device_put(leaf, NamedSharding(mesh, PartitionSpec(*entries)))

        args = [
            jax.tree.map(whole, a, _axes_tree(plan, k), is_leaf=lambda x: x is None)
            for k, a in enumerate(args)
        ]
        out = smapcall.smap_of(fn, plan, s, m)(*args)
        ins = jax.tree.leaves(args)
        outs = jax.tree.leaves(out)
        types = [str(jax.typeof(x)) for x in (*ins, *outs)]
    return ins, outs, out_leaf_names(out), types


def _axes_tree(plan: Plan, k: int) -> Any:
    """Argument ``k``'s normalised axis per leaf, as its tree (a tree of axes and Nones)."""
    arg = plan.arguments[k]
    return pytrees.unflatten(arg.skeleton, [lf.axis for lf in plan.leaves if lf.argument == k])


def run_here(program: Program | Callable, plan: Plan, s: SmapSettings, kind="arange", seed=0):
    """The three runs on the same values, one after the other (see :func:`estimate`); the
    caller holds the memory (the sandbox's worker, or :func:`run`)."""
    host = pmaprun.make_values(plan, kind, seed)
    trees = _trees(plan, host)
    rtol = _rtol(plan)
    want = _reference(function_of(program, smapcall.axis_name(plan)), plan, trees)
    pm_in = pm_out = got_pmap = None
    if plan.ok:
        pm_in, pm_out, got_pmap = _pmap(program, plan, host)
    ins, outs, outs_named, types = _smap(program, plan, s, trees)
    del trees, host
    got = [np.array(o) for o in outs]
    names = [leaf.name for leaf in plan.leaves]  # JAX's order (planning flattens as JAX does)
    m = s.devices_for(plan.n_devices)
    smap_in, smap_out = [shards_of(x) for x in ins], [shards_of(o) for o in outs]
    rows = device_rows(m, names, outs_named, (smap_in, smap_out), (pm_in, pm_out))
    return SmapRun(
        settings=describe(s, plan.n_devices),
        mesh_devices=m,
        block=smapcall.block(plan, m),
        pmap_devices=plan.devices_used if plan.ok else 0,
        rows=rows,
        out_shapes=tuple(tuple(g.shape) for g in got),
        types=dict(zip([*names, *outs_named], types, strict=True)),
        vs_pmap=None if got_pmap is None else _check("pmap", got, got_pmap, rtol),
        vs_vmap=_check("jit(vmap)", got, want, rtol),
        rtol=rtol,
    )


def _piece(shards: list[Shard] | None, d: int) -> dict | None:
    if shards is None:
        return None
    mine = [sh for sh in shards if sh.position == d]
    if not mine:
        return None
    sh = mine[0]
    return {
        "index": sh.index_text,
        "shape": list(sh.data.shape),
        "values": pmaprun.describe_block(sh.data),
        "device": sh.device,
    }


def device_rows(m: int, in_names, out_names, smap, pmap) -> list[dict]:
    """One row per device of smap's mesh: each input's and output's smap block beside the
    slice pmap gives that device (None where pmap does not run, or uses fewer devices)."""
    smap_in, smap_out = smap
    pm_in, pm_out = pmap
    rows = []
    for d in range(m):
        arrays = []
        for role, names, got, had in (
            ("input", in_names, smap_in, pm_in),
            ("output", out_names, smap_out, pm_out),
        ):
            for k, name in enumerate(names):
                mine = _piece(got[k], d)
                arrays.append(
                    {
                        "name": name,
                        "role": role,
                        "smap": mine,
                        "pmap": _piece(None if had is None else had[k], d),
                    }
                )
        device = next((a["smap"]["device"] for a in arrays if a["smap"]), f"device {d}")
        rows.append({"device": device, "position": d, "arrays": arrays})
    return rows
