"""The explorer's settings form."""

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.explorer import presets
from pmapviz.features.explorer.ui import explorer_form
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def test_argument_widths_widen_in_axes_for_a_pytree_argument():
    plain = explorer_form.argument_widths("8, 4", "0")
    assert explorer_form.argument_widths("{'w': (5, 2)}", "None")[2] > plain[2]
    assert explorer_form.argument_widths("8, 4", "{'w': None}")[2] > plain[2]
    assert explorer_form.argument_widths(None, None) == plain
    tree = explorer_form.argument_widths("((2,), (3,))", "0")
    assert tree[1] == plain[1]  # the dtype box keeps its width: "float32" stays readable
    assert tree[2] / sum(tree) > plain[2] / sum(plain)


def _form(n):
    import streamlit as st

    from pmapviz.core.planning import scenarios
    from pmapviz.core.ui import url_state
    from pmapviz.features.explorer.ui import explorer_form

    url_state.load(explorer_form.P, scenarios.schema(n))
    explorer_form.presets_row(n)
    current = explorer_form.show(n)
    st.markdown(repr(current.query()))


def test_the_form_holds_the_links_scenario_and_keeps_it_for_the_other_pages():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    at = render(_form, TEST_DEVICES, query=texts)
    assert not at.exception
    assert at.markdown[-1].value == repr(Scenario.from_texts(texts, TEST_DEVICES).query())
    assert at.session_state["explorer_settings"]["fn"] == "add"
    assert at.text_input(key="ex_s1").label == "shape of y"


def test_choosing_your_own_f_starts_from_the_functions_code():
    at = render(_form, TEST_DEVICES)
    at.selectbox(key="ex_fn").set_value("expr").run()
    assert not at.exception
    assert at.text_input(key="ex_body").value  # the current function's body, as an expression
    assert at.session_state["explorer_settings"]["fn"] == "expr"


def test_a_preset_button_applies_its_settings():
    at = render(_form, TEST_DEVICES)
    first = presets.PRESETS[0]
    at.button(key=f"preset_{first.key}").click().run()
    assert at.selectbox(key="ex_fn").value == first.scenario(TEST_DEVICES).fn


def test_the_shape_help_gives_the_seeds_reshape_for_this_servers_devices():
    from pmapviz.core.planning import seedpairs

    for n in (1, 3, 8):
        blocked = seedpairs.split(n).blocked
        assert f"e.g. {blocked[0]}, {blocked[1]}, 3." in explorer_form.shape_help(n)
    assert "e.g. 3, 3333333, 3." in explorer_form.shape_help(3)  # not 8, 1250000 on 3
