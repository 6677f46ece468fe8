"""Running a plan with pmap on real values, and reading back what each device really holds:
every device's blocks (:mod:`pmapviz.core.planning.arrayshards`) checked against jit(vmap(f)) on one
device
and numpy, block by block in float64 chunks, and shown as one row per device."""

from __future__ import annotations

import functools
import gc
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.core.base.valuetext import is_shape, md_tree
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.budgets.memorymodel import CHUNK, device_dtype
from pmapviz.core.devices import devicefacts, devicerates, jaxstartup
from pmapviz.core.devices.jaxstartup import large_arrays_return_to_the_os
from pmapviz.core.expressions.functions import Program, numpy_fn
from pmapviz.core.planning.arrayshards import Shard, shards_of
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.running.pmapcompile import Compiled, temporaries

# ---------------------------------------------------------------- live runs of a plan
VALUE_KINDS = ("arange", "random", "ones")


def make_values(plan: Plan, kind: str = "arange", seed: int = 0) -> list[np.ndarray]:
    """Host inputs of the plan's shapes, in the dtypes the devices hold: arange (offset per
    argument), seeded random, or ones. Generated chunk by chunk straight into the target
    dtype, so no whole-array int64/float64 temporary ever exists."""
    out = []
    rng = np.random.default_rng(seed)
    for k, leaf in enumerate(plan.leaves):
        shape, dt = leaf.shape, leaf.dtype
        a = np.empty(shape, device_dtype(dt))
        if kind == "ones":
            a.fill(1)
        elif kind == "random" and dt.startswith("int"):
            _fill(a, lambda s, e: rng.integers(-9, 10, size=e - s))
        elif kind == "random":
            _fill(a, lambda s, e: rng.standard_normal(e - s))
        else:
            _fill(a, lambda s, e, k=k: np.arange(s, e) % 1000 + 100 * k)
        out.append(a)
    return out


def _fill(a: np.ndarray, values: Callable[[int, int], np.ndarray]) -> None:
    """a.flat[s:e] = values(s, e) chunk by chunk; bool takes ``values > 0``."""
    flat = a.reshape(-1)  # a view: make_values allocates contiguous arrays
    for s in range(0, flat.size, CHUNK):
        e = min(s + CHUNK, flat.size)
        v = values(s, e)
        flat[s:e] = (v > 0) if a.dtype == np.bool_ else v.astype(a.dtype)


def not_runnable(plan: Plan) -> str | None:
    """Why a valid plan cannot be run live (or timed) here, or None: runs read back one
    output array, so an f that returns a tuple or dict of arrays is only planned."""
    if plan.out_shapes is None or is_shape(plan.out_shapes):
        return None
    return (
        f"f returns several arrays, {md_tree(plan.out_shapes)}; live runs and timing "
        "read back one output array. Return one array (e.g. jnp.concatenate or a single "
        "expression) to run it; the explorer still plans and draws it."
    )


def estimate_bytes(plan: Plan, program: Program | None = None, compiled: Compiled | None = None):
    """Peak bytes of a live run of ``plan`` (make_values + run_plan), a ``memorymodel.Need``: see
    :func:`pmapviz.core.budgets.memoryestimates.live_run_bytes`. Pass ``program`` for the exact
    numpy-check term, and the ``compiled`` programs (compiled, never run) for what f makes in
    between: their scratch memory from XLA's ``memory_analysis()``
    (:func:`pmapviz.core.running.pmapcompile.temporaries`)."""
    need = memoryestimates.live_run_bytes(plan, None if program is None else program.key)
    return need if compiled is None else memorymodel.with_temporaries(need, temporaries(compiled))


@dataclass(frozen=True)
class LiveResult:
    """A live run, as plain numbers and text: it holds no device memory (a server keeps a
    session's last result for as long as the session lives, and thirty of them would keep
    thirty runs' arrays)."""

    rows: list[dict]  # per device: each argument's slice and block, the output's (device_rows)
    out_shape: tuple
    max_abs_diff: float
    max_rel_diff: float
    passed: bool
    rtol: float
    numpy_max_abs_diff: float | None
    compile_s: float
    transfer_s: float
    run_s: float
    run_s_all: list[float]
    reference_run_s: float
    reshape_back: tuple[tuple, tuple] | None
    flat_equal: bool | None
    blocks: tuple[list[list[Shard]], list[Shard]] | None = None  # (inputs, outputs): keep=True


def _rtol(dtypes) -> float:
    if any(d in ("bfloat16", "float16") for d in dtypes):
        return 2e-2
    if all(d.startswith("int") or d == "bool" for d in dtypes):
        return 0.0
    return 1e-5


