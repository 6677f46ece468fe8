"""A valid plan drawn: a card per array leaf, and a table of what each device holds."""

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.ui import plan_cards
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _plan(texts, n=TEST_DEVICES, use_pn=False):
    _, plan, errors = Scenario.from_texts(texts, TEST_DEVICES).plan(n, use_pn=use_pn)
    assert not errors and plan.ok
    return plan


def _draw(plan):
    import streamlit as st

    from pmapviz.core.ui import plan_cards

    inputs, outputs = plan_cards.show(plan, "Split", "How JAX splits them.")
    st.markdown(f"{len(inputs)} in, {len(outputs)} out")
    plan_cards.device_table(plan, inputs, outputs, "Per device")


def test_cards_and_table_are_one_html_element_each_on_this_server():
    plan = _plan({"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"})
    at = render(_draw, plan)
    assert not at.exception
    assert at.markdown[0].value == "2 in, 1 out"
    cards, table = (h.proto.body for h in at.get("html"))
    assert "Split" in cards and "How JAX splits them." in cards
    assert "Per device" in table and table.count("<tr") == TEST_DEVICES + 1
    assert not at.dataframe


def test_a_plan_for_a_bigger_machine_gets_a_scrollable_dataframe():
    many = plan_cards.HTML_TABLE_ROWS * 2
    texts = {"fn": "add", "s0": f"{many}, 4", "s1": f"{many}, 4", "pn": str(many)}
    at = render(_draw, _plan(texts, use_pn=True))
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Per device"]
    assert len(at.dataframe[0].value) == many


def test_the_intro_says_where_the_blocks_come_from():
    assert "NamedSharding" in plan_cards.intro(False)
    assert "index arithmetic" in plan_cards.intro(True)
