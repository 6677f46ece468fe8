"""Data-parallel training: loss falls, replicas stay identical, equal to one-device training."""

import json
import subprocess
import sys

import numpy as np
import pytest

from pmapviz.features.training import trainingmodel as tm
from pmapviz.features.training import trainingrun as tr
from tests.conftest import ROOT, TEST_DEVICES


@pytest.mark.parametrize("model, lr", [("linear", 0.05), ("mlp", 0.1)])
@pytest.mark.parametrize("reduction", ["pmean", "psum"])
def test_loss_falls_replicas_identical_and_equal_to_one_device(model, lr, reduction):
    h = tr.train(tm.Config(model, TEST_DEVICES, 128, 60, lr, reduction))
    assert h.losses[-1] < 0.2 * h.losses[0]
    assert len(h.replica_diffs) == 60 and h.replicas_identical  # checked every step
    # stated tolerance: float32 rounding of differently ordered sums (see the page's text)
    assert h.max_param_diff <= 1e-5
    for a, b in zip(h.losses, h.single_device_losses, strict=True):
        assert a == pytest.approx(b, rel=1e-4, abs=1e-6)


def test_local_values_differ_per_device_but_reduced_gradient_is_shared():
    h = tr.train(tm.Config("mlp", 4, 64, 3, 0.1))
    assert len(set(h.local_losses[0])) == 4  # different shards, different losses
    assert len(set(h.local_grad_norms[0])) == 4
    assert h.reduced_grad_norm[0] < max(h.local_grad_norms[0])


def test_divergence_is_detected_and_stops():
    h = tr.train(tm.Config("linear", 2, 64, 100, 5.0))
    assert h.diverged_at is not None and h.diverged_at < 99
    assert len(h.losses) == h.diverged_at + 1 and h.max_param_diff is None


def test_stop_keeps_the_finished_steps():
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 5

    h = tr.train(tm.Config("linear", 2, 32, 50, 0.05), should_stop=stop)
    assert h.stopped and len(h.losses) == 5


def test_time_per_step_rows():
    rows = tr.time_per_step(tm.Config("linear", 1, 64, 5, 0.05), [1, 2, 4], steps=5)
    assert [r["devices"] for r in rows] == [1, 2, 4] and all(r["step_s_median"] > 0 for r in rows)


def test_cli_train_json():
    cmd = [sys.executable, "-m", "pmapviz", "train", "--devices", "4", "--steps", "30", "--json"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["losses"]) == 30 and len(out["single_device_losses"]) == 30
    assert out["replicas_identical"] is True and out["max_param_diff"] <= 1e-5
    assert out["step_s_median"] > 0


def replicas(per_device):
    """A replicated parameter as train() holds it: a leading device axis, one row per device."""
    import jax

    from pmapviz.core.planning.pmapplacement import pmap_sharding

    a = np.asarray(per_device, np.float32)
    return jax.device_put(a, pmap_sharding(a.ndim, 0, a.shape[0]))


@pytest.mark.parametrize("device", [3, 0, TEST_DEVICES - 1])
def test_replica_spread_reports_a_skewed_replica(device):
    same = np.tile(np.arange(1.0, 7.0).reshape(2, 3), (TEST_DEVICES, 1, 1))
    assert tr.replica_spread({"w": replicas(same)}) == 0.0
    skewed = same.copy()
    skewed[device, 1, 2] += 0.25  # one number on one device differs
    assert tr.replica_spread({"w": replicas(skewed)}) == 0.25
    skewed[device, 0, 0] -= 0.5  # the largest |difference| wins, whatever its sign
    assert tr.replica_spread({"w": replicas(skewed)}) == 0.5


def test_replica_spread_reads_every_leaf():
    same = np.ones((TEST_DEVICES, 4))
    skewed = same.copy()
    skewed[5] = 3.0
    params = {"a": replicas(same), "b": replicas(skewed), "c": replicas(same)}
    assert tr.replica_spread(params) == 2.0
    assert tr.replica_spread([replicas(skewed[:2] * 0 + 1), replicas(skewed[4:6])]) == 2.0
    assert tr.replica_spread({"empty": replicas(np.zeros((TEST_DEVICES, 0)))}) == 0.0