def run_plan(
    program: Program,
    plan: Plan,
    compiled: Compiled,
    kind: str = "arange",
    seed: int = 0,
    repeat: int = 5,
    keep: bool = False,
    on_wait=None,
    reserve: bool = True,
) -> LiveResult:
    """Run the compiled pmap on real values; read every device's blocks from the shards;
    check against jit(vmap(f)) on one device, and numpy where it applies. The result is
    plain data; with ``keep`` (tests) it also holds every device's blocks, which hold the
    devices' memory. It runs in its share of the server's memory budget (waiting in the
    queue, ``on_wait``, while other actions hold it); once the run's arrays are gone, the
    freed heap goes back to the OS. ``reserve=False``: the caller holds the memory (the
    sandbox's worker, whose server reserved it)."""
    if not reserve:
        result = _run_plan(program, plan, compiled, kind, seed, repeat, keep)
        jaxstartup.return_freed_memory()
        return result
    with memorypool.reserve(estimate_bytes(plan, program, compiled), "a live run", on_wait):
        result = _run_plan(program, plan, compiled, kind, seed, repeat, keep)
    jaxstartup.return_freed_memory()
    return result


def _run_plan(
    program: Program, plan: Plan, compiled: Compiled, kind: str, seed: int, repeat: int, keep: bool
) -> LiveResult:
    """run_plan's work.

    Memory (see :func:`pmapviz.core.budgets.memoryestimates.live_run_bytes`): the reference runs
    first and its one-device inputs are dropped before the inputs are placed for pmap; the host
    inputs are dropped once placed (the shards are read back from the devices); one output exists at
    a
    time while timing; results are compared block by block, in float64 chunks."""
    import time

    import jax

    n = plan.devices_used
    large_arrays_return_to_the_os()
    host = make_values(plan, kind, seed)
    dev0 = devicefacts.local_devices_for_work()[0]
    ref_in = [jax.device_put(a, dev0) for a in host]
    ref, ref_times = devicerates.timed_calls(functools.partial(compiled.reference, *ref_in), 1)
    del ref_in
    t = time.perf_counter()
    placed = [
        jax.device_put(a, pmap_sharding(a.ndim, ax, n))
        for a, ax in zip(host, plan.leaf_axes, strict=True)
    ]
    jax.block_until_ready(placed)
    transfer_s = time.perf_counter() - t
    del host
    gc.collect(0)  # a sharded device_put leaves a young cycle that still holds the host array
    out, times = devicerates.timed_calls(lambda: compiled.run(*placed), repeat)
    want = np.asarray(ref)  # no copy: the one-device result, read in place
    outputs = shards_of(out)
    rtol = _rtol([leaf.dtype for leaf in plan.leaves])
    atol = rtol * max(1.0, _max_abs(want))
    max_abs, max_rel, passed = diff_stats(_out_blocks(outputs, want), rtol, atol)
    reshape, flat_equal = _reshape_back(plan, outputs, want, rtol, atol)
    del want, ref
    inputs = [shards_of(p) for p in placed]
    return LiveResult(
        rows=device_rows(plan, inputs, outputs),
        out_shape=tuple(out.shape),
        max_abs_diff=max_abs,
        max_rel_diff=max_rel,
        passed=passed,
        rtol=rtol,
        numpy_max_abs_diff=_numpy_check(program.key, plan, inputs, outputs),
        compile_s=compiled.compile_s,
        transfer_s=transfer_s,
        run_s=statistics.median(times),
        run_s_all=times,
        reference_run_s=ref_times[0],
        reshape_back=reshape,
        flat_equal=flat_equal,
        blocks=(inputs, outputs) if keep else None,
    )


