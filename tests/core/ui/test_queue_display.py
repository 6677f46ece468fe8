"""Waiting for a turn, in the open: the queue's own words, Stop, and a wait that ends."""

from tests.core.ui.conftest import render


def _waits(outcome):
    import streamlit as st

    from pmapviz.core.base import queues
    from pmapviz.core.ui import queue_display

    def action(on_wait):
        on_wait(2, 0.5, "2nd in the queue for 1.0 GiB; a sweep runs")
        if outcome == "cancel":
            raise queues.Cancelled("Stopped waiting.", 2, 0.5)
        return "done"

    st.markdown(repr(queue_display.queued(action, stop_key="stop_it")))


def test_a_wait_shows_the_queues_message_and_a_stop_button_then_clears():
    at = render(_waits, "run")
    assert at.markdown[0].value == "'done'"
    assert not at.info  # cleared once the action had its turn


def test_a_wait_that_ends_without_its_turn_says_why_and_returns_none():
    at = render(_waits, "cancel")
    assert at.markdown[0].value == "None"
    assert at.warning[0].value == "Stopped waiting."


def _shown():
    from pmapviz.core.ui import queue_display

    on_wait, _clear = queue_display.show(stop_key="stop_it")
    on_wait(1, 0.0, "1st in the queue")
    on_wait(1, 0.2, "1st in the queue, 0.2 s")


def test_the_message_is_replaced_not_repeated_and_stop_is_a_button():
    at = render(_shown)
    assert [i.value for i in at.info] == ["1st in the queue, 0.2 s"]
    assert at.button(key="stop_it").label == "Stop waiting"
