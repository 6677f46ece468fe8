"""The seed's worked example at full size: 10,000,000 pairs of 3-vectors, split over n devices.

    x, y: (pairs, 3) -> reshape (n, pairs // n, 3) -> jax.pmap(jax.vmap(jnp.dot))
    -> (n, pairs // n) -> reshape (pairs,) == jit(vmap(dot)) on one device

One code path for the Live page and ``python -m pmapviz dot``. Memory is kept low on purpose
(:func:`pmapviz.core.budgets.memoryestimates.dot_bytes` is the model): the seeded inputs are
generated once, on the host, into page-aligned buffers, then put on one device for the reference and
on the n devices for pmap. On CPU, JAX shares an aligned host buffer instead of copying it (checked
and reported as ``zero_copy``); elsewhere the puts are real host-to-device copies. The results are
compared block by block, per device shard, in float64 chunks. Timings: compile (ahead-of-time lower
+ compile), transfer (host to devices), run (steady state, block_until_ready), each reported
separately.
"""

from __future__ import annotations

import functools
import gc
import math
import mmap
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import devicefacts, devicerates, hostmemory, jaxstartup
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.core.planning.arrayshards import shards_of
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.running.jaxsays import jax_says
from pmapviz.core.running.pmapcompile import bound_jax_caches
from pmapviz.core.running.pmaprun import diff_stats

MIN_PAIRS = 1_000
DEFAULT_PAIRS = 10_000_000
BYTES_PER_PAIR = 2 * 3 * 4  # two float32 3-vectors


class DotError(ValueError):
    """Settings the example cannot run with; the message says what to use instead."""


@dataclass
class DotResult:
    """What one run of the dot-product example found: shapes, agreement with vmap and numpy, times
    and memory."""

    pairs: int
    devices: int
    block: int
    pmap_out_shape: tuple[int, ...]
    flat_shape: tuple[int, ...]
    vmap_out_shape: tuple[int, ...]
    max_abs_diff: float
    max_rel_diff: float
    allclose: bool
    numpy_max_abs_diff: float
    compile_s: float
    transfer_s: float
    run_s: float  # median of run_s_all
    run_s_all: list[float]
    vmap_compile_s: float
    vmap_transfer_s: float
    vmap_run_s: float
    host_growth_mb: float | None  # how far the process's RSS rose during the run (its own)
    sample: list[float]
    per_device: list[dict] = field(default_factory=list)
    without_vmap_shape: tuple[int, ...] = ()
    without_vmap_is_block_sums: bool = False
    forgot_reshape_message: str = ""
    # what JAX itself raises for that call, as a traceback's last line (jaxsays): "" if none
    forgot_reshape_jax: str = ""
    zero_copy: bool = False  # the devices' buffers are the host arrays' memory (CPU)
    platform: str = ""  # of the devices (devicefacts)
    first_transfer_s: float = 0.0  # the untimed first host-to-device copy at this size
    device_peak_bytes: int | None = None  # memory_stats' peak over the devices, if reported

    def to_json(self) -> dict:
        """Its fields as JSON."""
        return asdict(self)


def transfer_note(res: DotResult) -> str:
    """What the transfer time means on these devices: a real host-to-device copy on an
    accelerator (with the untimed first copy at this size said apart), shared host memory on
    CPU, or a copy on CPU."""
    if res.platform != "cpu":
        mb = res.pairs * BYTES_PER_PAIR / 1e6
        return (
            f"Transfer is a real host-to-device copy of {mb:,.0f} MB: "
            f"{mb / 1e3 / max(res.transfer_s, 1e-9):,.1f} GB/s to {res.devices} device(s), "
            f"{mb / 1e3 / max(res.vmap_transfer_s, 1e-9):,.1f} GB/s to one. Before both, one "
            f"untimed copy of x and y to one device took {res.first_transfer_s * 1e3:,.0f} ms: "
            "the first copy at a new size is slower on a GPU (the runtime grows its staging "
            "memory), and whichever implementation went first would pay for it. The backend's "
            "start-up is in the sidebar, not here."
        )
    if res.zero_copy:
        return (
            "Transfer is near zero here: on CPU, `jax.device_put` of a numpy array whose data "
            "starts on a 64-byte boundary shares that memory instead of copying it (checked: "
            "every device's buffer lies inside the host array). pmapviz draws its inputs into "
            "page-aligned buffers; a numpy array that starts off such a boundary (large arrays "
            "usually start 16 bytes past one) is copied. On a GPU or TPU the transfer is always "
            "a real host-to-device copy."
        )
    return (
        f"Transfer copied the inputs: blocks of {res.block:,} pairs ({res.block * 12:,} "
        "bytes) do not start on 64-byte boundaries, so JAX on CPU cannot share the host's "
        f"memory with the devices. A multiple of {memoryestimates.dot_shared_step(res.devices):,} "
        "pairs would be shared (no copy, less memorymodel)."
    )


