"""Follow the presenter, in AppTest: two sessions of one server process share its room. A
leader proves the key; a follower opens the leader's step as a link, leaves by editing, and
comes back; nothing in a URL leads."""

import sys

import pytest
from streamlit.testing.v1 import AppTest

from pmapviz.app.ui import room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from tests.conftest import ROOT
from tests.pages.conftest import all_text, steady_state_server


@pytest.fixture()
def fresh_room(monkeypatch):
    """A room of this test's own (the process's room outlives a test)."""
    made = room.Room(room.new_key())
    monkeypatch.setattr(room, "_ROOM", [made])
    return made


def _lead(at, key: str):
    at.sidebar.text_input(key="room_typed").set_value(key).run()
    at.sidebar.button(key="room_lead").click().run()
    return at


def _follow_link(monkeypatch):
    """A fresh session opened at ``/?follow=1``, the follow link, after its first run."""
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["app.py"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["follow"] = "1"
    return at.run()


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


def test_a_follower_opens_the_step_leaves_by_editing_and_comes_back(
    run_app, fresh_room, monkeypatch
):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("explorer")).run()
    leader.text_input(key="ex_s0").set_value("4,6").run()
    step = fresh_room.latest()[1]
    assert step.page == "explorer"
    follower = _follow_link(monkeypatch)  # its first run applied the step, as a link is opened
    assert follower.query_params["follow"] in ("1", ["1"])
    follower.run()  # the sidebar's poll, drawn before the page, says so from the next run
    assert _explorer_n(follower) == "4,6"
    assert "Following the presenter." in [i.value for i in follower.sidebar.info]
    follower.text_input(key="ex_s0").set_value("4,7").run()  # tries it freely
    follower.run()
    assert "You left the presenter to try this yourself." in [
        i.value for i in follower.sidebar.info
    ]
    leader.text_input(key="ex_s0").set_value("4,8").run()
    follower.run()
    assert _explorer_n(follower) == "4,7"  # left: the leader's edit does not overwrite theirs
    follower.sidebar.button(key="room_back").click().run()
    follower.run()
    assert _explorer_n(follower) == "4,8"


def test_the_leaders_url_parameters_without_the_key_drive_no_one(run_app, fresh_room):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    before = fresh_room.latest()
    forged = dict(leader.query_params) | {"lead": "1", "key": "x", "presenter_key": "y"}
    intruder = run_app(page=page_file("explorer"), query={k: str(v) for k, v in forged.items()})
    intruder.text_input(key="ex_s0").set_value("8,3").run()
    assert fresh_room.latest() == before


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
    monkeypatch.setattr(room_panel.st, "context", type("C", (), {"headers": {"Host": host}}))
    assert room_panel._host() == name


@pytest.mark.parametrize(
    ("ip", "headers", "local"),
    [
        (None, {"Host": "localhost:8501"}, True),
        (None, {"Host": "127.0.0.1:8501"}, True),
        ("10.0.0.7", {"Host": "localhost:8501"}, False),  # another machine
        (None, {"Host": "abc.ngrok.app"}, False),  # a tunnel connects from loopback
        (None, {"Host": "localhost:8501", "X-Forwarded-For": "203.0.113.9"}, False),
        (None, {}, False),
    ],
)
def test_only_a_browser_on_the_servers_machine_is_offered_the_key(monkeypatch, ip, headers, local):
    context = type("C", (), {"headers": headers, "ip_address": ip})
    monkeypatch.setattr(room_panel.st, "context", context)
    assert room_panel._on_this_machine() is local


def test_stopping_takes_follow_out_of_the_link_so_a_reload_stays_out(
    run_app, fresh_room, monkeypatch
):
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    assert follower.query_params["follow"] in ("1", ["1"])
    follower.sidebar.button(key="room_stop").click().run()
    assert "follow" not in follower.query_params
    assert follower.sidebar.button(key="room_follow")  # offered again


def test_steps_on_one_page_are_followed_one_after_another(run_app, fresh_room, monkeypatch):
    """Three tour steps on one page, each opened as a link (the browser's stale widget values
    that made followers leave on their own are the e2e test's and the benchmark's to show)."""
    leader = _lead(run_app(), fresh_room.key)
    leader.switch_page(page_file("tour")).run()
    follower = _follow_link(monkeypatch)
    assert follower.session_state["tour_step"] == 1
    for _ in range(3):
        leader.button(key="tour_next").click().run()
    follower.run()
    assert follower.session_state["tour_step"] == 4 and "tour_jump" in follower.session_state
    assert "You left" not in " ".join(i.value for i in follower.sidebar.info)


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
