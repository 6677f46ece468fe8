"""A training run's settings, its checked config, and its states."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _run(n):
    import streamlit as st

    from pmapviz.features.training.ui import training_run

    training_run.form(n)
    cfg = training_run.config(n)
    st.markdown(f"{cfg.model} on {cfg.devices}, batch {cfg.batch}, {cfg.steps} steps")
    training_run.run(cfg)


def test_the_link_is_the_config_and_the_config_the_link():
    query = {"model": "mlp", "k": "4", "batch": "64", "steps": "5", "lr": "0.1", "red": "psum"}
    at = render(_run, TEST_DEVICES, query=query)
    assert not at.exception
    assert at.markdown[0].value == "mlp on 4, batch 64, 5 steps"
    assert dict(at.query_params) == query
    at.button(key="tr_go").click().run(timeout=300)
    assert not at.exception and len(at.session_state["tr_hist"].losses) == 5


def test_a_batch_the_devices_cannot_share_is_refused_before_training():
    at = render(_run, TEST_DEVICES, query={"k": "3", "batch": "64"})
    assert at.error and not at.markdown


def test_a_stopped_run_keeps_the_steps_it_finished():
    from pmapviz.features.training import trainingmodel, trainingrun

    partial = trainingrun.History(trainingmodel.Config("linear", 2, 8, 10))
    at = render(_run, TEST_DEVICES, state={"tr_running": True, "tr_partial": partial})
    assert "stopped" in at.warning[0].value
    assert at.session_state["tr_hist"] is partial and partial.stopped