def max_pairs(budget: int | memorymodel.Budget, n: int) -> int:
    """The largest number of pairs whose peak
    (:func:`pmapviz.core.budgets.memoryestimates.dot_bytes`) fits the
    budget: a multiple of 16 n, so every device's block is shared with the host on CPU (any
    larger size needs more); MIN_PAIRS if none fits (run_dot then refuses with the reason)."""
    step = memoryestimates.dot_shared_step(n)
    fit = memorymodel.largest_fitting(
        lambda p: memoryestimates.dot_bytes(p, n), budget, MIN_PAIRS, 10**10, step
    )
    return max(MIN_PAIRS, fit)


def check_pairs(pairs: int, n: int, limit: int) -> None:
    """Refuse a size that is too small, does not split evenly, or passes ``limit`` (the largest
    that fits, :func:`max_pairs`); where the devices share the host's memory (CPU), also a
    smaller size whose blocks cannot be shared and so need copies beyond the budget."""
    dot_bytes, dot_shared_step = memoryestimates.dot_bytes, memoryestimates.dot_shared_step
    shared = devicefacts.facts().shares_host_memory
    if pairs < MIN_PAIRS:
        raise DotError(f"Use at least {MIN_PAIRS:,} pairs.")
    if pairs % n:
        lower, upper = pairs - pairs % n, pairs - pairs % n + n
        raise DotError(
            f"{pairs:,} pairs do not split evenly over {n} devices (pmap gives every device "
            f"the same block). Use {lower:,} or {upper:,}."
        )
    if pairs > limit or (shared and dot_bytes(pairs, n).total > dot_bytes(limit, n).total):
        why = (
            ""
            if memoryestimates.dot_blocks_shared(pairs, n) or not shared
            else (
                f" (blocks of {pairs // n:,} pairs do not start on 64-byte boundaries, so the "
                f"devices get copies; a multiple of {dot_shared_step(n):,} pairs shares the host's "
                "memory)"
            )
        )
        words = dot_bytes(pairs, n).words(shared)
        raise DotError(
            f"{pairs:,} pairs need about {words} at the peak here{why}; the largest that fits "
            f"this machine's memory budget is {limit:,}."
        )


@functools.lru_cache(maxsize=8)
def _programs(n: int) -> tuple[Callable, Callable, Callable]:
    import jax
    import jax.numpy as jnp

    devs = devicefacts.local_devices_for_work()[:n]
    return (
        jax.pmap(jax.vmap(jnp.dot), devices=devs),
        jax.jit(lambda a, b: jax.vmap(jnp.dot)(a.reshape(-1, 3), b.reshape(-1, 3))),
        jax.pmap(jnp.vdot, devices=devs),  # the mistake: no vmap
    )


def run_dot(
    pairs: int = DEFAULT_PAIRS,
    n: int | None = None,
    seed: int = 0,
    repeat: int = 3,
    progress: Callable[[str, float], None] | None = None,
    limit: int | None = None,
    programs: Callable[[int], tuple] = _programs,
    on_wait=None,
) -> DotResult:
    """The example at ``pairs`` pairs on ``n`` devices (see the module doc), in its share of
    the server's memory budget (waiting in the queue, ``on_wait``, while others hold it)."""
    have = devicefacts.facts().local_count
    n = n or have
    if not 1 <= n <= have:
        raise DotError(f"Use 1 to {have} devices.")
    if limit is None:
        limit = max_pairs(memorypool.budget(), n)
    check_pairs(pairs, n, limit)
    need = memoryestimates.dot_bytes(pairs, n)
    # the run's own host memory: growth from here, not the runtime's mappings made at start
    with (
        memorypool.reserve(need, f"the {pairs:,}-pair example", on_wait),
        hostmemory.HostGrowth() as growth,
    ):
        result = _run(pairs, n, seed, repeat, progress, programs)
    jaxstartup.return_freed_memory()
    grew = growth.peak_bytes
    result.host_growth_mb = None if grew is None else grew / 1e6
    return result


