"""Data-parallel training with pmap: each device gets a shard of the batch and a replica of the
parameters, computes its gradients, and a collective (``lax.pmean``, or ``lax.psum`` then divide)
makes every device apply the same update. Checked every step: all replicas identical. Checked at
the end: the same model trained on one device with the same global batch ends at the same
parameters, up to float rounding.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from pmapviz.core.base import settings
from pmapviz.core.budgets import (
    compiledmemory,
    memoryestimates,
    memorymodel,
    memorypool,
    timebudget,
)
from pmapviz.core.devices import devicefacts, jaxstartup
from pmapviz.core.planning.arrayshards import shards_of
from pmapviz.core.planning.pmapplacement import pmap_sharding

MODELS = ("linear", "mlp")
REDUCTIONS = ("pmean", "psum")
MAX_STEPS = 2000
MAX_BATCH = 65536
AXIS = "batch"
FEATURES = 8
HIDDEN = 32
CLASSES = 3


class TrainError(ValueError):
    """Settings training cannot run with; the message says what to use instead."""


class TrainBudgetError(TrainError, memorymodel.BudgetError):
    """Training whose compiled steps could never fit the memory budget; the message names the
    largest global batch that fits (a TrainError for the CLI, a BudgetError for the pages)."""


@dataclass(frozen=True)
class Config:
    """The settings of one training run: model, devices, global batch, steps, learning rate,
    reduction and seed."""

    model: str = "linear"
    devices: int = 8
    batch: int = 256  # global batch, split over the devices
    steps: int = 100
    lr: float = 0.05
    reduction: str = "pmean"
    seed: int = 0

    @property
    def local_batch(self) -> int:
        """Examples each device gets per step: the global batch over the devices."""
        return self.batch // self.devices


def step_cost(cfg: Config) -> timebudget.Step:
    """What one step of ``cfg`` costs: FLOPs (forward and backward, data-parallel and one
    device) and bytes (the batch placed twice, read once)."""
    params = (
        FEATURES + 1 if cfg.model == "linear" else (FEATURES + 1) * HIDDEN + (HIDDEN + 1) * CLASSES
    )
    return timebudget.Step(
        flops=2 * 6 * cfg.batch * params,
        nbytes=3 * cfg.batch * (FEATURES + 1) * 4,
        devices=cfg.devices,
    )


@dataclass
class History:
    """What a training run recorded step by step (losses, gradient norms, replica differences,
    times) and how it ended."""

    config: Config
    losses: list[float] = field(default_factory=list)  # global (mean of local) per step
    single_device_losses: list[float] = field(default_factory=list)
    local_losses: list[list[float]] = field(default_factory=list)  # per step, per device
    local_grad_norms: list[list[float]] = field(default_factory=list)  # before the all-reduce
    reduced_grad_norm: list[float] = field(default_factory=list)  # after it, same everywhere
    replica_diffs: list[float] = field(default_factory=list)  # max |params_d - params_0|
    step_s: list[float] = field(default_factory=list)
    max_param_diff: float | None = None  # data-parallel vs single device, at the end
    diverged_at: int | None = None
    stopped: bool = False

    @property
    def replicas_identical(self) -> bool:
        """Whether every device's parameters were the same after every step."""
        return all(d == 0.0 for d in self.replica_diffs)

    def to_json(self) -> dict:
        """The history and its config as JSON, with the median step time added."""
        out = asdict(self)
        out["config"] = asdict(self.config)
        out["replicas_identical"] = self.replicas_identical
        out["step_s_median"] = statistics.median(self.step_s) if self.step_s else None
        return out


