"""Follow the presenter, in AppTest: two sessions of one server process share its room. A
leader proves the key; a follower switches to the leader's step inside its own session (its
next run, as its browser's poll would start); the follower leaves by editing and comes back;
nothing in a URL leads."""

import sys

import pytest
from streamlit.testing.v1 import AppTest

from pmapviz.app.ui import room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.ui import url_state
from tests.conftest import ROOT
from tests.core.ui.test_url_state import server_options
from tests.pages.conftest import all_text, open_link, steady_state_server


def _lead(at, key: str):
    at.sidebar.text_input(key="room_typed").set_value(key).run()
    at.sidebar.button(key="room_lead").click().run()
    return at


def _follow_link(monkeypatch):
    """A fresh session opened at ``/?follow=1``, the follow link, after its first run."""
    return open_link(monkeypatch, None, {"follow": "1"})


def _page_of(at) -> str:
    """The url_path of the page this session's last run showed."""
    return at.session_state[room_panel.PAGE]


def _explorer_n(at) -> str:
    return at.text_input(key="ex_s0").value


def test_a_wrong_key_leads_no_one_and_says_so(run_app, fresh_room):
    at = _lead(run_app(), "not-the-key-1234")
    assert "That is not this server's presenter key." in [e.value for e in at.sidebar.error]
    assert not at.session_state[room_panel.LEAD] if room_panel.LEAD in at.session_state else True
    assert fresh_room.latest() == (0, None)
    assert fresh_room.key not in all_text(at)  # AppTest has no browser on this machine


def test_the_key_leads_and_the_leaders_page_and_settings_become_the_step(run_app, fresh_room):
    at = _lead(run_app(), fresh_room.key)
    assert any("You lead the room" in s.value for s in at.sidebar.success)
    at.switch_page(page_file("tour")).run()
    version, step = fresh_room.latest()
    assert step.page == "tour" and step.query_dict().get("step") == "1"
    assert fresh_room.key not in str(dict(at.query_params))  # never in the leader's own link
    at.button(key="tour_next").click().run()
    assert fresh_room.latest()[0] > version
    assert fresh_room.latest()[1].query_dict()["step"] == "2"


def test_a_follower_switches_to_the_step_leaves_by_editing_and_comes_back(
    run_app, fresh_room, monkeypatch
):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("explorer")).run()
    leader.text_input(key="ex_s0").set_value("4,6").run()
    version, step = fresh_room.latest()
    assert step.page == "explorer"
    follower = _follow_link(monkeypatch)  # /?follow=1: it switches to the step in its session
    assert _page_of(follower) == "explorer" and _explorer_n(follower) == "4,6"
    assert follower.session_state[room_panel.SYNCED] == version
    assert follower.query_params["follow"] in ("1", ["1"])
    assert fresh_room.key not in str(dict(follower.query_params))
    assert "Following the presenter." in [i.value for i in follower.sidebar.info]
    follower.text_input(key="ex_s0").set_value("4,7").run()  # tries it freely
    follower.run()  # the sidebar, drawn before the page, says so from the next run (a poll)
    assert "You left the presenter to try this yourself." in [
        i.value for i in follower.sidebar.info
    ]
    leader.text_input(key="ex_s0").set_value("4,8").run()
    follower.run()
    assert _explorer_n(follower) == "4,7"  # left: the leader's edit does not overwrite theirs
    assert room_panel.TARGET not in follower.session_state
    follower.sidebar.button(key="room_back").click().run()
    assert _explorer_n(follower) == "4,8"
    assert "Following the presenter." in [i.value for i in follower.run().sidebar.info]


def test_a_run_on_another_page_than_the_target_switches_again(run_app, fresh_room, monkeypatch):
    """Streamlit folds a pending switch into a rerun the browser's timer sends meanwhile,
    which carries the page before it: that run switches again, and the follower neither
    loses the step nor takes the old page for its own edit."""
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    assert _page_of(follower) == "tour"
    leader.switch_page(page_file("collectives")).run()
    follower.run()
    assert _page_of(follower) == "collectives"
    version = fresh_room.latest()[0]
    follower.session_state[room_panel.TARGET] = (version, fresh_room.latest()[1])
    follower.session_state[room_panel.SYNCED] = None
    follower.switch_page(page_file("tour")).run()  # the timer's run: the page before the step
    assert _page_of(follower) == "collectives"
    state = follower.session_state
    assert room_panel.LEFT not in state or not state[room_panel.LEFT]
    assert state[room_panel.SYNCED] == version


def test_the_leaders_url_parameters_without_the_key_drive_no_one(run_app, fresh_room):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    before = fresh_room.latest()
    forged = dict(leader.query_params) | {"lead": "1", "key": "x", "presenter_key": "y"}
    intruder = run_app(page=page_file("explorer"), query={k: str(v) for k, v in forged.items()})
    intruder.text_input(key="ex_s0").set_value("8,3").run()
    assert fresh_room.latest() == before


