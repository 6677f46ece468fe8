"""Data-parallel training's model and settings: the settings of a run (``Config``) and their
checks (the rules, the time and memory budgets), the synthetic data and starting parameters,
the loss, and the per-device step with its all-reduce (``lax.pmean``, or ``lax.psum`` then
divide) that :mod:`pmapviz.features.training.trainingrun` runs; the step as code to show, the
set-up as a picture, and the Training page's settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.core.base import settings
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool, timebudget
from pmapviz.core.devices import devicefacts
from pmapviz.core.pods import podtarget

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


def step_cost(cfg: Config) -> timebudget.StepCost:
    """What one step of ``cfg`` costs: FLOPs (forward and backward, data-parallel and one
    device) and bytes (the batch placed twice, read once)."""
    params = (
        FEATURES + 1 if cfg.model == "linear" else (FEATURES + 1) * HIDDEN + (HIDDEN + 1) * CLASSES
    )
    return timebudget.StepCost(
        flops=2 * 6 * cfg.batch * params,
        nbytes=3 * cfg.batch * (FEATURES + 1) * 4,
        devices=cfg.devices,
    )


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
    local_norm = global_norm(grads)            # differs from device to device
    {reduce}  # all-reduce: equal everywhere
    params = jax.tree.map(lambda p, g: p - {cfg.lr} * g, params, grads)
    return params, loss, local_norm, global_norm(grads)  # the norms: the page's check

# parameters pre-replicated: a leading axis of {cfg.devices}, one copy per device
params = jax.tree.map(lambda p: jnp.stack([p] * {cfg.devices}), params)
step = jax.pmap(train_step, axis_name='batch', in_axes=(0, 0, 0))
for x, y in batches:                          # global batch of {cfg.batch:,}
    x = x.reshape({cfg.devices}, {cfg.local_batch}, -1)  # {cfg.devices} shards
    y = y.reshape({cfg.devices}, {cfg.local_batch})
    params, loss, *norms = step(params, x, y)  # loss: one value per device
"""


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


# ---------------------------------------------------------------- the page's URL state
def schema(n_devices: int) -> settings.Schema:
    """The Training page's settings: model, k (devices), batch, steps, lr, red, and pod (empty:
    this machine, else a TPU slice, or several, one step is compiled for)."""
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
            podtarget.pod_field(multislice=True),
        )
    )