@pytest.mark.parametrize("reduction", ["pmean", "psum"])
def test_gradient_norms_before_and_after_the_all_reduce_match_numpy(reduction):
    """Step 0 of the linear model from zero parameters, by hand in numpy: each device's
    gradient of its own shard, and the all-reduced one (the full batch's gradient)."""
    k, batch = 4, 64
    cfg = tm.Config("linear", k, batch, 1, 0.05, reduction)
    h = tr.train(cfg)
    x, y = (np.asarray(a, np.float64)[:batch] for a in tm.make_data(cfg))

    def grad_norm(xs, ys):  # d/dw, d/db of mean((x @ w + b - y)**2) at w = 0, b = 0
        gw, gb = -2 * xs.T @ ys / len(ys), -2 * ys.mean()
        return float(np.sqrt(gw @ gw + gb * gb))

    lb = batch // k  # device d holds rows d*lb .. (d+1)*lb of the batch
    local = [grad_norm(x[d * lb : (d + 1) * lb], y[d * lb : (d + 1) * lb]) for d in range(k)]
    assert h.local_grad_norms[0] == pytest.approx(local, rel=1e-4)
    assert h.reduced_grad_norm[0] == pytest.approx(grad_norm(x, y), rel=1e-4)
    js = h.to_json()
    assert js["replicas_identical"] is h.replicas_identical is True
    assert js["reduced_grad_norm"] == h.reduced_grad_norm


def test_time_per_step_skips_only_the_counts_that_do_not_divide_the_batch():
    rows = tr.time_per_step(tm.Config("linear", 1, 6, 3, 0.05), [1, 4, 2], steps=3)
    assert [r["devices"] for r in rows] == [1, 2]  # 4 does not divide 6; 2 after it still runs
    assert all(r["step_s_median"] > 0 for r in rows)


# ---------------------------------------------------------------- its memorymodel, compiled first
class _Reserved(Exception):
    """Raised by a spy reserve: the need is recorded and no step runs."""


def _with_a_gram_matrix(cfg):
    """The usual pmapped step, and a one-device step that also makes the (batch, batch) Gram
    matrix of its inputs: scratch memory XLA plans and no formula knows about."""
    import jax
    import jax.numpy as jnp

    pstep, _ = tm.build_steps(cfg)
    loss = tm.loss_fn(cfg.model)

    def single_step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        gram = jnp.sum(jnp.sort(x @ x.T, axis=0)[0])  # sorted: materialised, not fused away
        return jax.tree.map(lambda p, g: p - cfg.lr * g, params, grads), value + 0 * gram

    return pstep, jax.jit(single_step)


def _spy(monkeypatch, seen: list) -> None:
    from pmapviz.core.budgets import memorypool, timebudget

    timebudget.machine_rates()  # the time check's bandwidth probe, measured (and held) first

    def reserve(need, label, on_wait=None, *args, **kwargs):
        seen.append(need)
        raise _Reserved(label)

    monkeypatch.setattr(memorypool, "reserve", reserve)


@pytest.mark.parametrize("model", tm.MODELS)
def test_training_reserves_what_its_compiled_steps_hold_before_any_data_exists(monkeypatch, model):
    from pmapviz.core.budgets import compiledmemory, memoryestimates

    seen, made = [], []
    _spy(monkeypatch, seen)
    monkeypatch.setattr(tm, "make_data", lambda *a, **k: made.append(a))
    cfg = tm.Config(model, 4, 65536, 2)
    with pytest.raises(_Reserved):
        tr.train(cfg)
    (need,) = seen
    assert not made  # reserved before the data is made
    pstep, sstep = tr.compile_steps(cfg, *tm.build_steps(cfg))
    p, s = compiledmemory.footprint(pstep), compiledmemory.footprint(sstep)
    on_devices = 4 * p.held + s.held + max(4 * p.temporaries, s.temporaries)
    assert need.device >= on_devices > 0 and need.total >= on_devices
    assert need.total >= memoryestimates.training_bytes(model, cfg.batch).total


def test_scratch_only_the_compiled_step_shows_is_reserved_or_refused(monkeypatch):
    """A one-device step with a (4096, 4096) float32 Gram matrix: 64 MB of scratch that the
    formula (9 MB) misses. Reserved; over a 40 MB budget, refused with the batch that fits."""
    from pmapviz.core.budgets import compiledmemory, memoryestimates, memorymodel, memorypool

    seen: list = []
    _spy(monkeypatch, seen)
    cfg = tm.Config("linear", 4, 4096, 2)
    gram = 4096 * 4096 * 4
    _, sstep = tr.compile_steps(cfg, *_with_a_gram_matrix(cfg))
    assert compiledmemory.footprint(sstep).temporaries >= gram
    with pytest.raises(_Reserved):
        tr.train(cfg, steps_fn=_with_a_gram_matrix)
    (need,) = seen
    assert memoryestimates.training_bytes("linear", 4096).total < gram <= need.device <= need.total
    budget = memorymodel.Budget(40 * 10**6)
    monkeypatch.setattr(memorypool, "budget", lambda name=None: budget)
    with pytest.raises(tm.TrainError, match="largest global batch that fits is") as e:
        tr.train(cfg, steps_fn=_with_a_gram_matrix)
    assert isinstance(e.value, memorymodel.BudgetError)  # the pages' queue shows it as one
    fit = int(str(e.value).split("fits is ")[1].rstrip(".").replace(",", ""))
    assert 0 < fit < 4096 and fit % 4 == 0 and len(seen) == 1  # refused before it queued
