"""Presenter mode: seeded from ?present=1, the picture first, larger type."""

from tests.core.ui.conftest import render


def _page():
    import streamlit as st

    from pmapviz.core.ui import presenter

    on = presenter.toggle()
    slot = presenter.picture_slot()
    st.markdown("the words")
    with presenter.picture(slot):
        st.markdown("the picture")
    st.caption(f"on={on} presenting={presenter.presenting()}")


def test_off_the_picture_stays_where_the_page_draws_it():
    at = render(_page)
    assert [m.value for m in at.markdown] == ["the words", "the picture"]
    assert at.caption[0].value == "on=False presenting=False"


def test_present_1_in_the_link_puts_the_picture_first_and_adds_the_css():
    at = render(_page, query={"present": "1"})
    values = [m.value for m in at.markdown]
    assert values.index("the picture") < values.index("the words")
    assert any("font-size: 20px" in v for v in values)
    assert at.caption[0].value == "on=True presenting=True"
    assert at.sidebar.toggle(key="present").value is True
