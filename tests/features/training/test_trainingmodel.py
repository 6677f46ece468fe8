"""Data-parallel training's settings and model: bad settings refused with the fix, the step's
code, the synthetic data, the set-up picture."""

import numpy as np
import pytest

from pmapviz.features.training import trainingmodel as tm
from tests.conftest import TEST_DEVICES


@pytest.mark.parametrize(
    "cfg, words",
    [
        (tm.Config(batch=100, devices=8), "Use 96 or 104"),
        (tm.Config(batch=4, devices=8), "from 8"),
        (tm.Config(steps=0), "1 to 2,000"),
        (tm.Config(lr=-1), "above 0"),
        (tm.Config(lr=float("nan")), "above 0"),
        (tm.Config(devices=99), "Use 1 to"),
        (tm.Config(batch=10**9), "65,536"),
        (tm.Config(model="gpt"), "Unknown model"),
    ],
)
def test_bad_settings_are_explained(cfg, words):
    with pytest.raises(tm.TrainError, match=words):
        tm.validate(cfg, TEST_DEVICES)


def test_code_shows_the_reduction():
    assert "lax.pmean(grads, 'batch')" in tm.code_for(tm.Config(reduction="pmean"))
    assert "lax.psum(g, 'batch') / 4" in tm.code_for(tm.Config(devices=4, reduction="psum"))


@pytest.mark.parametrize("model", tm.MODELS)
def test_the_code_shown_returns_what_the_compiled_step_returns(model):
    """The step the page shows returns as many values as the step it compiles (the page's
    gradient norms included), each a pytree of the same kind."""
    import jax

    from pmapviz.features.training import traininganalysis

    cfg = tm.Config(model, 2, 64)
    target = traininganalysis.training_target(cfg)
    out = jax.eval_shape(jax.vmap(tm.dp_step_fn(cfg), axis_name=tm.AXIS), *target.args)
    (line,) = [t for t in tm.code_for(cfg).splitlines() if t.strip().startswith("return ")]
    shown = line.split("#")[0].replace("return", "").split(",")
    assert len(shown) == len(out) == 4, line
    assert jax.tree.structure(out[0]) == jax.tree.structure(tm.init_params(cfg))  # params


BIG = 1e12  # a time limit nothing reaches: these tests are about the other rules


@pytest.mark.parametrize(
    "cfg",
    [
        tm.Config(devices=1, batch=1, steps=1),
        tm.Config(devices=8, batch=8),
        tm.Config(batch=tm.MAX_BATCH, steps=tm.MAX_STEPS),
        tm.Config(lr=100.0),
        tm.Config(lr=1e-9),
        tm.Config("mlp", reduction="psum"),
    ],
)
def test_settings_at_the_edges_are_accepted(cfg):
    tm.validate(cfg, TEST_DEVICES, time_limit=BIG)


@pytest.mark.parametrize(
    "cfg, message",
    [
        (tm.Config(reduction="sum"), "Unknown reduction 'sum'; choose pmean, psum."),
        (tm.Config(model="gpt"), "Unknown model 'gpt'; choose linear, mlp."),
        (tm.Config(devices=0), "Use 1 to 8 devices (this server has 8)."),
        (tm.Config(devices=9, batch=72), "Use 1 to 8 devices (this server has 8)."),
        (tm.Config(steps=tm.MAX_STEPS + 1), "Use 1 to 2,000 steps."),
        (
            tm.Config(batch=tm.MAX_BATCH + 8),
            "The global batch must be from 8 (one example per device) to 65,536; got 65,544.",
        ),
        (
            tm.Config(batch=7),
            "The global batch must be from 8 (one example per device) to 65,536; got 7.",
        ),
        (
            tm.Config(batch=9),
            "A global batch of 9 does not split evenly over 8 devices (each device "
            "must get the same number of examples). Use 8 or 16.",
        ),
        (
            tm.Config(devices=3, batch=3001),
            "A global batch of 3,001 does not split evenly over 3 "
            "devices (each device must get the same number of examples). Use 3,000 or 3,003.",
        ),
        (tm.Config(lr=100.001), "The learning rate must be a number above 0 and at most 100."),
        (tm.Config(lr=0.0), "The learning rate must be a number above 0 and at most 100."),
        (tm.Config(lr=float("inf")), "The learning rate must be a number above 0 and at most 100."),
    ],
)
def test_settings_just_past_the_edges_are_refused_with_the_fix(cfg, message):
    with pytest.raises(tm.TrainError) as err:
        tm.validate(cfg, TEST_DEVICES, time_limit=BIG)
    assert str(err.value) == message


def test_a_run_over_the_time_limit_is_refused_with_the_steps_that_fit():
    with pytest.raises(tm.TrainError, match="steps would take about"):
        tm.validate(tm.Config(batch=tm.MAX_BATCH, steps=tm.MAX_STEPS), TEST_DEVICES, 1.0)


def test_linear_data_has_its_stated_noise():
    """y = x @ w + 0.5 + noise of standard deviation 0.1, per sample: a least-squares fit
    leaves residuals of about that size (a noise shared by all samples would leave none)."""
    x, y = tm.make_data(tm.Config("linear", 1, 64))
    a = np.hstack([x, np.ones((len(x), 1), np.float32)]).astype(np.float64)
    coef, *_ = np.linalg.lstsq(a, y.astype(np.float64), rcond=None)
    assert 0.08 < float(np.std(y - a @ coef)) < 0.12
    assert coef[-1] == pytest.approx(0.5, abs=0.02)


def test_the_setup_picture_splits_the_batch_and_copies_the_parameters():
    cfg = tm.Config("linear", 4, 64, 10)
    rows, label = tm.setup_grid(cfg, ["a", "b", "c", "d"])
    assert [r[0] for r in rows] == ["device", "batch shard", "parameters", "gradients"]
    assert [c[0] for c in rows[1][1]] == ["rows 0-15", "rows 16-31", "rows 32-47", "rows 48-63"]
    assert all(len(cells) == 4 for _, cells in rows)
    assert "batch of 64 split into 4 shards of 16 rows" in label and "pmean" in label
