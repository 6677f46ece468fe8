"""How many bytes each allocating action really needs at its peak: one
:class:`pmapviz.core.budgets.memorymodel.Need` per action (a live run of a plan, the seed's dot
example, timing sweeps, training, a collective, a mesh run, a cluster launch).

Every estimate is a sum of the arrays that are alive together at the action's worst moment, in the
dtypes the action really creates (device dtypes, float64 comparison chunks, numpy's own result
dtypes), plus a fixed ``memory.OVERHEAD`` for the JAX runtime and the chunk buffers.
``tests/core/budgets/test_memoryestimates.py`` measures each action's peak RSS in a fresh process
and holds it to ``measured <= total <= 1.5 * measured``; ``benchmarks/memory_model.py`` prints the
table. Pure functions: nothing here allocates or starts JAX work.
"""

from __future__ import annotations

import math

import numpy as np

from pmapviz.core.base import pytrees
from pmapviz.core.budgets.memorymodel import OVERHEAD, Budget, MiB, Need, device_dtype, nbytes
from pmapviz.core.devices import devicerates
from pmapviz.core.expressions.functions import numpy_fn
from pmapviz.core.planning.planning import Plan


# ---------------------------------------------------------------- live run of a plan
def _out_leaves(plan: Plan) -> list[tuple[tuple, np.dtype]]:
    import jax

    shapes = [shape for _, shape in pytrees.leaves(plan.out_shapes, "out")]  # tuples of shapes
    return [
        (s, device_dtype(d)) for s, d in zip(shapes, jax.tree.leaves(plan.out_dtypes), strict=True)
    ]


def _numpy_check_bytes(plan: Plan, key: str | None) -> int:
    """One device's numpy check: its float blocks as float64, numpy's result in numpy's own
    dtype. Without the program's key: as if it had a numpy version returning 8-byte items."""
    f_np = numpy_fn(key) if key is not None else None
    if plan.out_axes is None or (key is not None and f_np is None):
        return 0
    dtypes = [leaf.dtype for leaf in plan.leaves]
    blocks = [
        np.dtype(np.float64) if device_dtype(d).kind not in "iub" else device_dtype(d)
        for d in dtypes
    ]
    shapes = [leaf.local_shape for leaf in plan.leaves]
    ins = sum(nbytes(s, dt) for s, dt in zip(shapes, blocks, strict=True) if dt == np.float64)
    if f_np is None:
        out_dt = np.dtype(np.float64)
    else:
        probe = [np.ones((1,) * len(s), dt) for s, dt in zip(shapes, blocks, strict=True)]
        out_dt = np.asarray(f_np(*probe)).dtype
    out_shape = plan.per_device_out_shapes
    return ins + nbytes(out_shape if isinstance(out_shape, tuple) else (), out_dt)


def live_run_bytes(plan: Plan, program_key: str | None = None) -> Need:
    """Peak of ``pmaprun.make_values`` + ``pmaprun.run_plan``, inputs I and outputs O in the
    devices' dtypes: the host inputs and their placed copy, then the placed inputs, their one-device
    copy and the reference output (2I + O); the placed inputs, the reference and pmap's output (I +
    2O); the reference dropped, one device's numpy check (I + O + check). ``program_key`` (the
    catalog key) makes the numpy check exact; without it, an upper bound. With devices of their own:
    I + 2O on them (the one-device inputs are dropped before pmap's are placed); on the host the
    inputs, then every shard read back (I + O), the reference's output (O) and the check.
    """
    i = sum(nbytes(leaf.shape, device_dtype(leaf.dtype)) for leaf in plan.leaves)
    o = sum(nbytes(s, dt) for s, dt in _out_leaves(plan))
    check = _numpy_check_bytes(plan, program_key)
    return Need(
        max(2 * i + o, i + 2 * o, i + o + check) + OVERHEAD, i + 2 * o + check + OVERHEAD, i + 2 * o
    )


# ---------------------------------------------------------------- the seed's dot example
def dot_bytes(pairs: int, n: int) -> Need:
    """Peak of ``dotproduct.run_dot``: x and y (X bytes each, float32) generated once on the
    host, the reference output kept for the comparison and pmap's own output (O each). On CPU
    JAX shares a host buffer that starts on a 64-byte boundary instead of copying it: the
    one-device reference always shares x and y, the n devices only when every device's block
    does (:func:`dot_blocks_shared`), else they get copies (2X more). Comparisons are per
    shard, in chunks. With devices of their own: the one-device inputs and output, then
    pmap's inputs beside both outputs (2X + 2O); on the host the inputs, then the shards read
    back for the comparisons (2X + 2O)."""
    x, o = pairs * 3 * 4, pairs * 4
    copies = 0 if dot_blocks_shared(pairs, n) else 2 * x
    return Need(2 * x + 2 * o + copies + OVERHEAD, 2 * x + 2 * o + OVERHEAD, 2 * x + 2 * o)


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
def sweep_bytes(workload, sizes, ks, impls, budget: int | Budget | None = None) -> Need:
    """Peak of ``benchmarking.sweep``: the host inputs at the largest size (smaller sizes are
    views of them), plus, for the run at size s, the placed inputs, the output and its
    device-to-host copy (numpy: its output only). With ``budget``, the bandwidth probe (one
    array of ``devicerates.probe_nbytes``, on one device) too, unless this process has
    measured it."""
    largest = max(sizes)
    on_device = any(i != "numpy" for i in impls)
    placed = max(
        (workload.input_bytes(s) if on_device else 0) + workload.output_bytes(s) for s in sizes
    )
    back = max(workload.output_bytes(s) for s in sizes)
    probe = 0
    if budget is not None and not devicerates.rates_measured():
        b = Budget.of(budget)
        probe = devicerates.probe_nbytes(b.probe_pool(), own_memory=not b.shared)
    host = workload.input_bytes(largest) + back
    return Need(max(probe, host + placed) + OVERHEAD, host + OVERHEAD, max(probe, placed))


