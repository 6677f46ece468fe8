"""The data-parallel training step compiled: one all-reduce of the gradients, from the line that
asks for it."""

from pmapviz.core.running import programanalysis
from pmapviz.features.training import traininganalysis, trainingmodel


def test_training_step_all_reduces_the_gradients():
    a = programanalysis.analyse(
        traininganalysis.training_target(trainingmodel.Config(devices=4, batch=16)), False
    )
    (row,) = a.rows
    assert row.hlo.kind == "all-reduce" and row.hlo.replica_groups == ((0, 1, 2, 3),)
    assert row.hlo.bytes == (trainingmodel.FEATURES + 1) * 4  # grads of w and b, in one all-reduce
    assert "pmapviz/features/training/trainingmodel.py:" in row.hlo.source_line


def test_the_analysis_is_cached_by_config():
    cfg = trainingmodel.Config(devices=2, batch=8)
    a = traininganalysis.analyse_training(cfg)
    assert traininganalysis.analyse_training(cfg) is a and a.target.n == 2
