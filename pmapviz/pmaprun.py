"""Running programs with pmap and reading back what each device really holds.

Everything reported here comes from JAX arrays: ``addressable_shards`` gives, per device, the
device, the slice of the global array it holds (``index``) and the data itself.
"""

from __future__ import annotations

import functools
import gc
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmapviz import devicefacts, devicerates, devicesetup, memory
from pmapviz.catalog import Program, numpy_fn
from pmapviz.memory import CHUNK, device_dtype, large_arrays_return_to_the_os
from pmapviz.placement import index_text, pmap_sharding
from pmapviz.planning import Plan
from pmapviz.settings import is_shape, md_tree


@dataclass(frozen=True)
class Shard:
    """One device's piece of a global ``jax.Array``."""

    device: str  # "cpu:3"
    device_id: int
    position: int  # index of the device in the mesh (colour index)
    index: tuple  # tuple of slices into the global array
    replica_id: int
    data: np.ndarray

    @property
    def index_text(self) -> str:
        """Its place in the global array as text: '[0:2, :]'."""
        return index_text(self.index)


def shards_of(array: Any) -> list[Shard]:
    """Per-device pieces of ``array``, ordered as the devices appear in its sharding's mesh."""
    order = {d.id: k for k, d in enumerate(_mesh_devices(array))}
    out = [
        Shard(
            device=str(s.device),
            device_id=s.device.id,
            position=order.get(s.device.id, s.device.id),
            index=tuple(s.index),
            replica_id=s.replica_id,
            data=np.asarray(s.data),
        )
        for s in array.addressable_shards
    ]
    return sorted(out, key=lambda s: (s.position, s.replica_id))


def _mesh_devices(array: Any) -> list:
    mesh = getattr(array.sharding, "mesh", None)
    if mesh is not None:
        return list(mesh.devices.flat)
    return sorted(array.sharding.device_set, key=lambda d: d.id)


def place_on_devices(x: np.ndarray, devices: list, axis_name: str = "i") -> Any:
    """Put ``x`` on ``devicesetup`` split along its leading axis (today's replacement for
    ``device_put_sharded``: ``device_put`` with a ``NamedSharding``)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), (axis_name,))
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec(axis_name)))


@dataclass(frozen=True)
class HelloResult:
    """``pmap(lambda x: x * 2)(arange(n))``, as the devices hold it."""

    inputs: list[Shard]
    outputs: list[Shard]
    values: np.ndarray  # the gathered global output
    sharding: str


def hello_program(n_devices: int) -> Callable:
    """The compiled-on-first-call program of the home page: double every element, on the
    current device set's first ``n_devices`` devices."""
    import jax

    return jax.pmap(lambda x: x * 2, devices=devicefacts.local_devices_for_work()[:n_devices])


def run_hello(program: Callable, n_devices: int) -> HelloResult:
    """Run ``program`` (``hello_program(n_devices)``) on ``arange(n_devices)``, one element
    per device."""

    x = np.arange(n_devices, dtype=np.int32)
    placed = place_on_devices(x, devicefacts.local_devices_for_work()[:n_devices])
    y = program(placed)
    y.block_until_ready()
    return HelloResult(
        inputs=shards_of(placed),
        outputs=shards_of(y),
        values=np.asarray(y),
        sharding=repr(y.sharding),
    )


def hello_rows(hello: HelloResult) -> list[tuple[str, list[tuple[str, int | None, str]]]]:
    """The hello-pmap as device-aligned rows (device, slice, x, y), read from the shards."""

    def value(s: Shard) -> str:
        return ", ".join(str(v) for v in s.data.tolist())

    return [
        (
            "device",
            [(s.device, s.position, f"{s.device} (id {s.device_id})") for s in hello.outputs],
        ),
        (
            "slice",
            [(s.index_text, None, f"{s.device} holds y{s.index_text}") for s in hello.outputs],
        ),
        (
            "x",
            [(value(s), s.position, f"{s.device} received x{s.index_text}") for s in hello.inputs],
        ),
        (
            "y = x * 2",
            [(value(s), s.position, f"{s.device} computed y{s.index_text}") for s in hello.outputs],
        ),
    ]


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
    """Peak bytes of a live run of ``plan`` (make_values + run_plan), a ``memory.Need``: see
    :func:`pmapviz.memory.live_run_bytes`. Pass ``program`` for the exact numpy-check term,
    and the ``compiled`` programs (compiled, never run) for what f makes in between: their
    scratch memory from XLA's ``memory_analysis()`` (:func:`temporaries`)."""
    need = memory.live_run_bytes(plan, None if program is None else program.key)
    return need if compiled is None else memory.with_temporaries(need, temporaries(compiled))


