"""A live run of the explorer's settings: what runs, what stops it, the run."""

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.live.ui import live_run
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _live(texts, n):
    import streamlit as st

    from pmapviz.core.planning.scenarios import Scenario
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.live.ui import live_run

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


def test_a_slow_run_waits_for_its_button_even_when_it_is_small():
    """Issue 36: a link must not start a long run on page load. A sort of an outer product is
    small in memory but takes seconds (charged at the measured sort rate), so it waits for
    Run, whose label says the estimate."""
    texts = {
        "fn": "expr",
        "args": "x",
        "body": "jnp.sort(jnp.einsum('a,b->ab', x, x)).sum()",
        "s0": f"{TEST_DEVICES}, 700",
        "a0": "0",
    }
    at = render(_live, texts, TEST_DEVICES)
    assert not at.exception and not at.error
    run = next(b for b in at.button if b.label.startswith("Run ("))
    assert " s)" in run.label and "about" in run.label
    assert any(i.value.startswith("Large or slow: press Run") for i in at.info)
    assert not at.metric  # nothing ran


def test_a_plan_is_compiled_once_per_device_set():
    """On a two-set server one plan can run on either set: the cached pair is keyed by the
    set, so switching sets never runs a program compiled for the other set's devices."""
    from pmapviz.core.devices import deviceset
    from pmapviz.core.planning import scenarios
    from tests import fakes

    texts = {"fn": "add", "s0": "1, 4", "s1": "1, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    ref = scenarios.program_ref(program)
    with fakes.fake_devices("tpu", 1):
        with deviceset.use("tpu"):
            on_chip = live_run._compiled(deviceset.current(), ref, plan.key)
        with deviceset.use("cpu"):
            on_cpu = live_run._compiled(deviceset.current(), ref, plan.key)
            assert live_run._compiled(deviceset.current(), ref, plan.key) is on_cpu  # cached
    assert on_cpu is not on_chip
