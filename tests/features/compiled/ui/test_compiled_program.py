"""Which program the Compiled page reads back: the choice, its link, the compiled program."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _program(n):
    import streamlit as st

    from pmapviz.features.compiled.ui import compiled_program

    src, explored = compiled_program.form(n)
    analysis, call = compiled_program.analyse(src, explored, n)
    st.markdown(f"{src}: {analysis.target.code} call={call}")


def test_a_collective_from_the_link_is_compiled_and_its_call_kept_for_the_trace():
    query = {"src": "collective", "c": "all_gather", "n": "4", "m": "2"}
    at = render(_program, TEST_DEVICES, query=query)
    assert not at.exception
    text = at.markdown[-1].value
    assert text.startswith("collective: ") and "Call(key='all_gather', n=4, m=2" in text
    assert dict(at.query_params) == {**query, "g": "", "pairs": "0->1, 1->2"}


def test_the_explorers_program_carries_its_settings_in_the_link():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    at = render(_program, TEST_DEVICES, query={"src": "explorer", **texts})
    assert not at.exception
    assert at.markdown[-1].value.endswith("call=None")
    assert at.query_params["src"] == "explorer" and at.query_params["fn"] == "add"
    assert "c" not in at.query_params


def test_bad_explorer_settings_say_where_to_fix_them():
    at = render(_program, TEST_DEVICES, query={"src": "explorer", "fn": "add", "s0": "3, 4"})
    assert not at.exception
    assert "Fix the explorer's settings first" in at.info[0].value
