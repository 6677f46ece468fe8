"""Data-parallel training: loss falls, replicas stay identical, equal to one-device training."""

import json
import subprocess
import sys

import numpy as np
import pytest

from pmapviz.features.training import trainingrun as tr
from tests.conftest import ROOT, TEST_DEVICES


@pytest.mark.parametrize("model, lr", [("linear", 0.05), ("mlp", 0.1)])
@pytest.mark.parametrize("reduction", ["pmean", "psum"])
def test_loss_falls_replicas_identical_and_equal_to_one_device(model, lr, reduction):
    h = tr.train(tr.Config(model, TEST_DEVICES, 128, 60, lr, reduction))
    assert h.losses[-1] < 0.2 * h.losses[0]
    assert len(h.replica_diffs) == 60 and h.replicas_identical  # checked every step
    # stated tolerance: float32 rounding of differently ordered sums (see the page's text)
    assert h.max_param_diff <= 1e-5
    for a, b in zip(h.losses, h.single_device_losses, strict=True):
        assert a == pytest.approx(b, rel=1e-4, abs=1e-6)


def test_local_values_differ_per_device_but_reduced_gradient_is_shared():
    h = tr.train(tr.Config("mlp", 4, 64, 3, 0.1))
    assert len(set(h.local_losses[0])) == 4  # different shards, different losses
    assert len(set(h.local_grad_norms[0])) == 4
    assert h.reduced_grad_norm[0] < max(h.local_grad_norms[0])


def test_divergence_is_detected_and_stops():
    h = tr.train(tr.Config("linear", 2, 64, 100, 5.0))
    assert h.diverged_at is not None and h.diverged_at < 99
    assert len(h.losses) == h.diverged_at + 1 and h.max_param_diff is None


@pytest.mark.parametrize(
    "cfg, words",
    [
        (tr.Config(batch=100, devices=8), "Use 96 or 104"),
        (tr.Config(batch=4, devices=8), "from 8"),
        (tr.Config(steps=0), "1 to 2,000"),
        (tr.Config(lr=-1), "above 0"),
        (tr.Config(lr=float("nan")), "above 0"),
        (tr.Config(devices=99), "Use 1 to"),
        (tr.Config(batch=10**9), "65,536"),
        (tr.Config(model="gpt"), "Unknown model"),
    ],
)
def test_bad_settings_are_explained(cfg, words):
    with pytest.raises(tr.TrainError, match=words):
        tr.validate(cfg, TEST_DEVICES)


def test_stop_keeps_the_finished_steps():
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 5

    h = tr.train(tr.Config("linear", 2, 32, 50, 0.05), should_stop=stop)
    assert h.stopped and len(h.losses) == 5


def test_time_per_step_rows():
    rows = tr.time_per_step(tr.Config("linear", 1, 64, 5, 0.05), [1, 2, 4], steps=5)
    assert [r["devices"] for r in rows] == [1, 2, 4] and all(r["step_s_median"] > 0 for r in rows)


def test_code_shows_the_reduction():
    assert "lax.pmean(grads, 'batch')" in tr.code_for(tr.Config(reduction="pmean"))
    assert "lax.psum(g, 'batch') / 4" in tr.code_for(tr.Config(devices=4, reduction="psum"))


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


BIG = 1e12  # a time limit nothing reaches: these tests are about the other rules


@pytest.mark.parametrize(
    "cfg",
    [
        tr.Config(devices=1, batch=1, steps=1),
        tr.Config(devices=8, batch=8),
        tr.Config(batch=tr.MAX_BATCH, steps=tr.MAX_STEPS),
        tr.Config(lr=100.0),
        tr.Config(lr=1e-9),
        tr.Config("mlp", reduction="psum"),
    ],
)
def test_settings_at_the_edges_are_accepted(cfg):
    tr.validate(cfg, TEST_DEVICES, time_limit=BIG)


@pytest.mark.parametrize(
    "cfg, message",
    [
        (tr.Config(reduction="sum"), "Unknown reduction 'sum'; choose pmean, psum."),
        (tr.Config(model="gpt"), "Unknown model 'gpt'; choose linear, mlp."),
        (tr.Config(devices=0), "Use 1 to 8 devices (this server has 8)."),
        (tr.Config(devices=9, batch=72), "Use 1 to 8 devices (this server has 8)."),
        (tr.Config(steps=tr.MAX_STEPS + 1), "Use 1 to 2,000 steps."),
        (
            tr.Config(batch=tr.MAX_BATCH + 8),
            "The global batch must be from 8 (one example per device) to 65,536; got 65,544.",
        ),
        (
            tr.Config(batch=7),
            "The global batch must be from 8 (one example per device) to 65,536; got 7.",
        ),
        (
            tr.Config(batch=9),
            "A global batch of 9 does not split evenly over 8 devices (each device "
            "must get the same number of examples). Use 8 or 16.",
        ),
        (
            tr.Config(devices=3, batch=3001),
            "A global batch of 3,001 does not split evenly over 3 "
            "devices (each device must get the same number of examples). Use 3,000 or 3,003.",
        ),
        (tr.Config(lr=100.001), "The learning rate must be a number above 0 and at most 100."),
        (tr.Config(lr=0.0), "The learning rate must be a number above 0 and at most 100."),
        (tr.Config(lr=float("inf")), "The learning rate must be a number above 0 and at most 100."),
    ],
)
def test_settings_just_past_the_edges_are_refused_with_the_fix(cfg, message):
    with pytest.raises(tr.TrainError) as err:
        tr.validate(cfg, TEST_DEVICES, time_limit=BIG)
    assert str(err.value) == message


