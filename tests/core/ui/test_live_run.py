"""A live run of the explorer's settings: what runs, what stops it, the run."""

from pmapviz.scenario import Scenario
from pmapviz.ui import live_run
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _live(texts, n):
    import streamlit as st

    from pmapviz.scenario import Scenario
    from pmapviz.ui import live_run
    from pmapviz.ui.shell import device_report

    current = Scenario.from_texts(texts, n)
    program, plan, errors = current.plan(n)
    page_link = st.page_link
    st.page_link = lambda *args, **kwargs: None  # its target needs app.py's navigation
    try:
        kind, seed = live_run.form(current, program, plan, n)
    finally:
        st.page_link = page_link
    live_run.show(program, plan, errors, kind, seed, device_report(), None)


def test_a_small_valid_run_goes_at_once_and_passes():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    at = render(_live, texts, TEST_DEVICES)
    assert not at.exception
    assert "**f** =" in at.markdown[0].value and at.metric[0].value == "PASS"
    at.radio(key="live_kind").set_value("random").run()
    assert not at.number_input(key="live_seed").disabled


def test_an_invalid_plan_shows_each_problem_with_its_fix_and_runs_nothing():
    texts = {"fn": "add", "s0": f"{2 * TEST_DEVICES}, 4", "s1": f"{2 * TEST_DEVICES}, 4"}
    at = render(_live, texts, TEST_DEVICES)
    assert any("**Fix:**" in e.value for e in at.error)
    assert "Nothing runs" in at.info[-1].value and not at.metric


def test_a_small_plan_fits_the_time_limit():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    assert live_run.too_long(plan, program) is None