def temporaries(compiled: Compiled) -> int:
    """The most scratch memory either compiled program needs at once, all devices together:
    the one-device reference's ``temp_size_in_bytes``, or pmap's per-device figure times its
    devices (the two run one after the other). 0 where XLA gives no analysis."""
    ref = _temp_bytes(compiled.reference)
    per_device = _temp_bytes(compiled.run)
    return max(ref, per_device * max(1, compiled.devices))


def plan_temporaries(program: Program, plan: Plan) -> int:
    """:func:`temporaries` of the plan's programs, compiled here (never run) before any input
    exists: for actions that run f without keeping a compiled pair (timing, migration)."""
    return temporaries(compile_plan(program, plan))


def _temp_bytes(executable) -> int:
    """Its scratch memory per device (``memory.footprint``), 0 where XLA gives no analysis."""
    fp = memory.footprint(executable)
    return 0 if fp is None else fp.temporaries


@dataclass(frozen=True)
class Compiled:
    """A plan compiled ahead of time: pmap and the one-device jit(vmap) reference, and how long each
    took to compile."""

    run: Callable  # ahead-of-time compiled pmap, for inputs placed like `placements`
    reference: Callable  # jit(vmap(f)) on one device
    compile_s: float
    reference_compile_s: float
    devices: int = 1  # the devices pmap runs on


JAX_CACHE_EVERY = 8  # new pmap programs between two clears of JAX's own caches
_COMPILES = {"since_clear": 0}
_COMPILES_LOCK = threading.Lock()


def bound_jax_caches(every: int = JAX_CACHE_EVERY) -> bool:
    """Count one newly compiled pmap program; every ``every`` of them, clear JAX's own
    compilation caches (``jax.clear_caches``). Returns whether it cleared.

    JAX 0.10's pmap memoizes its ``jit(shard_map(f))`` wrapper in a cache keyed weakly on f
    whose entry refers back to f, so no entry ever dies: every function pmapped, and every
    shape compiled with it, stays in memory (measured: ~1.5 MiB per new shape; a server kept
    +116 MiB after 50 live runs, and ``jax.clear_caches()`` gave it all back). Compiled
    programs the pages hold (``Compiled``, in bounded caches) are unaffected; a pmap that
    was only in JAX's cache is traced and compiled again on its next call."""
    with _COMPILES_LOCK:
        _COMPILES["since_clear"] += 1
        if _COMPILES["since_clear"] < every:
            return False
        _COMPILES["since_clear"] = 0
    import jax

    jax.clear_caches()
    return True


def own_function(f: Callable) -> Callable:
    """A new function object calling ``f``: JAX's caches keyed on it end with it (``f``
    itself, from ``program.build``, lives as long as the process)."""

    @functools.wraps(f)
    def own(*args):
        return f(*args)

    return own


def forget_pmap(fn: Callable) -> None:
    """Drop pmap's memo of ``fn`` once its program is compiled ahead of time (the Compiled
    holds the executable). JAX 0.10's pmap memoizes its ``jit(shard_map(fn))`` wrapper in a
    cache whose entries refer back to their own keys, so none ever dies (measured: 30 new
    programs kept 51 MiB; evicted, 6.5 MiB). Where that cache is not there (another JAX
    version), :func:`bound_jax_caches` still clears it every few programs."""
    try:
        from jax._src import pmap as jax_pmap  # private: checked, with a fallback

        evict = jax_pmap._cached_shard_map.evict_function
    except (ImportError, AttributeError):
        return  # bound_jax_caches, which compile_plan calls too, clears it every few programs
    evict(fn)