def plan_timing_bytes(plan: Plan) -> Need:
    """Peak of ``benchmarking.measure_plan`` (bandwidth already measured): the host inputs,
    one implementation's placed copy, its output and that output's copy to the host."""
    i = sum(nbytes(leaf.shape, device_dtype(leaf.dtype)) for leaf in plan.leaves)
    o = sum(nbytes(s, dt) for s, dt in _out_leaves(plan))
    return Need(2 * i + 2 * o + OVERHEAD, i + o + OVERHEAD, i + o)


# ---------------------------------------------------------------- small actions
# Measured in fresh processes (tests/core/budgets/test_memoryestimates.py,
# benchmarks/memory_model.py),
# after JAX's first-use costs: what the action adds to the RSS, above its data.
COLLECTIVE_BYTES = 2 * MiB  # trace + compile + run a new small collective program: ~1.7 MB
# training: compiling and running the two steps, per model (fixed part, and per example of
# the global batch: activations of the one-device step over the whole batch, gradients, the
# placed batch and its one-device copy). Measured on 4 devices with the steps compiled ahead
# of time from shapes (training.compile_steps): mlp 29 MB at 64, 36-38 MB at 8,192, 68-75 MB
# at 65,536; linear 8-9.3 MB at 8,192, 7.5-8.5 MB at 32,768, 11.4-16.5 MB at 65,536 (calling
# the steps to compile them had taken 6-15 MB more)
TRAIN_BASE = {"linear": 8 * MiB, "mlp": 46 * MiB}
TRAIN_PER_EXAMPLE = {"linear": 140, "mlp": 460}


def training_bytes(model: str, batch: int) -> Need:
    """Peak of ``trainingrun.train`` (and of each run of ``trainingrun.time_per_step``) for
    ``model`` and a global ``batch``; with devices of their own, the per-example part on them
    (and, read back and compiled, on the host)."""
    data = TRAIN_PER_EXAMPLE[model] * batch
    return Need(TRAIN_BASE[model] + data, TRAIN_BASE[model] + data, data)


def collective_bytes(n: int, m: int) -> Need:
    """Peak of ``collectiveruns.run`` on a program not compiled yet: the input (n, m) and the
    largest output (all_gather: n copies of it), float32, on top of compiling it (on the
    devices, and read back to the host)."""
    data = (n * m + n * n * m) * 4
    return Need(COLLECTIVE_BYTES + data, COLLECTIVE_BYTES + data, data)


def mesh_run_bytes(inputs: int, placed: int, output: int, temps: int = 0) -> Need:
    """Peak of ``meshownf.run``: the host inputs (I, float32), the same placed on the mesh
    (``placed``: every device's block, replicated ones counted on each device), and the
    output (O) three times: on the mesh, read back, and the one-device reference beside its
    own copy of the inputs (I); plus the largest temporaries XLA planned for one of its
    programs (T, all devices together). The two views run one after the other."""
    peak = 2 * inputs + placed + 3 * output + temps
    return Need(
        peak + OVERHEAD, inputs + 2 * output + OVERHEAD, inputs + placed + 2 * output + temps
    )


# ---------------------------------------------------------------- cluster
# A worker (python -m pmapviz.features.cluster.clusterworker) is a whole Python + JAX process: its
# peak RSS, as it reports it (getrusage maxrss, in its RESULT line), measured 216-220 MiB for 1 to
# 16 devices.
WORKER_BASE = 236 * MiB
WORKER_PER_DEVICE = 1 * MiB


def worker_bytes(local_devices: int) -> int:
    """Peak memory of one worker process with ``local_devices`` devices (measured, plus margin)."""
    return WORKER_BASE + WORKER_PER_DEVICE * local_devices


def cluster_bytes(processes: int, local_devices: int) -> Need:
    """Peak of ``cluster.launch``: P workers at once, then the one-process comparison with all
    P * D devices (after the workers have exited, so the larger of the two). Host only: the
    workers run on CPU devices."""
    return Need.host_only(
        max(processes * worker_bytes(local_devices), worker_bytes(processes * local_devices))
    )