def _run(pairs: int, n: int, seed: int, repeat: int, progress, programs) -> DotResult:

    step = progress or (lambda text, frac: None)
    block = pairs // n
    pmap_dot, vmap_dot, pmap_vdot = programs(n)

    step(
        f"Generating {pairs:,} pairs of 3-vectors ({pairs * BYTES_PER_PAIR / 1e6:,.0f} MB) "
        "on the host",
        0.0,
    )
    jaxstartup.large_arrays_return_to_the_os()
    devicefacts.start_backend()  # a GPU's start-up (seconds) is not anybody's transfer
    host = _generate(seed, (n, block, 3))
    warm_s = devicefacts.warm_transfer(host)

    step("Reference: jit(vmap(dot)) on one device", 0.15)
    ref, vmap_transfer_s, vmap_compile_s, vmap_run_s = _reference(vmap_dot, host)

    step(f"Placing x and y on {n} devices, one ({block:,}, 3) block each", 0.3)
    (xs, ys), transfer_s = _put(host, pmap_sharding(3, 0, n))
    zero_copy = _shares_memory(xs, host[0])
    del host  # on CPU the device arrays keep the shared buffers alive

    step("Compiling pmap(vmap(dot)) with XLA", 0.45)
    t = time.perf_counter()
    compiled = pmap_dot.lower(xs, ys).compile()
    compile_s = time.perf_counter() - t
    bound_jax_caches()  # pmap_dot keeps each new size's program in JAX's caches

    step(f"Running on {n} devices ({repeat} timed runs after a warm-up)", 0.6)
    out, run_all = devicerates.timed_calls(lambda: compiled(xs, ys), repeat)

    step("Comparing: reshape back, then pmap vs vmap, and numpy block by block", 0.75)
    cmp = _compare(out, ref, xs, ys, block)
    del ref

    step("The two classic mistakes", 0.9)
    wrong_shape, is_block_sums = _without_vmap(pmap_vdot, xs, ys, out)
    forgot = planning.plan(functions.get("batched_dot"), [(pairs, 3)] * 2, n_devices=n)
    forgot_msg = forgot.problems[0].message if forgot.problems else ""
    forgot_jax = jax_says(functions.get("batched_dot"), forgot)  # lowered only, on these devices
    result = DotResult(
        pairs=pairs,
        devices=n,
        block=block,
        pmap_out_shape=tuple(out.shape),
        flat_shape=(pairs,),
        vmap_out_shape=(pairs,),
        max_abs_diff=cmp["max_abs"],
        max_rel_diff=cmp["max_rel"],
        allclose=cmp["close"],
        numpy_max_abs_diff=cmp["np_diff"],
        compile_s=compile_s,
        transfer_s=transfer_s,
        run_s=statistics.median(run_all),
        run_s_all=run_all,
        vmap_compile_s=vmap_compile_s,
        vmap_transfer_s=vmap_transfer_s,
        vmap_run_s=vmap_run_s,
        host_growth_mb=None,
        sample=cmp["sample"],
        per_device=cmp["per_device"],
        without_vmap_shape=wrong_shape,
        without_vmap_is_block_sums=is_block_sums,
        forgot_reshape_message=forgot_msg,
        forgot_reshape_jax=forgot_jax.text if forgot_jax is not None else "",
        zero_copy=zero_copy,
        platform=devicefacts.facts().platform,
        first_transfer_s=warm_s,
        device_peak_bytes=devicefacts.peak_device_bytes(),
    )
    step("Done", 1.0)
    return result


