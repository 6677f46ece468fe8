"""A training run's result: the loss, replicas identical, one step device by device."""

from pmapviz.features.training import trainingmodel, trainingrun
from pmapviz.features.training.ui import training_result
from tests.core.ui.conftest import render

LABELS = [f"cpu:{d}" for d in range(8)]


def _history():
    return trainingrun.train(trainingmodel.Config("linear", 4, 32, 3, 0.05))


def test_one_step_device_by_device_each_shard_then_the_same_gradient_everywhere():
    hist = _history()
    rows = dict(training_result.step_rows(hist, LABELS))
    assert list(rows) == [
        "device",
        "batch shard",
        "local loss",
        "local |grad|",
        "after pmean",
        "parameters",
    ]
    assert [text for text, _, _ in rows["batch shard"]] == [
        "rows 0-7",
        "rows 8-15",
        "rows 16-23",
        "rows 24-31",
    ]
    assert len({text for text, _, _ in rows["after pmean"]}) == 1
    assert {text for text, _, _ in rows["parameters"]} == {"identical"}


def _show(hist):
    import streamlit as st

    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.training.ui import training_result

    if hist is not None:
        st.session_state["tr_hist"] = hist
    training_result.show(device_report())


def test_a_run_shows_its_loss_its_verdict_and_its_step_and_no_run_what_to_press():
    at = render(_show, _history())
    assert not at.exception
    assert at.metric[0].value == "3" and "identical at every step" in at.metric[2].delta
    assert any("role='img'" in m.value for m in at.markdown)
    assert at.button(key="tr_time").label == "Measure time per step"
    assert "Press Train" in render(_show, None).info[0].value
