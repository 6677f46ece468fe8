"""The lead link on the server's terminal: the server's addresses as Streamlit's own banner
names them, and ``pmapviz serve`` printing it once its server listens."""

import threading

import pytest
from streamlit import net_util

from pmapviz.app.ui import lead_link
from pmapviz.core.base import room
from tests.core.ui.test_url_state import server_options


@pytest.mark.parametrize(
    ("options", "bases"),
    [
        ({"server.address": "127.0.0.1"}, ["http://127.0.0.1:8600"]),
        ({"server.address": "0.0.0.0"}, ["http://localhost:8600", "http://198.51.100.23:8600"]),
        ({"server.address": "::"}, ["http://localhost:8600", "http://198.51.100.23:8600"]),
        (
            {"server.address": "0.0.0.0", "browser.serverAddress": "pods.example"},
            ["http://pods.example:8600"],
        ),
        ({"server.address": "0.0.0.0", "server.baseUrlPath": "viz"}, None),
    ],
)
def test_the_link_names_each_address_the_server_answers_at(monkeypatch, options, bases):
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "198.51.100.23")
    token = room.new_token()
    with server_options({"server.port": 8600, **options}):
        links = lead_link.links(token)
        said = lead_link.line(token)
    if bases is None:  # a base path: every link carries it
        assert links and all(link.startswith("http://") and "/viz/?lead=" in link for link in links)
    else:
        assert links == [f"{base}/?lead={token}" for base in bases]
    assert all(link in said for link in links) and "\n" not in said


def test_serve_says_the_link_once_its_server_listens_and_not_before(monkeypatch):
    state = {"exists": False}

    class FakeRuntime:
        @staticmethod
        def exists():
            return state["exists"]

        @staticmethod
        def instance():
            return type("R", (), {"state": lead_link.LISTENING[0]})()

    said: list[str] = []
    heard = threading.Event()
    monkeypatch.setattr(lead_link, "Runtime", FakeRuntime)
    monkeypatch.setattr(lead_link, "links", lambda token: [f"http://h:1/?lead={token}"])
    thread = lead_link.announce_when_listening("tok", lambda s: (said.append(s), heard.set()))
    assert not heard.wait(0.3) and not said  # not listening yet
    state["exists"] = True
    assert heard.wait(5)
    thread.join(5)
    assert said == [room.lead_link_line(["http://h:1/?lead=tok"])]
