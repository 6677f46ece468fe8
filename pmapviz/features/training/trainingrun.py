"""Data-parallel training with pmap: each device gets a shard of the batch and a replica of the
parameters, computes its gradients, and a collective (``lax.pmean``, or ``lax.psum`` then divide)
makes every device apply the same update. Checked every step: all replicas identical. Checked at the
end: the same model trained on one device with the same global batch ends at the same parameters, up
to float rounding.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from pmapviz.core.budgets import compiledmemory, memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import devicefacts, jaxstartup
from pmapviz.core.planning.arrayshards import shards_of
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.features.training import trainingmodel
from pmapviz.features.training.trainingmodel import Config, TrainBudgetError


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


def train(
    cfg: Config,
    progress: Callable[[History, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    steps_fn: Callable[[Config], tuple] = trainingmodel.build_steps,
    time_limit: float | None = None,
    on_wait=None,
) -> History:
    """Train data-parallel and on one device, step by step (see the module doc). The two
    steps (``steps_fn``: pmapped, one-device) are compiled first, from shapes alone; what
    they will hold (:func:`run_need`) is refused when it could never fit
    (TrainBudgetError, naming the largest batch that fits), else held in the server's
    memory budget (waiting in the queue, ``on_wait``, while others hold it)."""

    trainingmodel.validate(cfg, devicefacts.facts().local_count, time_limit)
    trainingmodel.check_budget(cfg)
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

    k, lb, features = cfg.devices, cfg.local_batch, trainingmodel.FEATURES
    y_dtype = np.int32 if cfg.model == "mlp" else np.float32  # make_data's labels

    def like(shape, dtype, sharding):
        return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=sharding)

    params = trainingmodel.init_params(cfg)  # a few hundred numbers: only their shapes are used
    rep = jax.tree.map(
        lambda p: like((k, *p.shape), p.dtype, pmap_sharding(p.ndim + 1, 0, k)), params
    )
    xs = like((k, lb, features), np.float32, pmap_sharding(3, 0, k))
    ys = like((k, lb), y_dtype, pmap_sharding(2, 0, k))
    dev0 = jax.sharding.SingleDeviceSharding(devicefacts.local_devices_for_work()[0])
    single = jax.tree.map(lambda p: like(p.shape, p.dtype, dev0), params)
    xb, yb = like((cfg.batch, features), np.float32, dev0), like((cfg.batch,), y_dtype, dev0)
    return pstep.lower(rep, xs, ys).compile(), sstep.lower(single, xb, yb).compile()


def run_need(cfg: Config, pstep, sstep) -> memorymodel.Need:
    """What training holds at its peak: the larger of the formula
    (``memoryestimates.training_bytes``) and the compiled steps' ``memory_analysis()``
    (``compiledmemory.compiled_need``): the pmapped step's arguments and outputs on every
    device (its figures are per device) and the one-device step's, plus the larger of their
    temporaries (the activations and gradients; the steps run one after the other), on the
    devices; the data made on the host (``make_data``: x and y); the model's fixed runtime
    part."""
    host = max(trainingmodel.SAMPLES, cfg.batch) * (trainingmodel.FEATURES + 1) * 4
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
    x_all, y_all = trainingmodel.make_data(cfg)
    params0 = trainingmodel.init_params(cfg)
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