def compile_plan(program: Program, plan: Plan) -> Compiled:
    """Compile pmap (and the jit(vmap) reference) for a valid plan, ahead of time, from
    abstract inputs placed exactly as run_plan places them. Pages cache the result."""
    import time

    import jax
    import jax.numpy as jnp

    fn = own_function(plan.leaf_fn(program.build(plan.axis_name)))  # one array per leaf
    n = plan.devices_used
    specs = [
        jax.ShapeDtypeStruct(
            leaf.shape, jnp.dtype(leaf.dtype), sharding=pmap_sharding(len(leaf.shape), leaf.axis, n)
        )
        for leaf in plan.leaves
    ]
    pm = jax.pmap(
        fn,
        in_axes=plan.leaf_axes,
        out_axes=plan.out_axes,
        axis_name=plan.axis_name,
        devices=devicefacts.local_devices_for_work()[:n],
    )
    t = time.perf_counter()
    run = pm.lower(*specs).compile()
    compile_s = time.perf_counter() - t
    dev0 = jax.sharding.SingleDeviceSharding(devicefacts.local_devices_for_work()[0])
    ref_specs = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=dev0) for s in specs]
    ref = jax.jit(
        jax.vmap(fn, in_axes=plan.leaf_axes, out_axes=plan.out_axes, axis_name=plan.axis_name)
    )
    t = time.perf_counter()
    reference = ref.lower(*ref_specs).compile()
    reference_s = time.perf_counter() - t
    forget_pmap(fn)
    bound_jax_caches()  # the rest: traces of the plan's shapes (planning, time estimates)
    return Compiled(run, reference, compile_s, reference_s, n)


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
        devicesetup.return_freed_memory()
        return result
    with memory.reserve(estimate_bytes(plan, program, compiled), "a live run", on_wait):
        result = _run_plan(program, plan, compiled, kind, seed, repeat, keep)
    devicesetup.return_freed_memory()
    return result


def _run_plan(
    program: Program, plan: Plan, compiled: Compiled, kind: str, seed: int, repeat: int, keep: bool
) -> LiveResult:
    """run_plan's work.

    Memory (see :func:`pmapviz.memory.live_run_bytes`): the reference runs first and its
    one-device inputs are dropped before the inputs are placed for pmap; the host inputs are
    dropped once placed (the shards are read back from the devices); one output exists at a
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
    for k in range(0, flat.size, memory.CHUNK):  # float64 a chunk at a time, never the block
        piece = flat[k : k + memory.CHUNK].astype(np.float64)
        lo, hi, total = min(lo, piece.min()), max(hi, piece.max()), total + piece.sum()
    sample = ", ".join(f"{v:.4g}" for v in flat[:3].astype(np.float64))
    return (
        f"shape {a.shape}: min {lo:.4g}, max {hi:.4g}, mean {total / flat.size:.4g}; "
        f"first [{sample}, ...]"
    )


def three_ways(n: int, block: int = 1000, seed: int = 0) -> dict:
    """The seed's dot products computed three ways on n devices: jax.pmap (per-device view,
    rank-reducing), jax.shard_map (per-device view, rank-preserving) and jax.jit over inputs
    placed with a NamedSharding (global view). Returns shapes, shardings and the largest
    difference between them (they should agree exactly)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n * block, 3), dtype=np.float32)
    y = rng.standard_normal((n * block, 3), dtype=np.float32)
    dot = jax.vmap(jnp.dot)
    shard = pmap_sharding(3, 0, n)
    out_pmap = jax.pmap(dot, devices=devicefacts.local_devices_for_work()[:n])(
        jax.device_put(x.reshape(n, block, 3), shard), jax.device_put(y.reshape(n, block, 3), shard)
    )
    mesh = Mesh(np.array(devicefacts.local_devices_for_work()[:n]), ("i",))
    rows = NamedSharding(mesh, PartitionSpec("i"))
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)
    out_sm = jax.jit(
        jax.shard_map(
            dot, mesh=mesh, in_specs=(PartitionSpec("i"),) * 2, out_specs=PartitionSpec("i")
        )
    )(xs, ys)
    out_jit = jax.jit(dot)(xs, ys)
    flat = np.asarray(out_pmap).reshape(-1)
    return {
        "pmap_shape": tuple(out_pmap.shape),
        "shard_map_shape": tuple(out_sm.shape),
        "jit_shape": tuple(out_jit.shape),
        "shard_map_sharding": str(out_sm.sharding.spec),
        "jit_sharding": str(out_jit.sharding.spec),
        "max_diff_shard_map": float(np.abs(flat - np.asarray(out_sm)).max()),
        "max_diff_jit": float(np.abs(flat - np.asarray(out_jit)).max()),
        "jit_devices": len(out_jit.sharding.device_set),
    }


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
