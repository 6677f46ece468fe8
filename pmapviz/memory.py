"""How many bytes each allocating action really needs at its peak, and refusing actions that
do not fit the memory budget.

Every estimate is a sum of the arrays that are alive together at the action's worst moment,
in the dtypes the action really creates (device dtypes, float64 comparison chunks, numpy's
own result dtypes), plus a fixed ``OVERHEAD`` for the JAX runtime and the chunk buffers.
``tests/core/test_memory.py`` measures each action's peak RSS in a fresh process and holds
every estimate to ``measured <= estimate <= 1.5 * measured``; ``benchmarks/memory_model.py``
prints the table. Pure functions: nothing here allocates or starts JAX work.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

CHUNK = 1 << 16  # elements per chunk of host-side work (generation, comparisons)
MiB = 2**20
# measured (benchmarks/memory_model.py): the JAX runtime's own growth during an action
# (executables' first runs, thread-local arenas) plus a few float64 chunk buffers
OVERHEAD = 24 * MiB


class BudgetError(ValueError):
    """An action that would not fit the memory budget; the message says what fits."""


def refuse_over(need: int, budget: int, what: str, fits: str) -> None:
    """Raise BudgetError when ``need`` > ``budget``; ``fits`` names the largest that fits."""
    if need > budget:
        raise BudgetError(
            f"{what} needs about {need / 1e9:.2f} GB at its peak; the memory budget is "
            f"{budget / 1e9:.2f} GB. {fits}"
        )


def largest_fitting(need: Callable[[int], int], budget: int, lo: int, hi: int,
                    step: int = 1) -> int:  # fmt: skip
    """The largest multiple of ``step`` in [lo, hi] with need(size) <= budget (``need`` grows
    with size), or 0 if none: binary search, exact integers."""
    lo_k, hi_k = -(-lo // step), hi // step
    if hi_k < lo_k or need(lo_k * step) > budget:
        return 0
    while lo_k < hi_k:
        mid = (lo_k + hi_k + 1) // 2
        if need(mid * step) <= budget:
            lo_k = mid
        else:
            hi_k = mid - 1
    return lo_k * step


_ALLOCATOR_SET: list[bool] = []


def large_arrays_return_to_the_os() -> None:
    """Make glibc give every allocation of 1 MiB or more its own mapping, returned to the OS
    the moment it is freed. By default glibc raises that threshold after the first free (up to
    32 MiB), and XLA's per-device threads then leave freed device buffers in per-thread heaps:
    measured, a live run of 5 timed calls held 3 outputs' worth of RSS instead of 1, and
    training's peak drifted with the number of steps (mlp: 104 MB at 5, 154 MB at 40). Chunks
    of host-side work stay below the threshold (``CHUNK`` float64 = 512 KiB). Once per
    process; a no-op where glibc's ``mallopt`` is not available."""
    if _ALLOCATOR_SET:
        return
    _ALLOCATOR_SET.append(True)
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(-3, 1 * MiB)  # M_MMAP_THRESHOLD


def device_dtype(name: str) -> np.dtype:
    """The dtype a device really holds for ``name`` (float64 is float32 unless x64 is on)."""
    import jax
    import jax.numpy as jnp

    return np.dtype(jax.dtypes.canonicalize_dtype(jnp.dtype(name)))


def nbytes(shape, dtype) -> int:
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


# ---------------------------------------------------------------- live run of a plan
def _out_leaves(plan) -> list[tuple[tuple, np.dtype]]:
    import jax

    shapes = jax.tree.leaves(plan.out_shapes, is_leaf=lambda x: isinstance(x, tuple))
    return [(s, device_dtype(d)) for s, d in zip(shapes, jax.tree.leaves(plan.out_dtypes),
                                                 strict=True)]  # fmt: skip


def _numpy_check_bytes(plan, key: str | None) -> int:
    """One device's numpy check: its float blocks as float64, numpy's result in numpy's own
    dtype. Without the program's key: as if it had a numpy version returning 8-byte items."""
    from pmapviz.catalog import numpy_fn

    f_np = numpy_fn(key) if key is not None else None
    if plan.out_axes is None or (key is not None and f_np is None):
        return 0
    blocks = [np.dtype(np.float64) if device_dtype(d).kind not in "iub" else device_dtype(d)
              for d in plan.dtypes]  # fmt: skip
    shapes = plan.per_device_in_shapes
    ins = sum(nbytes(s, dt) for s, dt in zip(shapes, blocks, strict=True) if dt == np.float64)
    if f_np is None:
        out_dt = np.dtype(np.float64)
    else:
        probe = [np.ones((1,) * len(s), dt) for s, dt in zip(shapes, blocks, strict=True)]
        out_dt = np.asarray(f_np(*probe)).dtype
    out_shape = plan.per_device_out_shapes
    return ins + nbytes(out_shape if isinstance(out_shape, tuple) else (), out_dt)


def live_run_bytes(plan, program_key: str | None = None) -> int:
    """Peak of ``programs.make_values`` + ``programs.run_plan``, inputs I and outputs O in the
    devices' dtypes: the host inputs and their placed copy, then the placed inputs, their
    one-device copy and the reference output (2I + O); the placed inputs, the reference and
    pmap's output (I + 2O); the reference dropped, one device's numpy check (I + O + check).
    ``program_key`` (the catalog key) makes the numpy check exact; without it, an upper bound.
    """
    i = sum(nbytes(s, device_dtype(d)) for s, d in zip(plan.arg_shapes, plan.dtypes,
                                                         strict=True))  # fmt: skip
    o = sum(nbytes(s, dt) for s, dt in _out_leaves(plan))
    check = _numpy_check_bytes(plan, program_key)
    return max(2 * i + o, i + 2 * o, i + o + check) + OVERHEAD