def test_a_run_over_the_time_limit_is_refused_with_the_steps_that_fit():
    with pytest.raises(tr.TrainError, match="steps would take about"):
        tr.validate(tr.Config(batch=tr.MAX_BATCH, steps=tr.MAX_STEPS), TEST_DEVICES, 1.0)


@pytest.mark.parametrize("reduction", ["pmean", "psum"])
def test_gradient_norms_before_and_after_the_all_reduce_match_numpy(reduction):
    """Step 0 of the linear model from zero parameters, by hand in numpy: each device's
    gradient of its own shard, and the all-reduced one (the full batch's gradient)."""
    k, batch = 4, 64
    cfg = tr.Config("linear", k, batch, 1, 0.05, reduction)
    h = tr.train(cfg)
    x, y = (np.asarray(a, np.float64)[:batch] for a in tr.make_data(cfg))

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


def test_linear_data_has_its_stated_noise():
    """y = x @ w + 0.5 + noise of standard deviation 0.1, per sample: a least-squares fit
    leaves residuals of about that size (a noise shared by all samples would leave none)."""
    x, y = tr.make_data(tr.Config("linear", 1, 64))
    a = np.hstack([x, np.ones((len(x), 1), np.float32)]).astype(np.float64)
    coef, *_ = np.linalg.lstsq(a, y.astype(np.float64), rcond=None)
    assert 0.08 < float(np.std(y - a @ coef)) < 0.12
    assert coef[-1] == pytest.approx(0.5, abs=0.02)


def test_time_per_step_skips_only_the_counts_that_do_not_divide_the_batch():
    rows = tr.time_per_step(tr.Config("linear", 1, 6, 3, 0.05), [1, 4, 2], steps=3)
    assert [r["devices"] for r in rows] == [1, 2]  # 4 does not divide 6; 2 after it still runs
    assert all(r["step_s_median"] > 0 for r in rows)


def test_the_setup_picture_splits_the_batch_and_copies_the_parameters():
    cfg = tr.Config("linear", 4, 64, 10)
    rows, label = tr.setup_grid(cfg, ["a", "b", "c", "d"])
    assert [r[0] for r in rows] == ["device", "batch shard", "parameters", "gradients"]
    assert [c[0] for c in rows[1][1]] == ["rows 0-15", "rows 16-31", "rows 32-47", "rows 48-63"]
    assert all(len(cells) == 4 for _, cells in rows)
    assert "batch of 64 split into 4 shards of 16 rows" in label and "pmean" in label


# ---------------------------------------------------------------- its memorymodel, compiled first
class _Reserved(Exception):
    """Raised by a spy reserve: the need is recorded and no step runs."""


def _with_a_gram_matrix(cfg):
    """The usual pmapped step, and a one-device step that also makes the (batch, batch) Gram
    matrix of its inputs: scratch memory XLA plans and no formula knows about."""
    import jax
    import jax.numpy as jnp

    pstep, _ = tr.build_steps(cfg)
    loss = tr.loss_fn(cfg.model)

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


@pytest.mark.parametrize("model", tr.MODELS)
def test_training_reserves_what_its_compiled_steps_hold_before_any_data_exists(monkeypatch, model):
    from pmapviz.core.budgets import compiledmemory, memoryestimates

    seen, made = [], []
    _spy(monkeypatch, seen)
    monkeypatch.setattr(tr, "make_data", lambda *a, **k: made.append(a))
    cfg = tr.Config(model, 4, 65536, 2)
    with pytest.raises(_Reserved):
        tr.train(cfg)
    (need,) = seen
    assert not made  # reserved before the data is made
    pstep, sstep = tr.compile_steps(cfg, *tr.build_steps(cfg))
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
    cfg = tr.Config("linear", 4, 4096, 2)
    gram = 4096 * 4096 * 4
    _, sstep = tr.compile_steps(cfg, *_with_a_gram_matrix(cfg))
    assert compiledmemory.footprint(sstep).temporaries >= gram
    with pytest.raises(_Reserved):
        tr.train(cfg, steps_fn=_with_a_gram_matrix)
    (need,) = seen
    assert memoryestimates.training_bytes("linear", 4096).total < gram <= need.device <= need.total
    budget = memorymodel.Budget(40 * 10**6)
    monkeypatch.setattr(memorypool, "budget", lambda name=None: budget)
    with pytest.raises(tr.TrainError, match="largest global batch that fits is") as e:
        tr.train(cfg, steps_fn=_with_a_gram_matrix)
    assert isinstance(e.value, memorymodel.BudgetError)  # the pages' queue shows it as one
    fit = int(str(e.value).split("fits is ")[1].rstrip(".").replace(",", ""))
    assert 0 < fit < 4096 and fit % 4 == 0 and len(seen) == 1  # refused before it queued
