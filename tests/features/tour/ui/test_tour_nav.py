"""The tour's navigation: the step from the link, kept in the session and the link."""

from pmapviz.features.tour import toursteps
from tests.core.ui.conftest import render


def _nav():
    import streamlit as st

    from pmapviz.features.tour import toursteps
    from pmapviz.features.tour.ui import tour_nav

    step = tour_nav.step()
    tour_nav.show(step, [s.title for s in toursteps.STEPS])
    st.markdown(f"step {step}")


def test_the_links_step_then_next_and_previous_move_it_and_the_link_follows():
    at = render(_nav, query={"step": "3"})
    assert at.markdown[-1].value == "step 3"
    at.button(key="tour_next").click().run()
    assert at.markdown[-1].value == "step 4" and at.query_params["step"] == "4"
    at.button(key="tour_prev").click().run().button(key="tour_prev").click().run()
    assert at.markdown[-1].value == "step 2"


def test_a_bad_step_in_the_link_is_step_one_with_a_note_and_the_ends_are_fenced():
    at = render(_nav, query={"step": "99"})
    assert at.markdown[-1].value == "step 1" and at.warning
    assert at.button(key="tour_prev").disabled
    at.selectbox(key="tour_jump").set_value(len(toursteps.STEPS)).run()
    assert at.button(key="tour_next").disabled


def test_the_jump_list_shows_the_step_that_next_and_previous_reached():
    """The jump list named step 1 on every step a presenter reached with Next (seen at
    1280x720: "1. Emulating devices on a CPU" above "9. Sublinear scaling")."""
    at = render(_nav, query={"step": "1"})
    assert at.selectbox(key="tour_jump").value == 1
    for want in (2, 3):
        at.button(key="tour_next").click().run()
        assert at.markdown[-1].value == f"step {want}"
        assert at.selectbox(key="tour_jump").value == want
    at.button(key="tour_prev").click().run()
    assert at.selectbox(key="tour_jump").value == 2
    at.selectbox(key="tour_jump").set_value(7).run()
    assert at.markdown[-1].value == "step 7" and at.selectbox(key="tour_jump").value == 7
    at.button(key="tour_next").click().run()
    assert at.selectbox(key="tour_jump").value == 8 and not at.warning
