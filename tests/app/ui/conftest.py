"""AppTest fixtures for the app's Streamlit parts: the page tests' own, and a room of a test's
own."""

import pytest

from pmapviz.core.base import room
from tests.pages.conftest import run_app  # noqa: F401  (the fixture)


@pytest.fixture()
def fresh_room(monkeypatch):
    """A room of this test's own (the process's room outlives a test). An AppTest leader is
    heard only when the test runs it, so its silence counts as presence here (the presence
    tests put the threshold back)."""
    made = room.Room(room.new_key())
    monkeypatch.setattr(room, "_ROOM", [made])
    monkeypatch.setattr(room, "LEADER_SILENCE_S", 3600.0)
    return made