def validate(cfg: Config, n_available: int, time_limit: float | None = None) -> None:
    """Raise TrainError with the fix for settings that cannot run, including a run estimated
    to take longer than ``time_limit`` seconds (default: the operator's limit)."""
    if cfg.model not in MODELS:
        raise TrainError(f"Unknown model {cfg.model!r}; choose {', '.join(MODELS)}.")
    if cfg.reduction not in REDUCTIONS:
        raise TrainError(f"Unknown reduction {cfg.reduction!r}; choose {', '.join(REDUCTIONS)}.")
    if not 1 <= cfg.devices <= n_available:
        raise TrainError(f"Use 1 to {n_available} devices (this server has {n_available}).")
    if not 1 <= cfg.steps <= MAX_STEPS:
        raise TrainError(f"Use 1 to {MAX_STEPS:,} steps.")
    if not cfg.devices <= cfg.batch <= MAX_BATCH:
        raise TrainError(
            f"The global batch must be from {cfg.devices} (one example per device) to "
            f"{MAX_BATCH:,}; got {cfg.batch:,}."
        )
    if cfg.batch % cfg.devices:
        lo = cfg.batch - cfg.batch % cfg.devices
        hi = lo + cfg.devices
        options = " or ".join(f"{v:,}" for v in (lo, hi) if v >= cfg.devices)
        raise TrainError(
            f"A global batch of {cfg.batch:,} does not split evenly over {cfg.devices} devices "
            f"(each device must get the same number of examples). Use {options}."
        )
    if not (np.isfinite(cfg.lr) and 0 < cfg.lr <= 100):
        raise TrainError("The learning rate must be a number above 0 and at most 100.")
    try:
        timebudget.check_training(cfg.steps, step_cost(cfg), time_limit)
    except timebudget.TooLong as err:
        raise TrainError(str(err)) from err


def check_budget(cfg: Config, budget: int | memorymodel.Budget | None = None) -> None:
    """Refuse settings whose peak (:func:`pmapviz.core.budgets.memoryestimates.training_bytes`)
    exceeds the
    budget."""
    budget = memorypool.budget() if budget is None else memorymodel.Budget.of(budget)
    why = budget.problem(memoryestimates.training_bytes(cfg.model, cfg.batch))
    if why:
        fit = memorymodel.largest_fitting(
            lambda b: memoryestimates.training_bytes(cfg.model, b),
            budget,
            cfg.devices,
            MAX_BATCH,
            cfg.devices,
        )
        raise TrainError(f"Training {why}. The largest global batch that fits is {fit:,}.")


SAMPLES = 4096  # examples make_data makes at least (more when the batch is larger)