# ---------------------------------------------------------------- the seed's dot example
def dot_bytes(pairs: int, n: int) -> int:
    """Peak of ``dotproduct.run_dot``: x and y (X bytes each, float32) generated once on the
    host, the reference output kept for the comparison and pmap's own output (O each). On CPU
    JAX shares a host buffer that starts on a 64-byte boundary instead of copying it: the
    one-device reference always shares x and y, the n devices only when every device's block
    does (:func:`dot_blocks_shared`), else they get copies (2X more). Comparisons are per
    shard, in chunks."""
    x, o = pairs * 3 * 4, pairs * 4
    copies = 0 if dot_blocks_shared(pairs, n) else 2 * x
    return 2 * x + 2 * o + copies + OVERHEAD


SHARE_ALIGN = 64  # bytes: JAX on CPU shares a host buffer that starts on such a boundary


def dot_shared_step(n: int) -> int:
    """The pair counts whose every device block is shared are the multiples of this: blocks of
    a multiple of 16 pairs (16 x 12 bytes is the least multiple of 64)."""
    pair = 3 * 4
    return n * (SHARE_ALIGN // math.gcd(SHARE_ALIGN, pair))


def dot_blocks_shared(pairs: int, n: int) -> bool:
    """Whether every device's (pairs // n, 3) float32 block starts on a 64-byte boundary of a
    page-aligned array."""
    return pairs % dot_shared_step(n) == 0


# ---------------------------------------------------------------- timing
def sweep_bytes(workload, sizes, ks, impls, budget: int | None = None) -> int:
    """Peak of ``benchmarking.sweep``: the host inputs at the largest size (smaller sizes are
    views of them), plus, for the run at size s, the placed inputs, the output and its
    device-to-host copy (numpy: its output only). With ``budget``, the bandwidth probe (two
    arrays of ``benchmarking.probe_nbytes(budget)``) too, unless this process measured it."""
    from pmapviz import benchmarking

    largest = max(sizes)
    on_device = any(i != "numpy" for i in impls)
    run = max(
        (workload.input_bytes(s) if on_device else 0) + 2 * workload.output_bytes(s) for s in sizes
    )
    probe = 0
    if budget is not None and "gbs" not in benchmarking._BANDWIDTH:
        probe = 2 * benchmarking.probe_nbytes(budget)
    return max(probe, workload.input_bytes(largest) + run) + OVERHEAD


def plan_timing_bytes(plan) -> int:
    """Peak of ``benchmarking.measure_plan`` (bandwidth already measured): the host inputs,
    one implementation's placed copy, its output and that output's copy to the host."""
    i = sum(nbytes(s, device_dtype(d)) for s, d in zip(plan.arg_shapes, plan.dtypes,
                                                         strict=True))  # fmt: skip
    o = sum(nbytes(s, dt) for s, dt in _out_leaves(plan))
    return 2 * i + 2 * o + OVERHEAD


# ---------------------------------------------------------------- small actions
# Measured in fresh processes (tests/core/test_memory.py, benchmarks/memory_model.py), after
# JAX's first-use costs: what the action adds to the RSS, above its data.
COLLECTIVE_BYTES = 2 * MiB  # trace + compile + run a new small collective program: ~1.7 MB
# training: compiling and running the two steps, per model (fixed part, and per example of
# the global batch: activations of the one-device step over the whole batch, gradients, the
# placed batch and its one-device copy); measured mlp 47 MB at 8,192 and 61-71 MB at 65,536,
# linear 21.5 MB at 65,536
TRAIN_BASE = {"linear": 12 * MiB, "mlp": 46 * MiB}
TRAIN_PER_EXAMPLE = {"linear": 190, "mlp": 460}


def training_bytes(cfg) -> int:
    """Peak of ``training.train`` (and of each run of ``training.time_per_step``)."""
    return TRAIN_BASE[cfg.model] + TRAIN_PER_EXAMPLE[cfg.model] * cfg.batch


def collective_bytes(n: int, m: int) -> int:
    """Peak of ``collectives.run`` on a program not compiled yet: the input (n, m) and the
    largest output (all_gather: n copies of it), float32, on top of compiling it."""
    return COLLECTIVE_BYTES + (n * m + n * n * m) * 4


# ---------------------------------------------------------------- cluster
# A worker (python -m pmapviz.worker) is a whole Python + JAX process: its peak RSS, as it
# reports it (getrusage maxrss, in its RESULT line), measured 216-220 MiB for 1 to 16 devices.
WORKER_BASE = 236 * MiB
WORKER_PER_DEVICE = 1 * MiB


def worker_bytes(local_devices: int) -> int:
    return WORKER_BASE + WORKER_PER_DEVICE * local_devices


def cluster_bytes(processes: int, local_devices: int) -> int:
    """Peak of ``cluster.launch``: P workers at once, then the one-process comparison with all
    P * D devices (after the workers have exited, so the larger of the two)."""
    return max(processes * worker_bytes(local_devices), worker_bytes(processes * local_devices))