def test_a_request_sent_before_a_switch_is_not_taken_for_an_edit(run_app, fresh_room, monkeypatch):
    """A busy server runs a request the browser sent before it heard of a switch after the
    switch: it carries the page passed. A poll with it is no edit; a whole run of it shows the
    page passed, so it switches to the room's step again. A page never passed is an edit."""
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)  # opened at Home, switched to the tour
    state = follower.session_state
    assert _page_of(follower) == "tour"
    state[room_panel.HEARD] = True  # a poll has carried the step's link
    follower.switch_page(page_file("home")).run()  # the request from before the switch
    assert room_panel.LEFT not in state or not state[room_panel.LEFT]
    assert _page_of(follower) == "tour"
    follower.switch_page(page_file("collectives")).run()  # never passed: this person's own
    assert state[room_panel.LEFT] and _page_of(follower) == "collectives"


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("localhost:8501", "localhost"),
        ("[::1]:8501", "[::1]"),
        ("[::1]", "[::1]"),
        ("127.0.0.1", "127.0.0.1"),
        ("pods.example:80", "pods.example"),
        ("", ""),
    ],
)
def test_the_host_name_is_read_without_its_port(monkeypatch, host, name):
    monkeypatch.setattr(url_state.st, "context", type("C", (), {"headers": {"Host": host}}))
    assert url_state.browser_host() == name


def test_stopping_takes_follow_out_of_the_link_so_a_reload_stays_out(
    run_app, fresh_room, monkeypatch
):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    assert follower.query_params["follow"] in ("1", ["1"]) and fresh_room.following() == 1
    follower.sidebar.button(key="room_stop").click().run()
    assert "follow" not in follower.query_params
    assert follower.sidebar.button(key="room_follow")  # offered again
    assert fresh_room.following() == 0  # not counted from now


def test_steps_on_one_page_are_followed_one_after_another(run_app, fresh_room, monkeypatch):
    """Three tour steps on one page: the follower switches to the latest."""
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    assert follower.session_state["tour_step"] == 1
    for _ in range(3):
        leader.button(key="tour_next").click().run()
    follower.run()
    assert follower.session_state["tour_step"] == 4
    follower.run()
    assert "Following the presenter." in [i.value for i in follower.sidebar.info]
    assert room_panel.TARGET not in follower.session_state  # arrived: nothing more to open


def test_a_step_opened_from_a_share_link_is_not_shared_as_following(
    run_app, fresh_room, monkeypatch
):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    follower.session_state["share_tour"] = True  # the share link is drawn when it is open
    link = next(c.value for c in follower.run().code if "/tour?" in c.value)
    assert "step=1" in link and "follow" not in link  # a link to the view, not to following


@pytest.mark.parametrize("present", [False, True])
def test_a_steps_query_keeps_this_persons_own_keys_and_nothing_of_the_leaders(monkeypatch, present):
    monkeypatch.setattr(room_panel.presenter, "presenting", lambda: present)
    step = room.Step.of("tour", {"x": "1&follow=0#<b>", "present": "1", "key": "k"})
    query = room_panel.step_query(step)
    assert query == {"x": "1&follow=0#<b>", "follow": "1"} | ({"present": "1"} if present else {})