def make_data(cfg: Config, n_samples: int = SAMPLES):
    """Synthetic, seeded: a noisy linear target, or three Gaussian blobs for the classifier."""
    rng = np.random.default_rng(cfg.seed)
    n = max(n_samples, cfg.batch)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    if cfg.model == "linear":
        w = rng.standard_normal(FEATURES).astype(np.float32)
        y = (x @ w + 0.5 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    else:
        centres = 2.5 * rng.standard_normal((CLASSES, FEATURES)).astype(np.float32)
        y = rng.integers(0, CLASSES, n).astype(np.int32)
        x = x + centres[y]
    return x, y


def init_params(cfg: Config) -> dict:
    """The model's starting parameters (seeded), as numpy arrays by name."""
    rng = np.random.default_rng(cfg.seed + 1)
    if cfg.model == "linear":
        return {"w": np.zeros(FEATURES, np.float32), "b": np.zeros((), np.float32)}
    return {
        "w1": (rng.standard_normal((FEATURES, HIDDEN)) / np.sqrt(FEATURES)).astype(np.float32),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": (rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32),
        "b2": np.zeros(CLASSES, np.float32),
    }


def loss_fn(model: str) -> Callable:
    """The loss of ``model`` as f(params, x, y): mean squared error or cross-entropy."""
    import jax
    import jax.numpy as jnp

    if model == "linear":
        return lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    def xent(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    return xent


def _global_norm(tree) -> object:
    import jax
    import jax.numpy as jnp

    return jnp.sqrt(sum(jnp.sum(g.astype(jnp.float32) ** 2) for g in jax.tree.leaves(tree)))


def dp_step_fn(cfg: Config) -> Callable:
    """The per-device data-parallel step (what pmap maps), with its all-reduce."""
    import jax
    from jax import lax

    loss = loss_fn(cfg.model)
    k = cfg.devices

    def dp_step(params, x, y):
        local_loss, grads = jax.value_and_grad(loss)(params, x, y)
        local_norm = _global_norm(grads)
        if cfg.reduction == "pmean":
            grads = lax.pmean(grads, AXIS)
        else:
            grads = jax.tree.map(lambda g: lax.psum(g, AXIS) / k, grads)
        new = jax.tree.map(lambda p, g: p - cfg.lr * g, params, grads)
        return new, local_loss, local_norm, _global_norm(grads)

    return dp_step


def build_steps(cfg: Config):
    """(pmapped data-parallel step, jitted single-device step) for this config."""
    import jax

    loss = loss_fn(cfg.model)

    def single_step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - cfg.lr * g, params, grads), value

    pstep = jax.pmap(
        dp_step_fn(cfg),
        axis_name=AXIS,
        in_axes=(0, 0, 0),
        devices=devicefacts.local_devices_for_work()[: cfg.devices],
    )
    return pstep, jax.jit(single_step)


def code_for(cfg: Config) -> str:
    """The pmap training step ``cfg`` runs, as Python code to show the user."""
    if cfg.reduction == "pmean":
        reduce = "grads = lax.pmean(grads, 'batch')"
    else:
        reduce = f"grads = jax.tree.map(lambda g: lax.psum(g, 'batch') / {cfg.devices}, grads)"
    return f"""def train_step(params, x, y):         # runs on every device, on its own shard
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)  # local gradients
    {reduce}  # all-reduce: equal everywhere
    params = jax.tree.map(lambda p, g: p - {cfg.lr} * g, params, grads)
    return params, loss

# parameters pre-replicated: a leading axis of {cfg.devices}, one copy per device
params = jax.tree.map(lambda p: jnp.stack([p] * {cfg.devices}), params)
step = jax.pmap(train_step, axis_name='batch', in_axes=(0, 0, 0))
for x, y in batches:                          # global batch of {cfg.batch:,}
    x = x.reshape({cfg.devices}, {cfg.local_batch}, -1)  # {cfg.devices} shards
    y = y.reshape({cfg.devices}, {cfg.local_batch})
    params, loss = step(params, x, y)         # loss: one value per device
"""


def train(
    cfg: Config,
    progress: Callable[[History, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    steps_fn: Callable[[Config], tuple] = build_steps,
    time_limit: float | None = None,
    on_wait=None,
) -> History:
    """Train data-parallel and on one device, step by step (see the module doc). The two
    steps (``steps_fn``: pmapped, one-device) are compiled first, from shapes alone; what
    they will hold (:func:`run_need`) is refused when it could never fit
    (TrainBudgetError, naming the largest batch that fits), else held in the server's
    memory budget (waiting in the queue, ``on_wait``, while others hold it)."""

    validate(cfg, devicefacts.facts().local_count, time_limit)
    check_budget(cfg)
    pstep, sstep = compile_steps(cfg, *steps_fn(cfg))  # before any data exists
    need = run_need(cfg, pstep, sstep)
    refuse_unfit(cfg, need)
    with memorypool.reserve(need, "training", on_wait, should_stop):
        return _train(cfg, progress, should_stop, pstep, sstep)


def compile_steps(cfg: Config, pstep, sstep) -> tuple:
    """The pmapped step and the one-device step, compiled ahead of time for ``cfg``'s shapes
    from abstract arguments (``jax.ShapeDtypeStruct``): nothing is allocated. Training runs
    these executables, so the steps are compiled once, here."""
    import jax

    k, lb = cfg.devices, cfg.local_batch
    y_dtype = np.int32 if cfg.model == "mlp" else np.float32  # make_data's labels

    def like(shape, dtype, sharding):
        return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=sharding)

    params = init_params(cfg)  # a few hundred numbers: only their shapes are used
    rep = jax.tree.map(
        lambda p: like((k, *p.shape), p.dtype, pmap_sharding(p.ndim + 1, 0, k)), params
    )
    xs = like((k, lb, FEATURES), np.float32, pmap_sharding(3, 0, k))
    ys = like((k, lb), y_dtype, pmap_sharding(2, 0, k))
    dev0 = jax.sharding.SingleDeviceSharding(devicefacts.local_devices_for_work()[0])
    single = jax.tree.map(lambda p: like(p.shape, p.dtype, dev0), params)
    xb, yb = like((cfg.batch, FEATURES), np.float32, dev0), like((cfg.batch,), y_dtype, dev0)
    return pstep.lower(rep, xs, ys).compile(), sstep.lower(single, xb, yb).compile()


def run_need(cfg: Config, pstep, sstep) -> memorymodel.Need:
    """What training holds at its peak: the larger of the formula
    (``memoryestimates.training_bytes``) and the compiled steps' ``memory_analysis()``
    (``compiledmemory.compiled_need``): the pmapped step's arguments and outputs on every
    device (its figures are per device) and the one-device step's, plus the larger of their
    temporaries (the activations and gradients; the steps run one after the other), on the
    devices; the data made on the host (``make_data``: x and y); the model's fixed runtime
    part."""
    host = max(SAMPLES, cfg.batch) * (FEATURES + 1) * 4
    base = memoryestimates.TRAIN_BASE[cfg.model]
    compiled = compiledmemory.compiled_need([(pstep, cfg.devices), (sstep, 1)], host, base)
    return memorymodel.larger(memoryestimates.training_bytes(cfg.model, cfg.batch), compiled)


def refuse_unfit(
    cfg: Config, need: memorymodel.Need, budget: int | memorymodel.Budget | None = None
) -> None:
    """TrainBudgetError, naming the largest global batch that fits, when ``need`` could never
    fit the budget; other batches are ``need`` scaled (all but the runtime part grows with
    the batch), never below the formula."""
    b = memorypool.budget() if budget is None else memorymodel.Budget.of(budget)
    why = b.problem(need)
    if not why:
        return
    base = memoryestimates.TRAIN_BASE[cfg.model]

    def at(batch: int) -> memorymodel.Need:
        return memorymodel.larger(
            memoryestimates.training_bytes(cfg.model, batch),
            memorymodel.scaled(need, batch / cfg.batch, base),
        )

    fit = memorymodel.largest_fitting(at, b, cfg.devices, cfg.batch, cfg.devices)
    raise TrainBudgetError(f"Training {why}. The largest global batch that fits is {fit:,}.")


def _train(cfg: Config, progress, should_stop, pstep, sstep) -> History:
    import jax

    jaxstartup.large_arrays_return_to_the_os()
    k, lb = cfg.devices, cfg.local_batch
    x_all, y_all = make_data(cfg)
    params0 = init_params(cfg)
    # replicas: a leading device axis, placed one copy per device
    rep = jax.tree.map(
        lambda p: jax.device_put(np.stack([p] * k), pmap_sharding(p.ndim + 1, 0, k)), params0
    )
    dev0 = devicefacts.local_devices_for_work()[0]
    single = jax.tree.map(lambda p: jax.device_put(p, dev0), params0)
    hist = History(cfg)
    n = x_all.shape[0]
    for step in range(cfg.steps):
        if should_stop():
            hist.stopped = True
            break
        start = (step * cfg.batch) % (n - cfg.batch + 1)
        xb, yb = x_all[start : start + cfg.batch], y_all[start : start + cfg.batch]
        xs = jax.device_put(xb.reshape(k, lb, -1), pmap_sharding(3, 0, k))
        ys = jax.device_put(yb.reshape(k, lb), pmap_sharding(2, 0, k))
        t = time.perf_counter()
        rep, local_loss, local_norm, red_norm = pstep(rep, xs, ys)
        jax.block_until_ready(rep)
        hist.step_s.append(time.perf_counter() - t)
        single, s_loss = sstep(single, xb, yb)
        ll = np.asarray(local_loss, dtype=np.float64)
        hist.local_losses.append(ll.tolist())
        hist.local_grad_norms.append(np.asarray(local_norm, dtype=np.float64).tolist())
        hist.reduced_grad_norm.append(float(np.asarray(red_norm)[0]))
        hist.losses.append(float(ll.mean()))
        hist.single_device_losses.append(float(s_loss))
        hist.replica_diffs.append(replica_spread(rep))
        if not np.isfinite(ll).all() or not np.isfinite(float(s_loss)):
            hist.diverged_at = step
            break
        if progress:
            progress(hist, step)
    if hist.diverged_at is None and hist.losses:
        hist.max_param_diff = max(
            float(np.abs(np.asarray(r)[0] - np.asarray(s)).max())
            for r, s in zip(jax.tree.leaves(rep), jax.tree.leaves(single), strict=True)
        )
    return hist


def replica_spread(replicated) -> float:
    """max |params on device d - params on device 0| over every leaf, read per shard."""
    import jax

    worst = 0.0
    for leaf in jax.tree.leaves(replicated):
        shards = shards_of(leaf)
        first = shards[0].data
        for s in shards[1:]:
            worst = max(worst, float(np.abs(s.data - first).max(initial=0.0)))
    return worst


def setup_grid(cfg: Config, labels: list[str]) -> tuple[list, str]:
    """(grid rows, what they show) for the picture of the data-parallel set-up, before any
    step: which rows of the batch each device gets, and its copy of the parameters."""
    k, lb = cfg.devices, cfg.local_batch
    rows = [
        ("device", [(labels[d], d, f"{labels[d]}: position {d}") for d in range(k)]),
        (
            "batch shard",
            [
                (
                    f"rows {d * lb}-{(d + 1) * lb - 1}",
                    d,
                    f"device {d} gets {lb} of the {cfg.batch} examples",
                )
                for d in range(k)
            ],
        ),
        (
            "parameters",
            [("a copy", None, "every device holds the same parameters") for _ in range(k)],
        ),
        (
            "gradients",
            [
                (cfg.reduction, None, f"combined over all {k} devices by {cfg.reduction}")
                for _ in range(k)
            ],
        ),
    ]
    label = (
        f"Data-parallel {cfg.model} on {k} devices: the batch of {cfg.batch} split into "
        f"{k} shards of {lb} rows, the parameters copied to every device, the gradients "
        f"combined by {cfg.reduction}"
    )
    return rows, label


def step_label(hist: History) -> str:
    """What the one-step grid shows, for a screen reader (``aria-label``)."""
    c, last = hist.config, len(hist.losses) - 1
    losses = ", ".join(f"{v:.3g}" for v in hist.local_losses[last][:8])
    same = "identical" if hist.replica_diffs[last] == 0 else "different"
    return (
        f"Step {last + 1} on {c.devices} devices, {c.local_batch} examples each: local "
        f"losses {losses}; after {c.reduction} every device holds the same gradient, and "
        f"the parameters are {same} on every device"
    )


def time_per_step(cfg: Config, ks: list[int], steps: int = 20, on_wait=None) -> list[dict]:
    """Median seconds per data-parallel step for each device count (same global batch);
    each count's training waits for its share of the memory budget (``on_wait``)."""
    rows = []
    for k in ks:
        if cfg.batch % k:
            continue
        c = Config(cfg.model, k, cfg.batch, steps, cfg.lr, cfg.reduction, cfg.seed)
        h = train(c, on_wait=on_wait)
        rows.append({"devices": k, "step_s_median": statistics.median(h.step_s[2:] or h.step_s)})
    return rows


# ---------------------------------------------------------------- the page's URL state
def schema(n_devices: int) -> settings.Schema:
    """The Training page's settings: model, k (devices), batch, steps, lr, red."""
    s = settings
    batch = 256 if 256 % n_devices == 0 else 32 * n_devices
    return s.Schema(
        (
            s.choice_field("model", "Model", MODELS, "linear"),
            s.choice_field(
                "k", "Devices", tuple(str(k) for k in range(1, n_devices + 1)), str(n_devices)
            ),
            s.int_field("batch", "Global batch", 1, MAX_BATCH, batch),
            s.int_field("steps", "Steps", 1, MAX_STEPS, 100),
            s.float_field("lr", "Learning rate", 1e-6, 100.0, "0.05"),
            s.choice_field("red", "Reduction", REDUCTIONS, "pmean"),
        )
    )
