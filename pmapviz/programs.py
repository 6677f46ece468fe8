"""Running programs with pmap and reading back what each device really holds.

Everything reported here comes from JAX arrays: ``addressable_shards`` gives, per device, the
device, the slice of the global array it holds (``index``) and the data itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmapviz.layout import index_text


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
    """Put ``x`` on ``devices`` split along its leading axis (today's replacement for
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


def hello_program() -> Callable:
    """The compiled-on-first-call program of the home page: double every element."""
    import jax

    return jax.pmap(lambda x: x * 2)


def run_hello(program: Callable, n_devices: int) -> HelloResult:
    """Run ``program`` on ``arange(n_devices)``, one element per device."""
    import jax

    x = np.arange(n_devices, dtype=np.int32)
    placed = place_on_devices(x, jax.local_devices()[:n_devices])
    y = program(placed)
    y.block_until_ready()
    return HelloResult(
        inputs=shards_of(placed),
        outputs=shards_of(y),
        values=np.asarray(y),
        sharding=repr(y.sharding),
    )


# ---------------------------------------------------------------- live runs of a plan
VALUE_KINDS = ("arange", "random", "ones")


def make_values(plan, kind: str = "arange", seed: int = 0) -> list[np.ndarray]:
    """Host inputs of the plan's shapes and dtypes: arange (offset per argument), seeded
    random, or ones."""
    import jax.numpy as jnp

    out = []
    rng = np.random.default_rng(seed)
    for k, (shape, dt) in enumerate(zip(plan.arg_shapes, plan.dtypes, strict=True)):
        dtype = jnp.dtype(dt)
        size = int(np.prod(shape))
        if kind == "ones":
            a = np.ones(shape)
        elif kind == "random":
            a = rng.integers(-9, 10, size=shape) if dt.startswith("int") else rng.standard_normal(
                shape)  # fmt: skip
        else:
            a = (np.arange(size) % 1000 + 100 * k).reshape(shape)
        out.append((a > 0) if dt == "bool" else a.astype(dtype))
    return out


def estimate_bytes(plan) -> int:
    """Working set of a live run: every input three times (host, devices, one-device reference
    copy) and every output three times (devices, reference, host)."""
    import jax
    import jax.numpy as jnp

    ins = sum(int(np.prod(s)) * jnp.dtype(d).itemsize
              for s, d in zip(plan.arg_shapes, plan.dtypes, strict=True))  # fmt: skip
    leaves = jax.tree.leaves(plan.out_shapes, is_leaf=lambda x: isinstance(x, tuple))
    dts = jax.tree.leaves(plan.out_dtypes)
    outs = sum(int(np.prod(s)) * jnp.dtype(d).itemsize for s, d in zip(leaves, dts, strict=True))
    return 3 * ins + 3 * outs


@dataclass(frozen=True)
class Compiled:
    run: Callable  # ahead-of-time compiled pmap, for inputs placed like `placements`
    reference: Callable  # jit(vmap(f)) on one device
    compile_s: float
    reference_compile_s: float


def compile_plan(program, plan) -> Compiled:
    """Compile pmap (and the jit(vmap) reference) for a valid plan, ahead of time, from
    abstract inputs placed exactly as run_plan places them. Pages cache the result."""
    import time

    import jax
    import jax.numpy as jnp

    from pmapviz.layout import pmap_sharding

    fn = program.build(plan.axis_name)
    n = plan.devices_used
    specs = [
        jax.ShapeDtypeStruct(s, jnp.dtype(d), sharding=pmap_sharding(len(s), a, n))
        for s, d, a in zip(plan.arg_shapes, plan.dtypes, plan.in_axes, strict=True)
    ]
    pm = jax.pmap(fn, in_axes=plan.in_axes, out_axes=plan.out_axes, axis_name=plan.axis_name,
                  devices=jax.local_devices()[:n])  # fmt: skip
    t = time.perf_counter()
    run = pm.lower(*specs).compile()
    compile_s = time.perf_counter() - t
    dev0 = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    ref_specs = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=dev0) for s in specs]
    ref = jax.jit(jax.vmap(fn, in_axes=plan.in_axes, out_axes=plan.out_axes,
                           axis_name=plan.axis_name))  # fmt: skip
    t = time.perf_counter()
    reference = ref.lower(*ref_specs).compile()
    return Compiled(run, reference, compile_s, time.perf_counter() - t)


@dataclass(frozen=True)
class LiveResult:
    inputs: list[list[Shard]]  # per argument, per device
    outputs: list[Shard]
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


def _rtol(dtypes) -> float:
    if any(d in ("bfloat16", "float16") for d in dtypes):
        return 2e-2
    if all(d.startswith("int") or d == "bool" for d in dtypes):
        return 0.0
    return 1e-5