def _chunks(shape: tuple[int, ...], limit: int | None = None):
    """Index tuples that cover an array of ``shape`` in pieces of at most ``limit`` elements
    (or one row of the innermost axes, if that is larger), each a basic (view) index."""
    limit = limit or CHUNK
    k, inner = len(shape), 1
    while k > 0 and inner * shape[k - 1] <= limit:
        k -= 1
        inner *= shape[k]
    if k == 0:
        yield ()
        return
    axis, step = k - 1, max(1, limit // inner)
    for lead in np.ndindex(*shape[:axis]):
        for s in range(0, shape[axis], step):
            yield (*lead, slice(s, s + step))


def _f64(a: np.ndarray, idx: tuple) -> np.ndarray:
    return np.atleast_1d(np.asarray(a[idx], dtype=np.float64))


def _max_abs(a: np.ndarray) -> float:
    """max |a| in float64, chunk by chunk (NaN propagates, as np.max does)."""
    return float(np.max([0.0, *(np.abs(_f64(a, i)).max(initial=0) for i in _chunks(a.shape))]))


def diff_stats(pairs, rtol: float, atol: float) -> tuple[float, float, bool]:
    """(max |got - want|, max relative, allclose) over (got, want) block pairs, in float64
    chunks: never a whole-array float64 copy. allclose is np.allclose's rule, per element."""
    abs_, rel, close = [0.0], [0.0], True
    for got, want in pairs:
        for idx in _chunks(got.shape):
            g, w = _f64(got, idx), _f64(want, idx)
            d = np.abs(g - w)
            aw = np.abs(w)
            abs_.append(d.max(initial=0))
            if close:
                ok = (d <= atol + rtol * aw) & np.isfinite(w) & np.isfinite(g)
                close = bool((ok | (g == w)).all())
            np.maximum(aw, 1e-30, out=aw)
            rel.append((np.divide(d, aw, out=d)).max(initial=0))
    return float(np.max(abs_)), float(np.max(rel)), close


def _out_blocks(outputs: list[Shard], want: np.ndarray):
    """(pmap block, the same slice of the reference) per distinct output shard (views)."""
    for s in outputs:
        if s.replica_id == 0:
            yield s.data, want[s.index]


def _position(index: tuple, axis: int) -> int:
    return index[axis].start or 0


def _reshape_back(plan: Plan, outputs: list[Shard], want: np.ndarray, rtol: float, atol: float):
    """Reshape the reference (n, b) -> (n * b,) at out_axes and check that device k's block
    lands at rows k*b .. (k+1)*b of it; views only."""
    o, s = plan.out_axes, plan.out_shapes
    if o is None or not isinstance(s, tuple) or len(s) <= o + 1:
        return None, None
    flat = s[:o] + (s[o] * s[o + 1],) + s[o + 2 :]
    flat_want, b, lead = want.reshape(flat), s[o + 1], (slice(None),) * o
    pairs = (
        (sh.data[(*lead, 0)], flat_want[(*lead, slice(k * b, (k + 1) * b))])
        for sh in outputs
        for k in [_position(sh.index, o)]
    )
    return (s, flat), diff_stats(pairs, rtol, atol)[2]


def _device_block(shards: list[Shard], ax: int | None, k: int) -> np.ndarray:
    """What device k's f sees of one argument, read from its shard (a view)."""
    if ax is None:
        return shards[0].data
    shard = next(s for s in shards if _position(s.index, ax) == k)
    return shard.data[(*(slice(None),) * ax, 0)]


def _numpy_check(key: str, plan: Plan, inputs: list[list[Shard]], outputs: list[Shard]):
    """Max |numpy - pmap|, running the numpy version device by device (floats in float64);
    None if none applies. One device's float64 block exists at a time."""
    f_np = numpy_fn(key)
    o = plan.out_axes
    if f_np is None or o is None:
        return None
    worst = 0.0
    for sh in outputs:
        k = _position(sh.index, o)
        args = [_device_block(s, ax, k) for s, ax in zip(inputs, plan.leaf_axes, strict=True)]
        args = [b.astype(np.float64) if b.dtype.kind not in "iub" else b for b in args]
        expect = np.asarray(f_np(*args))
        worst = np.max([worst, diff_stats([(sh.data[(*(slice(None),) * o, 0)], expect)], 0, 0)[0]])
        del args, expect
    return float(worst)


def describe_block(data: np.ndarray, limit: int = 12) -> str:
    """Values for a small block; shape, min/max/mean and a sample for a large one."""
    a = np.asarray(data)
    if a.size <= limit:
        return np.array2string(
            a.astype(np.float64) if a.dtype.kind == "V" else a,
            precision=4,
            separator=", ",
            threshold=limit,
        )
    flat = a.reshape(-1)
    lo, hi, total = np.inf, -np.inf, 0.0
    for k in range(0, flat.size, memorymodel.CHUNK):  # float64 a chunk at a time, never the block
        piece = flat[k : k + memorymodel.CHUNK].astype(np.float64)
        lo, hi, total = min(lo, piece.min()), max(hi, piece.max()), total + piece.sum()
    sample = ", ".join(f"{v:.4g}" for v in flat[:3].astype(np.float64))
    return (
        f"shape {a.shape}: min {lo:.4g}, max {hi:.4g}, mean {total / flat.size:.4g}; "
        f"first [{sample}, ...]"
    )


def _first(a: np.ndarray, axis: int) -> np.ndarray:
    """``a``'s index 0 along ``axis`` (a shard's one slice of the mapped axis), as a view."""
    return a[(slice(None),) * axis + (0,)]


def device_rows(plan: Plan, inputs: list[list[Shard]], outputs: list[Shard]) -> list[dict]:
    """One row per device of a live run: each argument's slice and the block f saw, and the
    output's slice and the block f returned, all read from the shards."""
    rows = []
    for d in range(plan.devices_used):
        row = {"device": outputs[d].device}
        for k, leaf in enumerate(plan.leaves):
            name, shard, ax = leaf.name, inputs[k][d], leaf.axis
            local = shard.data if ax is None else _first(shard.data, ax)
            row[f"{name} slice"] = shard.index_text
            row[f"{name} block (f sees)"] = describe_block(local)
        out = outputs[d]
        o = plan.out_axes
        row["out slice"] = out.index_text
        block = out.data if o is None else _first(out.data, o)
        row["out block (f returns)"] = describe_block(block)
        rows.append(row)
    return rows
