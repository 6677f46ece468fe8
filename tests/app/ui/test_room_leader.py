"""Who leads the room, in AppTest: the one-time lead link (it leaves the link at once and opens
once), the leader's pass its browser keeps (a reload leads again until it stops; a newer pass
ends it), the key never drawn on a page, and followers told when no leader is present."""

import json

import pytest
import streamlit as st
from streamlit.proto.TextInput_pb2 import TextInput as TextInputProto

from pmapviz.app import page_registry
from pmapviz.app.ui import room_leader, room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.ui import browser_store
from tests.app.ui.test_room_panel import _follow_link, _lead, _page_of
from tests.pages.conftest import open_link


def _kept(at) -> dict[str, str]:
    """What this session's browser keeps: each cookie its browser-store components write (as
    their JavaScript writes it: name=value, "" for forgotten)."""
    jar = {}
    for element in at.get("bidi_component"):
        assert element.proto.component_name == browser_store.NAME
        data = json.loads(element.proto.json)
        jar[data["name"]] = data["value"]
    return jar


def _reload(monkeypatch, jar: dict[str, str], page: str | None = None, query=None):
    """A reload: a fresh session whose first request carried the browser's cookies ``jar``
    (AppTest sends none, so the reader is this browser's)."""
    monkeypatch.setattr(browser_store, "read", lambda name: jar.get(name) or None)
    return open_link(monkeypatch, page, query or {})


def _leads(at) -> bool:
    return any("You lead the room" in s.value for s in at.sidebar.success)


def _pass_cookie() -> str:
    return browser_store.cookie_name(room_leader.PASS_COOKIE)


def test_the_lead_link_leads_leaves_the_link_at_once_and_opens_only_once(fresh_room, monkeypatch):
    token = fresh_room.invite()
    at = open_link(monkeypatch, page_file("tour"), {"lead": token, "step": "2"})
    assert _leads(at) and fresh_room.holds(at.session_state[room_leader.LEAD])
    assert "lead" not in at.query_params and at.query_params["step"] in ("2", ["2"])
    assert token not in _everything(at) and fresh_room.key not in _everything(at)
    assert fresh_room.latest()[1] == room.Step.of("tour", {"step": "2"})  # it leads from here
    again = open_link(monkeypatch, None, {"lead": token})  # the same link, a second time
    assert [e.value for e in again.error] == [room_leader.SPENT] and not _leads(again)
    assert "lead" not in again.query_params and room_leader.LEAD not in again.session_state
    assert fresh_room.holds(at.session_state[room_leader.LEAD])  # the refusal took nothing


@pytest.mark.parametrize("hostile", ["<b>x</b>", "1" * 5000, "²", ""])
def test_a_hostile_lead_value_leads_no_one_and_shows_one_line(fresh_room, monkeypatch, hostile):
    at = open_link(monkeypatch, None, {"lead": hostile})
    assert not at.exception and [e.value for e in at.error] == [room_leader.SPENT]
    assert "lead" not in at.query_params and not _leads(at)


def test_a_leader_leads_again_after_a_reload_until_it_stops(fresh_room, monkeypatch):
    leader = open_link(monkeypatch, page_file("tour"), {"lead": fresh_room.invite()})
    given = leader.session_state[room_leader.LEAD]
    jar = _kept(leader)
    assert jar == {_pass_cookie(): given}  # the pass, not the token and never the key
    reloaded = _reload(monkeypatch, jar, page_file("tour"))
    assert _leads(reloaded) and reloaded.session_state[room_leader.LEAD] == given
    reloaded.button(key="tour_next").click().run()
    assert fresh_room.latest()[1].query_dict()["step"] == "2"  # and publishes its steps
    reloaded.sidebar.button(key="room_unlead").click().run()
    assert not _leads(reloaded) and reloaded.sidebar.button(key="room_lead")
    jar |= _kept(reloaded)
    assert jar == {_pass_cookie(): ""}  # this browser forgot it
    assert not fresh_room.holds(given)
    after = _reload(monkeypatch, {_pass_cookie(): given})  # a copy kept elsewhere: revoked
    assert not _leads(after) and _kept(after) == {_pass_cookie(): ""}