def run_plan(program, plan, compiled: Compiled, kind: str = "arange", seed: int = 0,
             repeat: int = 5) -> LiveResult:  # fmt: skip
    """Run the compiled pmap on real values; read every device's blocks from the shards;
    check against jit(vmap(f)) on one device, and numpy where it applies."""
    import statistics
    import time

    import jax

    from pmapviz.layout import pmap_sharding

    n = plan.devices_used
    host = make_values(plan, kind, seed)
    t = time.perf_counter()
    placed = [jax.device_put(a, pmap_sharding(a.ndim, ax, n))
              for a, ax in zip(host, plan.in_axes, strict=True)]  # fmt: skip
    for p in placed:
        p.block_until_ready()
    transfer_s = time.perf_counter() - t
    out = compiled.run(*placed)
    jax.block_until_ready(out)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = compiled.run(*placed)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t)
    dev0 = jax.local_devices()[0]
    ref_in = [jax.device_put(a, dev0) for a in host]
    ref = compiled.reference(*ref_in)
    jax.block_until_ready(ref)
    t = time.perf_counter()
    ref = compiled.reference(*ref_in)
    jax.block_until_ready(ref)
    ref_s = time.perf_counter() - t
    got, want = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    rtol = _rtol(plan.dtypes)
    atol = rtol * max(1.0, float(np.abs(want).max(initial=0)))
    diff = np.abs(got - want)
    max_abs = float(diff.max(initial=0))
    max_rel = float((diff / np.maximum(np.abs(want), 1e-30)).max(initial=0))
    passed = bool(np.allclose(got, want, rtol=rtol, atol=atol))
    np_diff = _numpy_check(program.key, plan, host, got)
    reshape, flat_equal = None, None
    o, s = plan.out_axes, plan.out_shapes
    if o is not None and isinstance(s, tuple) and len(s) > o + 1:
        flat = s[:o] + (s[o] * s[o + 1],) + s[o + 2 :]
        reshape = (s, flat)
        flat_equal = bool(np.allclose(got.reshape(flat), want.reshape(flat), rtol=rtol, atol=atol))
    return LiveResult(
        inputs=[shards_of(p) for p in placed], outputs=shards_of(out), out_shape=tuple(out.shape),
        max_abs_diff=max_abs, max_rel_diff=max_rel, passed=passed, rtol=rtol,
        numpy_max_abs_diff=np_diff, compile_s=compiled.compile_s, transfer_s=transfer_s,
        run_s=statistics.median(times), run_s_all=times, reference_run_s=ref_s,
        reshape_back=reshape, flat_equal=flat_equal,
    )  # fmt: skip


def _numpy_check(key: str, plan, host: list[np.ndarray], got: np.ndarray) -> float | None:
    """Max |numpy - pmap|, running the numpy version device by device; None if none applies."""
    from pmapviz.catalog import numpy_fn

    f_np = numpy_fn(key)
    if f_np is None or plan.out_axes is None:
        return None

    def block(a: np.ndarray, ax: int | None, k: int) -> np.ndarray:
        b = a if ax is None else np.take(a, k, axis=ax)
        return b.astype(np.float64) if b.dtype.kind not in "iub" else b

    per = [
        np.asarray(f_np(*[block(a, ax, k) for a, ax in zip(host, plan.in_axes, strict=True)]),
                   dtype=np.float64)
        for k in range(plan.devices_used)
    ]  # fmt: skip
    expect = np.stack(per, axis=plan.out_axes)
    return float(np.abs(expect - got).max(initial=0))


def describe_block(data: np.ndarray, limit: int = 12) -> str:
    """Values for a small block; shape, min/max/mean and a sample for a large one."""
    a = np.asarray(data)
    if a.size <= limit:
        return np.array2string(a.astype(np.float64) if a.dtype.kind == "V" else a, precision=4,
                               separator=", ", threshold=limit)  # fmt: skip
    f = a.astype(np.float64)
    sample = ", ".join(f"{v:.4g}" for v in f.reshape(-1)[:3])
    return (f"shape {a.shape}: min {f.min():.4g}, max {f.max():.4g}, mean {f.mean():.4g}; "
            f"first [{sample}, ...]")  # fmt: skip


def three_ways(n: int, block: int = 1000, seed: int = 0) -> dict:
    """The seed's dot products computed three ways on n devices: jax.pmap (per-device view,
    rank-reducing), jax.shard_map (per-device view, rank-preserving) and jax.jit over inputs
    placed with a NamedSharding (global view). Returns shapes, shardings and the largest
    difference between them (they should agree exactly)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from pmapviz.layout import pmap_sharding

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n * block, 3), dtype=np.float32)
    y = rng.standard_normal((n * block, 3), dtype=np.float32)
    dot = jax.vmap(jnp.dot)
    shard = pmap_sharding(3, 0, n)
    out_pmap = jax.pmap(dot, devices=jax.local_devices()[:n])(
        jax.device_put(x.reshape(n, block, 3), shard), jax.device_put(y.reshape(n, block, 3), shard)
    )
    mesh = Mesh(np.array(jax.local_devices()[:n]), ("i",))
    rows = NamedSharding(mesh, PartitionSpec("i"))
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)
    out_sm = jax.jit(jax.shard_map(dot, mesh=mesh, in_specs=(PartitionSpec("i"),) * 2,
                                   out_specs=PartitionSpec("i")))(xs, ys)  # fmt: skip
    out_jit = jax.jit(dot)(xs, ys)
    flat = np.asarray(out_pmap).reshape(-1)
    return {
        "pmap_shape": tuple(out_pmap.shape), "shard_map_shape": tuple(out_sm.shape),
        "jit_shape": tuple(out_jit.shape),
        "shard_map_sharding": str(out_sm.sharding.spec), "jit_sharding": str(out_jit.sharding.spec),
        "max_diff_shard_map": float(np.abs(flat - np.asarray(out_sm)).max()),
        "max_diff_jit": float(np.abs(flat - np.asarray(out_jit)).max()),
        "jit_devices": len(out_jit.sharding.device_set),
    }  # fmt: skip