@pytest.mark.parametrize("value", ["²", "yes please", "<b>1</b>", "", "1" * 5000])
def test_a_follow_value_that_does_not_parse_follows_no_one_and_breaks_nothing(
    monkeypatch, fresh_room, value
):
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["app.py"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["follow"] = value
    at.run()
    assert not at.exception and not at.session_state[room_panel.FOLLOWING]
    assert at.sidebar.button(key="room_follow")


def test_an_apptest_prints_no_presenter_key(run_app, monkeypatch, capfd):
    """The doctor's page check runs AppTest: a key made there has no one to read it, and its
    report is all it prints (AppTest has a runtime too: a mock one)."""
    monkeypatch.setattr(room, "_ROOM", [])
    run_app()
    made = room.room()
    assert made.key not in capfd.readouterr().err


def _leader_run(given: str, fragment_run: bool):
    import streamlit as st

    from pmapviz.app.ui import room_panel

    st.session_state[room_panel.LEAD], st.session_state[room_panel.PAGE] = given, "explorer"
    if fragment_run:  # as a run of a page's fragment alone: after a fragment that wrote this link
        real = room_panel.get_script_run_ctx
        room_panel.get_script_run_ctx = lambda: type("Ctx", (), {"fragment_ids_this_run": ["f"]})
        try:
            room_panel._lead_from_fragment()
        finally:
            room_panel.get_script_run_ctx = real
    else:  # a poll, sent with the link its browser had: the page before, on a busy server
        room_panel._in_step()


def test_a_leaders_poll_publishes_nothing_a_page_fragments_new_link_at_once(
    fresh_room, monkeypatch
):
    """Entering the explorer, a room of thirty was led to the explorer's defaults and back: a
    poll's link is its browser's (the page before, the explorer's path), and polls published
    it once two carried it. Now a leader publishes only links its pages wrote: a whole run's
    (after_page) and a page fragment's (this), never a poll's."""
    monkeypatch.setattr(room_panel, "get_script_run_ctx", room_panel.get_script_run_ctx)
    given = fresh_room.admit(fresh_room.key)
    at = AppTest.from_function(_leader_run, args=(given, False))
    at.query_params["step"] = "9"  # the tour's link, polled after the switch to the explorer
    at.run()
    at.run()
    assert not at.exception and fresh_room.latest() == (0, None)
    at = AppTest.from_function(_leader_run, args=(given, True))
    at.query_params["s0"] = "4,6"
    at.run()
    version, step = fresh_room.latest()
    assert (version, step) == (1, room.Step.of("explorer", {"s0": "4,6"}))
    at.run()
    assert fresh_room.latest()[0] == 1  # the same link again: no new step


def _retiring(seen: dict):
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from pmapviz.app.ui import room_panel

    room_panel._poll_fragment()()
    first, storage = st.session_state[room_panel.POLLER], get_script_run_ctx().fragment_storage
    seen["held"] = storage.contains(first)
    room_panel._retire_poller()  # as a switch does
    seen["after"] = storage.contains(first)
    room_panel._poll_fragment()()
    seen["ids"] = (first, st.session_state[room_panel.POLLER])


def test_a_switch_retires_the_poll_so_streamlit_drops_one_sent_before_it(monkeypatch):
    """A poll the browser sent before it heard of a switch ran after the switched run, at the
    page before it, which a browser shows as an empty page: the follower switched again (two
    whole runs a step). Streamlit drops a poll of a fragment its session no longer holds: a
    switch takes the poll's fragment out at once, and the next poll has another id
    (tests/e2e/test_follow_reruns_e2e.py counts the runs on a real server)."""
    monkeypatch.setattr(room_panel, "_in_step", lambda: None)
    seen: dict = {}
    at = AppTest.from_function(_retiring, args=(seen,))
    at.run()
    assert not at.exception
    first, second = seen["ids"]
    assert seen["held"] and not seen["after"] and first and second and first != second


def _stale_poll(page_named: str, calls: list):
    import streamlit as st

    from pmapviz.app.ui import room_panel
    from pmapviz.core.base import room

    step = room.Step.of("tour", {"step": "2"})
    room_panel.the_room().lead(room_panel.the_room().key, step)
    state = st.session_state
    state[room_panel.FOLLOWING], state[room_panel.PAGE] = True, "tour"
    state[room_panel.SYNCED], state[room_panel.BASELINE] = room_panel.the_room().latest()[0], step
    room_panel._poll_page = lambda ctx: page_named  # the page the poll's request named
    room_panel._switch = lambda version, to: calls.append((version, to))
    room_panel._in_step()  # a timer's poll (not inside a whole run)


@pytest.mark.parametrize(("named", "switched"), [("", True), ("tour", False), (None, False)])
def test_a_poll_naming_the_page_before_a_switch_switches_to_the_step_again(
    fresh_room, monkeypatch, named, switched
):
    """Streamlit runs such a poll at the page it names and tells the browser that page, which
    empties what it drew of the step: the follower switches to its step again."""
    calls: list = []
    monkeypatch.setattr(room_panel, "_poll_page", room_panel._poll_page)
    monkeypatch.setattr(room_panel, "_switch", room_panel._switch)
    AppTest.from_function(_stale_poll, args=(named, calls)).run()
    step = room.Step.of("tour", {"step": "2"})
    assert calls == ([(fresh_room.latest()[0], step)] if switched else [])


@pytest.mark.parametrize("address", ["0.0.0.0", "127.0.0.1"])
def test_the_follow_link_names_an_address_the_room_can_open(
    run_app, fresh_room, monkeypatch, address
):
    """Issue 65: led from a server started with --server.address 0.0.0.0, the follow link
    named 127.0.0.1 with "Only this machine can open this link" under it. It names the
    machine's network address (Streamlit's Network URL); the warning only on a server that
    listens on loopback alone."""
    from streamlit import net_util

    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "198.51.100.23")
    with server_options({"server.address": address, "server.port": 8600}):
        at = _lead(run_app(), fresh_room.key)
    links = [c.value for c in at.sidebar.code if "follow=1" in c.value]
    warned = any(w.value == url_state.ROOM_NOTE for w in at.sidebar.warning)
    if address == "0.0.0.0":
        assert links == ["http://198.51.100.23:8600/?follow=1"] and not warned
    else:
        assert links == ["http://localhost/?follow=1"] and warned  # AppTest: no Host header


# -- leading (issue 65): the one-time lead link, the pass a browser keeps, no key on a page,
# and the leader's presence as followers see it ---------------------------------------------
