"""The verdict: the call, and each problem with its fix and a button (its own key), or what
the valid call does."""

from types import SimpleNamespace

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.explorer.ui import plan_verdict
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def test_a_problem_that_comes_twice_gets_a_second_key():
    problems = [SimpleNamespace(code=c) for c in ("neg_axis", "too_big", "neg_axis", "neg_axis")]
    assert plan_verdict.fix_keys(problems) == [
        "fix_neg_axis",
        "fix_too_big",
        "fix_neg_axis_1",
        "fix_neg_axis_2",
    ]


def _verdict(texts, n):
    import streamlit as st

    from pmapviz.core.planning.scenarios import Scenario
    from pmapviz.features.explorer.ui import plan_verdict

    program, plan, _ = Scenario.from_texts(texts, n).plan(n)
    st.markdown(f"valid={plan_verdict.show(program, plan, n, False)}")


def test_a_valid_plan_says_what_each_device_runs():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    at = render(_verdict, texts, TEST_DEVICES)
    assert at.markdown[-1].value == "valid=True"
    assert "Valid." in at.success[0].value and "jax.pmap" in at.code[0].value


def test_each_problem_has_its_fix_and_a_button_that_applies_it():
    texts = {"fn": "add", "s0": f"{2 * TEST_DEVICES}, 4", "s1": f"{2 * TEST_DEVICES}, 4"}
    _, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    at = render(_verdict, texts, TEST_DEVICES)
    assert at.markdown[-1].value == "valid=False"
    keys = plan_verdict.fix_keys(plan.problems)
    assert len(at.error) == len(plan.problems) and len(set(keys)) == len(keys)
    button = next(b for b in at.button if b.label.startswith("Apply"))
    button.click().run()
    assert "ex_s0" in at.session_state or "ex_a0" in at.session_state  # the fix, applied


def _jax_words(texts, n, pn):
    from pmapviz.core.planning.scenarios import Scenario
    from pmapviz.features.explorer.ui import plan_verdict

    program, plan, _ = Scenario.from_texts({**texts, "pn": str(pn)}, n).plan(n, use_pn=True)
    plan_verdict.jax_words(program, plan)


def test_jaxs_own_words_are_its_exception_or_none_or_why_it_cannot_be_asked():
    from pmapviz.core.running import jaxsays

    n = TEST_DEVICES
    texts = {"fn": "double", "s0": f"{n + 2}, 4"}
    program, plan, _ = Scenario.from_texts(texts, n).plan(n)
    said = jaxsays.jax_says(program, plan)
    at = render(_jax_words, texts, n, n)
    (box,) = at.expander
    assert box.label == f"What JAX itself says: {said.name}" and not box.proto.expanded
    assert [c.value for c in box.code] == [said.text] and not at.markdown
    at = render(_jax_words, {"fn": "double", "s0": f"{n}, 4", "out": "-1"}, n, n)
    assert at.expander[0].label == "What JAX itself says: no error" and not at.code
    at = render(_jax_words, {"fn": "double", "s0": f"{4 * n}, 4"}, n, 2 * n)
    assert not at.expander and f"this server has {n}," in at.caption[0].value
