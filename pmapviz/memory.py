"""How many bytes each allocating action really needs at its peak, and refusing actions that
do not fit the memory budget.

Every estimate is a sum of the arrays that are alive together at the action's worst moment,
in the dtypes the action really creates (device dtypes, float64 comparison chunks, numpy's
own result dtypes), plus a fixed ``OVERHEAD`` for the JAX runtime and the chunk buffers.

An estimate is a :class:`Need`, two views of the same moments:

* ``total``: the process's RSS when the devices use the host's memory (CPU devices). This is
  the measured model: ``tests/core/test_memory.py`` measures each action's peak RSS in a fresh
  process and holds it to ``measured <= total <= 1.5 * measured``;
  ``benchmarks/memory_model.py`` prints the table.
* ``host`` and ``device``: the same arrays split by where they live when the devices have
  their own memory (GPU, TPU): host-side work (generated inputs, comparisons, read-backs)
  against the host, the placed arrays (all devices together, as if on one: the one-device
  reference holds them whole) against the devices.

A :class:`Budget` knows which view applies (``devicefacts.Facts.shares_host_memory``) and
says, in the user's numbers, which memory an action would overrun. Pure functions: nothing
here allocates or starts JAX work.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz import devicefacts, devicerates, deviceset, devicesetup, hostmemory, pytrees, queues
from pmapviz.catalog import numpy_fn
from pmapviz.devicesetup import large_arrays_return_to_the_os  # noqa: F401  (re-exported)
from pmapviz.planning import Plan
from pmapviz.settings import fmt_bytes

CHUNK = 1 << 16  # elements per chunk of host-side work (generation, comparisons)
MiB = 2**20
# measured (benchmarks/memory_model.py): the JAX runtime's own growth during an action
# (executables' first runs, thread-local arenas) plus a few float64 chunk buffers
OVERHEAD = 24 * MiB


class BudgetError(ValueError):
    """An action that would not fit the memory budget; the message says what fits."""


@dataclass(frozen=True)
class Need:
    """What one action needs at its peak, in bytes."""

    total: int  # host RSS when the devices are the host's memory (CPU): the measured model
    host: int  # host memory alone, when the devices have their own (GPU, TPU)
    device: int = 0  # device memory then, all devices together

    @classmethod
    def host_only(cls, nbytes: int) -> Need:
        """Work that happens on the host only (worker processes, host copies)."""
        return cls(nbytes, nbytes, 0)

    def words(self, shared: bool) -> str:
        """'1.23 GB' (one pool), or '1.23 GB on the devices and 400 MB on the host'."""
        if shared:
            return fmt_bytes(self.total)
        return f"{fmt_bytes(self.device)} on the devices and {fmt_bytes(self.host)} on the host"


@dataclass(frozen=True)
class Budget:
    """Bytes one action may use: host memory and, where the devices have their own, device
    memory (``device`` None: the devices use the host's memory, one budget for both)."""

    host: int
    device: int | None = None
    host_source: str = ""
    device_source: str = ""

    @classmethod
    def of(cls, value: int | Budget) -> Budget:
        """A plain number of bytes is one pool, shared by the host and its devices (CPU)."""
        return value if isinstance(value, Budget) else cls(int(value))

    @property
    def shared(self) -> bool:
        """Whether the host and its devices share one budget (``device`` is None)."""
        return self.device is None

    def fits(self, need: Need) -> bool:
        """Whether ``need`` fits: in the one pool, or in both host and device memory."""
        if self.device is None:
            return need.total <= self.host
        return need.host <= self.host and need.device <= self.device

    def problem(self, need: Need) -> str | None:
        """Which memory ``need`` overruns, in the user's numbers; None when it fits."""
        if self.device is None:
            if need.total <= self.host:
                return None
            return (
                f"needs about {fmt_bytes(need.total)} at its peak; the memory budget is "
                f"{fmt_bytes(self.host)}"
            )
        if need.device > self.device:
            return (
                f"needs about {fmt_bytes(need.device)} of device memory at its peak; the "
                f"device memory budget is {fmt_bytes(self.device)}"
            )
        if need.host > self.host:
            return (
                f"needs about {fmt_bytes(need.host)} of host memory at its peak; the host "
                f"memory budget is {fmt_bytes(self.host)}"
            )
        return None

    def words(self, need: Need) -> str:
        """``need`` in words, split the way this budget is: '1.23 GB', or devices and host apart."""
        return need.words(self.shared)

    def bytes_of(self, need: Need) -> int:
        """The bytes an action will allocate, wherever they live (for "a large run" cut-offs)."""
        return need.total if self.device is None else need.host + need.device

    def share_of(self, need: Need) -> float:
        """How much of ``need`` fits (1.0 or more: all of it), for "make it N% of its size"."""
        if self.device is None:
            return self.host / max(need.total, 1)
        return min(self.host / max(need.host, 1), self.device / max(need.device, 1))

    def probe_pool(self) -> int:
        """The budget the bandwidth probe (two arrays on one device) is sized by."""
        return self.host if self.device is None else self.device


def refuse_over(need: Need, budget: int | Budget, what: str, fits: str) -> None:
    """Raise BudgetError when ``need`` does not fit; ``fits`` names the largest that does."""
    why = Budget.of(budget).problem(need)
    if why:
        raise BudgetError(f"{what} {why}. {fits}")


def largest_fitting(
    need: Callable[[int], Need], budget: int | Budget, lo: int, hi: int, step: int = 1
) -> int:
    """The largest multiple of ``step`` in [lo, hi] whose need fits ``budget`` (needs grow
    with size), or 0 if none: binary search, exact integers."""
    fits = Budget.of(budget).fits
    lo_k, hi_k = -(-lo // step), hi // step
    if hi_k < lo_k or not fits(need(lo_k * step)):
        return 0
    while lo_k < hi_k:
        mid = (lo_k + hi_k + 1) // 2
        if fits(need(mid * step)):
            lo_k = mid
        else:
            hi_k = mid - 1
    return lo_k * step


# ---------------------------------------------------------------- this server's budget
_DEFAULTS: dict[str, int] = {}  # the default budgets, fixed when the server first needs them


def budget(name: str | None = None) -> Budget:
    """Bytes this server's actions on device set ``name`` (default: the current set) may use
    together (:func:`reserve` shares them): the host's (``--max-bytes``, else a quarter of the
    host memory available once JAX had started) and, where the set's devices have their own
    memory, the devices' (``--max-device-bytes``, else a quarter of the free memory of the
    fullest device then). One action may use all of it; several at once share it, on every
    set of the server alike (:func:`admission`)."""
    settings = devicesetup.applied_settings()
    host, host_source = _host_budget(settings.max_bytes)
    name = deviceset.current() if name is None else name
    if devicefacts.facts(name).shares_host_memory:
        return Budget(host, None, host_source, "the devices use the host's memory")
    device, device_source = _device_budget(settings.max_device_bytes, host, name)
    return Budget(host, device, host_source, device_source)


def _host_budget(max_bytes: int | None) -> tuple[int, str]:
    """The host's budget and what it is based on, in words (with the numbers)."""
    if max_bytes:
        return max_bytes, "set with --max-bytes"
    started = devicefacts.startup()
    available = started.available_after if started else hostmemory.host_memory().available
    host = _DEFAULTS.setdefault("host", available // 4)
    runtime = (started.runtime_bytes if started else None) or 0
    took = (
        f"; the JAX runtime had mapped {fmt_bytes(runtime)} into the server as it started, "
        "device memory windows included"
        if runtime >= devicefacts.RUNTIME_NOTE_BYTES
        else ""
    )
    return host, (
        f"a quarter of the {fmt_bytes(4 * host)} of host memory available once JAX "
        f"had started{took}; set with --max-bytes"
    )


def _device_budget(max_device_bytes: int | None, host: int, name: str) -> tuple[int, str]:
    if max_device_bytes:
        return max_device_bytes, "set with --max-device-bytes"
    free = [m.free for m in devicefacts.device_memory(name) or [] if m.free is not None]
    if not free:
        return host, (
            "this backend reports no device memory limit, so the host's budget is "
            "used; set one with --max-device-bytes"
        )
    device = _DEFAULTS.setdefault(f"device:{name}", min(free) // 4)
    return device, (
        "a quarter of the free memory of the fullest device when the server "
        "started (memory_stats: bytes_limit - bytes_in_use); set with "
        "--max-device-bytes"
    )


# ---------------------------------------------------------------- sharing it: admission
QUEUE_TIMEOUT_S = 120.0  # how long an action waits for memory before it gives up
_POOLS: dict[tuple[int, ...], queues.Pool] = {}
_POOLS_LOCK = threading.Lock()


def _describe(amount: tuple[int, ...]) -> str:
    if len(amount) == 1:
        return fmt_bytes(amount[0])
    return f"{fmt_bytes(amount[0])} of host and {fmt_bytes(amount[1])} of device memory"


def admission() -> queues.Pool:
    """The server's memory pool, one for every device set: its capacity is the host's budget,
    and the accelerators' device budget where the server has accelerators; shared first come,
    first served by every allocating action."""
    b = _server_budget()
    capacity = (b.host,) if b.shared else (b.host, b.device or 0)
    with _POOLS_LOCK:
        if capacity not in _POOLS:
            _POOLS[capacity] = queues.Pool("memory", capacity, _describe)
        return _POOLS[capacity]


def _server_budget() -> Budget:
    """The budget of the machine's own devices (an accelerator set's has a device part):
    the pool's capacity, whichever set an action runs on."""
    return budget(deviceset.real())


def _amount(need: Need, b: Budget, pool: queues.Pool) -> tuple[int, ...]:
    """What ``need`` takes of a pool: on a set whose devices use the host's memory, all of it
    from the host (and nothing of an accelerator's device memory beside it)."""
    if b.shared:
        return (need.total,) + (0,) * (len(pool.capacity) - 1)
    return (need.host, need.device)


def measured_rates(b: Budget | None = None) -> devicerates.Rates:
    """The device's measured rates (:func:`devicerates.rates`); the first measurement holds
    its probe's memory in the server's budget like any other action."""
    b = budget() if b is None else b
    if devicerates.rates_measured():
        return devicerates.rates()
    probe = devicerates.probe_nbytes(b.probe_pool(), own_memory=not b.shared)
    need = Need(probe + OVERHEAD, OVERHEAD, probe)
    with reserve(need, "measuring the device's bandwidth", b=b):
        return devicerates.rates(b.probe_pool())


def reserve(
    need: Need,
    label: str,
    on_wait=None,
    should_stop=None,
    timeout: float = QUEUE_TIMEOUT_S,
    b: Budget | None = None,
) -> queues.Grant:
    """Wait until ``need`` fits in what the server's other actions leave of the budget, and
    hold it (``with memory.reserve(...):``). Raises BudgetError at once when it could never
    fit (its message names what it needs; callers refuse earlier, with the largest size that
    fits), queues.WaitTimeout or queues.Cancelled when the wait ends without room."""
    b = budget() if b is None else b
    if why := b.problem(need):
        raise BudgetError(f"{label[:1].upper()}{label[1:]} {why}.")
    pool = admission()
    return pool.acquire(_amount(need, b, pool), label, timeout, should_stop, on_wait)


def budget_lines(
    budget: Budget,
    stats: list[devicefacts.DeviceMemory] | None,
    reserved: tuple[int, ...] | None = None,
) -> list[str]:
    """The sidebar's memory lines, each saying which memory it is: the server's budget, which
    its running actions share (host, and device where the devices have their own), what they
    hold now (``reserved``), and each device's bytes in use and at peak as its backend reports
    them (memory_stats)."""
    gib = 2**30
    held = reserved or (0, 0)
    if budget.shared:
        return [
            f"Memory budget for the whole server: **{budget.host / gib:.1f} GiB** of host "
            f"memory, which the devices share ({budget.host_source}); running actions "
            f"hold {held[0] / gib:.1f} GiB of it now."
        ]
    lines = [
        f"Host memory budget for the whole server: **{budget.host / gib:.1f} GiB** "
        f"({budget.host_source}); running actions hold {held[0] / gib:.1f} GiB.",
        f"Device memory budget for the whole server: **{(budget.device or 0) / gib:.1f} "
        f"GiB** ({budget.device_source}); running actions hold "
        f"{held[1] / gib:.1f} GiB.",
    ]
    if stats:
        fullest = max(stats, key=lambda m: (m.in_use, m.peak))
        known = [m.limit for m in stats if m.limit is not None]
        limit = f"of {min(known) / gib:,.1f} GiB" if known else "no limit reported"
        which = f"`{fullest.device}`" if len(stats) == 1 else f"the fullest, `{fullest.device}`"
        peak = max(m.peak for m in stats) / gib
        lines.append(
            f"Device memory now (memory_stats, {which}): {fullest.in_use / gib:,.2f} "
            f"GiB in use {limit}, peak {peak:,.2f} GiB."
        )
    return lines


def device_dtype(name: str) -> np.dtype:
    """The dtype a device really holds for ``name`` (float64 is float32 unless x64 is on)."""
    import jax
    import jax.numpy as jnp

    return np.dtype(jax.dtypes.canonicalize_dtype(jnp.dtype(name)))


def nbytes(shape, dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype``."""
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


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
    devices' dtypes: the host inputs and their placed copy, then the placed inputs, their
    one-device copy and the reference output (2I + O); the placed inputs, the reference and
    pmap's output (I + 2O); the reference dropped, one device's numpy check (I + O + check).
    ``program_key`` (the catalog key) makes the numpy check exact; without it, an upper bound.
    With devices of their own: I + 2O on them (the one-device inputs are dropped before pmap's
    are placed); on the host the inputs, then every shard read back (I + O), the reference's
    output (O) and the check.
    """
    i = sum(nbytes(leaf.shape, device_dtype(leaf.dtype)) for leaf in plan.leaves)
    o = sum(nbytes(s, dt) for s, dt in _out_leaves(plan))
    check = _numpy_check_bytes(plan, program_key)
    return Need(
        max(2 * i + o, i + 2 * o, i + o + check) + OVERHEAD, i + 2 * o + check + OVERHEAD, i + 2 * o
    )


def with_temporaries(need: Need, temp: int) -> Need:
    """``need`` plus the scratch memory XLA's compiled program allocates while it runs (its
    ``memory_analysis().temp_size_in_bytes``): what f makes in between, which inputs and
    outputs alone do not show (an outer product inside f). On the devices where they have
    memory of their own, else in the one pool."""
    return Need(need.total + temp, need.host, need.device + temp)


# ---------------------------------------------------------------- from a compiled program
@dataclass(frozen=True)
class Footprint:
    """What XLA planned for ONE device while a compiled program runs, from its
    ``memory_analysis()``: the argument buffers, the output buffers, the scratch memory
    (temporaries) and the outputs that reuse (alias) a donated argument's buffer.

    For a pmap executable the figures are per device. Measured on CPU (JAX 0.10.2, 8 emulated
    devices), a pmapped collective over an (n, m) float32 input: ``argument_size_in_bytes`` is
    4 m (one device's block, not the n m of the whole input) for n = 1, 2 and 8;
    ``output_size_in_bytes`` 4 m for psum and ppermute, 4 n m for all_gather (tiled or not);
    ``temp_size_in_bytes`` 0 except all_to_all (about 7.5 MB at n = 8, m = 1,000,000). The
    whole program holds n times each figure. A jit executable on one device reports that one
    device's buffers, i.e. everything."""

    arguments: int
    outputs: int
    temporaries: int
    aliased: int = 0

    @property
    def held(self) -> int:
        """Arguments and outputs: buffers alive for as long as the caller keeps them."""
        return max(0, self.arguments + self.outputs - self.aliased)


def footprint(executable) -> Footprint | None:
    """The ``memory_analysis()`` of a compiled (never run) executable, or None where the
    backend gives none."""
    try:
        stats = executable.memory_analysis()
    except Exception:  # noqa: BLE001 - a backend without the analysis: no figure, not a crash
        return None
    if stats is None:
        return None

    def get(name: str) -> int:
        return max(0, int(getattr(stats, name, 0) or 0))

    return Footprint(
        get("argument_size_in_bytes"),
        get("output_size_in_bytes"),
        get("temp_size_in_bytes"),
        get("alias_size_in_bytes"),
    )


def compiled_need(runs, host: int = 0, overhead: int = OVERHEAD) -> Need | None:
    """The Need of compiled executables run one after the other, each ``(executable,
    devices)`` (a pmap executable's figures are per device: times its devices), read before
    any input exists: every program's arguments and outputs (the caller keeps them), plus the
    largest program's temporaries (they live only while it runs), on the devices; plus
    ``host`` bytes of host copies (inputs made on the host, results read back, numpy's
    reference) and a fixed ``overhead`` for the runtime. None when no executable has an
    analysis (keep the formula then)."""
    prints = [
        (fp, max(1, int(d))) for fp, d in ((footprint(ex), d) for ex, d in runs) if fp is not None
    ]
    if not prints:
        return None
    held = sum(d * fp.held for fp, d in prints)
    temps = max(d * fp.temporaries for fp, d in prints)
    device = held + temps
    return Need(host + device + overhead, host + overhead, device)


def larger(need: Need, other: Need | None) -> Need:
    """Each part the larger of the two (a formula and a compiled program's figure)."""
    if other is None:
        return need
    return Need(
        max(need.total, other.total), max(need.host, other.host), max(need.device, other.device)
    )


def scaled(need: Need, factor: float, fixed: int) -> Need:
    """``need`` at ``factor`` times its size: all but its ``fixed`` runtime part (on the
    host) grows with the data (for "the largest size that fits" from one compiled size)."""

    def grow(nbytes: int, fix: int) -> int:
        return fix + math.ceil(max(0, nbytes - fix) * factor)

    return Need(grow(need.total, fixed), grow(need.host, fixed), grow(need.device, 0))


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
# Measured in fresh processes (tests/core/test_memory.py, benchmarks/memory_model.py), after
# JAX's first-use costs: what the action adds to the RSS, above its data.
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
    """Peak of ``collectiveops.run`` on a program not compiled yet: the input (n, m) and the
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
# A worker (python -m pmapviz.cluster.clusterworker) is a whole Python + JAX process: its peak
# RSS, as it reports it (getrusage maxrss, in its RESULT line), measured 216-220 MiB for 1 to 16
# devices.
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
