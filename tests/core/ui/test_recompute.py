"""A long action's notice (recompute.working), in AppTest: what the page has been sent while the
action runs, read from Streamlit's own message queue at that moment."""

import pytest
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

from pmapviz.core.ui import recompute
from tests.core.ui.conftest import render

SENT: list = []  # every delta of the run so far: (delta path, element kind, its text)
DURING: list = []  # SENT as it was while the action ran, one list a run


@pytest.fixture
def recorded(monkeypatch):
    SENT.clear()
    DURING.clear()
    enqueue = ForwardMsgQueue.enqueue

    def record(self, msg):
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            el = msg.delta.new_element
            kind = el.WhichOneof("type")
            body = getattr(el, kind, None)
            SENT.append((tuple(msg.metadata.delta_path), kind, getattr(body, "body", "")))
        enqueue(self, msg)

    monkeypatch.setattr(ForwardMsgQueue, "enqueue", record)


def page(seconds: float, delay_s: float):
    import time

    import streamlit as st

    from pmapviz.core.ui import recompute
    from tests.core.ui import test_recompute as t

    v = st.selectbox("Setting", ["first", "second"], key="v")
    with recompute.working(f"Computing for **{v}**...", delay_s=delay_s):
        time.sleep(seconds)
        t.DURING.append(list(t.SENT))
    st.markdown(f"Result for {v}")


def notices(sent: list) -> list[str]:
    return [text for _, kind, text in sent if kind == "alert" and recompute.LABEL in text]


def test_a_slow_action_says_what_it_computes_and_greys_the_old_page_out(recorded):
    at = render(page, 0.6, 0.05)
    assert at.markdown[-1].value == "Result for first"
    SENT.clear()
    at.selectbox(key="v").set_value("second").run()
    during = DURING[-1]  # what the browser had been sent while "second" was computed
    said = notices(during)
    assert said == [f"Computing for **second**... {recompute.LABEL}"]
    styles = [text for _, kind, text in during if kind == "markdown" and "<style>" in text]
    assert len(styles) == 1 and recompute.STALE in styles[0] and "opacity" in styles[0]
    # the result is not drawn again until the action ends: the old one is the stale part
    assert not any("Result for" in text for _, _, text in during)
    # afterwards: the notice and its style are gone (their slot emptied), the new result shown
    assert not at.info and at.markdown[-1].value == "Result for second"
    notice_path = next(path for path, _, text in SENT if recompute.LABEL in text)[:-1]  # its slot
    last_in_slot = [kind for path, kind, _ in SENT if path[: len(notice_path)] == notice_path]
    assert last_in_slot[-1] == "empty"
    assert "<style>" not in "".join(m.value for m in at.markdown)


def test_a_quick_action_draws_no_notice_and_greys_nothing(recorded):
    at = render(page, 0.0, 0.5)
    SENT.clear()
    at.selectbox(key="v").set_value("second").run()
    assert not notices(SENT)
    assert not any("<style>" in text for _, _, text in SENT)
    assert at.markdown[-1].value == "Result for second" and not at.info


def failing(delay_s: float):
    import time

    import streamlit as st

    from pmapviz.core.ui import recompute

    try:
        with recompute.working("Computing...", delay_s=delay_s):
            time.sleep(0.3)
            raise ValueError("the action failed")
    except ValueError as err:
        st.error(str(err))


def test_a_failed_action_leaves_no_notice_behind(recorded):
    at = render(failing, 0.05)
    assert notices(SENT) == [f"Computing... {recompute.LABEL}"]  # it was shown while it ran
    assert not at.info and at.error[0].value == "the action failed"
    assert SENT[-2][1] == "empty"  # the slot emptied before the error was drawn