def _reference(vmap_dot, host: tuple[np.ndarray, np.ndarray]) -> tuple[object, float, float, float]:
    """jit(vmap(dot)) on one device: its output, and the seconds of the transfer, the compile
    and one timed run after a warm-up."""

    (x0, y0), transfer_s = _put(host, devicefacts.local_devices_for_work()[0])
    t = time.perf_counter()
    compiled = vmap_dot.lower(x0, y0).compile()
    compile_s = time.perf_counter() - t
    ref, times = devicerates.timed_calls(lambda: compiled(x0, y0), 1)
    return ref, transfer_s, compile_s, times[0]


def _compare(out, ref, xs, ys, block: int) -> dict:
    """Reshape back and compare with the one-device reference, then numpy, block by block
    (device k's block is pairs k*block .. (k+1)*block of the flat result): no whole float64
    copies."""
    ref_np = np.asarray(ref)  # (pairs,), read in place
    outs = shards_of(out)
    pairs_ = [(so.data[0], ref_np[k * block : (k + 1) * block]) for k, so in enumerate(outs)]
    max_abs, max_rel, close = diff_stats(pairs_, 1e-5, 1e-6)
    per_device, np_diff = [], 0.0
    for sx, sy, so in zip(shards_of(xs), shards_of(ys), outs, strict=True):
        expect = np.einsum("ij,ij->i", sx.data[0], sy.data[0])
        np_diff = max(np_diff, diff_stats([(so.data[0], expect)], 0.0, 0.0)[0])
        per_device.append(
            {
                "device": so.device,
                "x slice": sx.index_text,
                "out slice": so.index_text,
                "block": f"{block:,} pairs",
                # named from the array they come from: this device's block of out
                "first dot products (out block)": [round(float(v), 4) for v in so.data[0, :3]],
            }
        )
        del expect
    sample = [float(v) for v in np.concatenate([so.data[0] for so in outs[:5]])[:5]]
    return {
        "max_abs": max_abs,
        "max_rel": max_rel,
        "close": close,
        "np_diff": np_diff,
        "per_device": per_device,
        "sample": sample,
    }


def _without_vmap(pmap_vdot, xs, ys, out) -> tuple[tuple[int, ...], bool]:
    """pmap(vdot) without vmap: its shape, and whether it equals each device's block sum."""
    wrong = pmap_vdot(xs, ys)
    wrong.block_until_ready()
    block_sums = np.array([so.data[0].sum() for so in shards_of(out)])
    same = bool(np.allclose(np.asarray(wrong), block_sums, rtol=1e-3, atol=1e-2))
    return tuple(wrong.shape), same


def _generate(seed: int, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """x, y: seeded uniform values in [-1, 1) (the same for the same seed; numpy's uniform
    float32 generator is about twice as fast as its normal one), drawn on two threads from two
    streams of the seed, each into its own anonymous mapping (page-aligned, so JAX on CPU can
    share it instead of copying; returned to the OS when the last array using it goes)."""
    from concurrent.futures import ThreadPoolExecutor

    def draw(rng: np.random.Generator) -> np.ndarray:
        host = np.frombuffer(mmap.mmap(-1, math.prod(shape) * 4), np.float32).reshape(shape)
        rng.random(out=host.reshape(-1), dtype=np.float32)  # numpy drops the GIL while drawing
        host *= 2  # in place: no second array
        host -= 1
        return host

    with ThreadPoolExecutor(2) as pool:
        x, y = pool.map(draw, np.random.default_rng(seed).spawn(2))
    return x, y


def _put(host: tuple[np.ndarray, np.ndarray], where) -> tuple[tuple, float]:
    """Both arrays put on ``where`` (a device or a sharding), and the seconds that took."""
    import jax

    t = time.perf_counter()
    placed = tuple(jax.device_put(h, where) for h in host)
    jax.block_until_ready(placed)
    seconds = time.perf_counter() - t
    gc.collect(0)  # a sharded device_put leaves a young cycle that holds the host array
    return placed, seconds


def _shares_memory(placed, host: np.ndarray) -> bool:
    """Whether every shard of ``placed`` lies inside ``host``'s memory (JAX's zero-copy put)."""
    lo, hi = host.ctypes.data, host.ctypes.data + host.nbytes
    try:
        return all(lo <= s.data.unsafe_buffer_pointer() < hi for s in placed.addressable_shards)
    except Exception:  # noqa: BLE001 - a platform without raw pointers: copies, as far as we know
        return False
