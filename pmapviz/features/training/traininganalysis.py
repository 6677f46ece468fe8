"""The data-parallel training step as a compiled program: its target for
:func:`pmapviz.core.running.programanalysis.analyse` (the Compiled page's third source)."""

from __future__ import annotations

import functools

from pmapviz.core.running.programanalysis import Analysis, Target, analyse
from pmapviz.features.training import trainingmodel
from pmapviz.features.training.trainingmodel import Config


def training_target(cfg: Config) -> Target:
    """One data-parallel training step (:mod:`pmapviz.features.training.trainingmodel`) on
    cfg.devices devices."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    k, lb = cfg.devices, cfg.local_batch
    params = jax.tree.map(
        lambda p: jax.ShapeDtypeStruct((k, *p.shape), p.dtype), trainingmodel.init_params(cfg)
    )
    ydt = jnp.float32 if cfg.model == "linear" else jnp.int32
    x = jax.ShapeDtypeStruct((k, lb, trainingmodel.FEATURES), np.float32)
    y = jax.ShapeDtypeStruct((k, lb), ydt)
    return Target(
        f"training step ({cfg.model}, {cfg.reduction})",
        trainingmodel.code_for(cfg),
        trainingmodel.dp_step_fn(cfg),
        (params, x, y),
        (0, 0, 0),
        0,
        trainingmodel.AXIS,
        k,
    )


@functools.lru_cache(maxsize=16)
def analyse_training(cfg: Config) -> Analysis:
    """The training step of ``cfg``, compiled and read; cached by config."""
    return analyse(training_target(cfg))