def test_a_newer_lead_link_or_the_key_typed_elsewhere_ends_the_old_leaders_lead(
    run_app, fresh_room, monkeypatch
):
    first = _lead(run_app(), fresh_room.key)
    old = first.session_state[room_leader.LEAD]
    second = open_link(monkeypatch, None, {"lead": fresh_room.invite()})
    assert _leads(second) and not fresh_room.holds(old)
    first.run()
    assert not _leads(first) and first.sidebar.button(key="room_lead")
    assert room_leader.LEAD not in first.session_state
    stale = _reload(monkeypatch, {_pass_cookie(): old})  # the old browser's reload
    assert not _leads(stale) and _kept(stale) == {_pass_cookie(): ""}


def test_a_follow_link_opened_in_the_leaders_browser_follows(fresh_room, monkeypatch):
    leader = open_link(monkeypatch, None, {"lead": fresh_room.invite()})
    tab = _reload(monkeypatch, _kept(leader), None, {"follow": "1"})
    assert not _leads(tab) and tab.session_state[room_panel.FOLLOWING]
    assert fresh_room.holds(leader.session_state[room_leader.LEAD])


def _everything(at) -> str:
    """Every element and widget this session's page holds, its whole message as sent to the
    browser (text, HTML, code, labels, values), in the main area and the sidebar."""
    found = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            found.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(found)


def test_no_page_draws_the_presenter_key_leading_or_not_presenting_or_not(
    run_app, fresh_room, monkeypatch
):
    """Issue 65: the sidebar drew the key beside "Lead from this browser" on the shared
    screen. Now no page's text, HTML, code or widget holds it: not the leader's (who typed
    it), on every page, nor anyone else's, in presenter mode or not."""
    key = fresh_room.key
    leader = _lead(run_app(), key)
    assert _leads(leader)
    for info in page_registry.PAGES:
        leader.switch_page(info.path).run()
        assert not leader.exception and key not in _everything(leader), info.path
    # a browser on the server's machine as the old loopback guess saw one (and so every
    # attendee behind a reverse proxy with default settings): loopback, Host localhost
    context = type(st.context)
    monkeypatch.setattr(context, "ip_address", property(lambda _: None))
    monkeypatch.setattr(context, "headers", property(lambda _: {"Host": "localhost:8501"}))
    for query in ({}, {"present": "1"}, {"follow": "1"}):
        other = open_link(monkeypatch, None, query)
        text = _everything(other)
        assert key not in text and "Lead from this browser" not in text
    joining = open_link(monkeypatch, None, {})
    assert joining.sidebar.text_input(key="room_typed").proto.type == TextInputProto.PASSWORD


def test_followers_are_told_when_no_leader_is_present_and_follow_again_when_one_returns(
    fresh_room, monkeypatch
):
    """The leader's page closes (Streamlit ends its session): the follower's next poll says
    no presenter is there, and it stays on the last step; the leader's browser opens the
    tour again (its pass kept): the follower follows it, by itself. Stopping tells them too."""
    monkeypatch.setattr(room, "LEADER_SILENCE_S", 1.5)  # as served (the fixture's is lenient)
    leader = open_link(monkeypatch, page_file("tour"), {"lead": fresh_room.invite()})
    follower = _follow_link(monkeypatch)
    assert "Following the presenter." in [i.value for i in follower.sidebar.info]
    page_open = [True]  # every AppTest session has one id: whether the leader's page is open
    monkeypatch.setattr(room_leader, "connected", lambda session: page_open[0])
    page_open[0] = False  # the leader's page closed
    follower.run()
    assert room_leader.AWAY in [w.value for w in follower.sidebar.warning]
    assert _page_of(follower) == "tour" and follower.session_state["tour_step"] == 1
    page_open[0] = True  # its browser opens the tour again
    back = _reload(monkeypatch, _kept(leader), page_file("tour"), {"step": "2"})
    assert _leads(back) and fresh_room.latest()[1].query_dict()["step"] == "2"
    follower.run()
    assert follower.session_state["tour_step"] == 2
    assert "Following the presenter." in [i.value for i in follower.run().sidebar.info]
    assert room_leader.AWAY not in [w.value for w in follower.sidebar.warning]
    back.sidebar.button(key="room_unlead").click().run()  # stopping: no leader at once
    assert room_leader.AWAY in [w.value for w in follower.run().sidebar.warning]


def test_followers_hear_of_a_silent_leader_within_two_seconds():
    """The leader polls every POLL_S; silent LEADER_SILENCE_S it is away, and a follower's
    next poll (every POLL_S too) says so: within 2 s of the leader's last poll."""
    assert room_panel.POLL_S * 3 <= room.LEADER_SILENCE_S  # three polls missed, not one late
    assert room.LEADER_SILENCE_S + room_panel.POLL_S <= 2.0
