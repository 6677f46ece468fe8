"""A shared result on a page: its key names the device set, and its line says whose run it
is, the presenter's, another session's or this session's own, and when it was computed."""

import time

import pytest

from pmapviz.core.devices import deviceset
from pmapviz.core.running import sharedresults
from pmapviz.core.running.sharedresults import Key, Shared, SharedResults
from pmapviz.core.ui import shared_run
from tests.core.ui.conftest import render


def _entry(by: str, owner: str, finished: float) -> Shared:
    return Shared(1, Key.of("live", {}, "cpu:8"), finished, 2.5, by, owner, 100)


def test_the_line_says_whose_run_and_when_it_was_computed():
    finished = time.mktime((2026, 12, 7, 21, 40, 5, 0, 0, -1))
    presenter = shared_run.words(_entry("the presenter", "lead-1", finished), "me")
    assert presenter.startswith("The presenter's run of these settings, shared: computed once")
    assert "at 21:40:05 (server time) in 2.5 s" in presenter and "times included" in presenter
    other = shared_run.words(_entry(shared_run.ANOTHER, "s-2", finished), "me")
    assert other.startswith("Another session's run") and "The presenter" not in other
    mine = shared_run.words(_entry("the presenter", "me", finished), "me")
    assert mine.startswith("Your run, computed at 21:40:05") and "shared" not in mine


def test_the_key_names_the_pages_device_set_and_count():
    with deviceset.use("cpu"):
        a = shared_run.key("live", {"pairs": 8}, 8)
        assert a != shared_run.key("live", {"pairs": 8}, 4)
    assert a.devices == "cpu:8" and a.settings == (("pairs", "8"),)


def _page(label: str) -> None:
    from pmapviz.core.running.sharedresults import Key
    from pmapviz.core.ui import shared_run

    shared_run.runs_by(lambda: label or None)
    entry = shared_run.run(Key.of("test", {"label": label}, "cpu:8"), lambda: 42)
    shared_run.caption(entry)


@pytest.mark.parametrize("label", ["the presenter", ""])
def test_a_run_is_stamped_with_who_ran_it_and_its_session_sees_it_as_its_own(label, monkeypatch):
    cache = SharedResults(hold=None)
    monkeypatch.setattr(sharedresults, "_SHARED", cache)
    monkeypatch.setattr(shared_run, "_WHO", [])
    at = render(_page, label)
    assert not at.exception
    (entry,) = [cache.peek(Key.of("test", {"label": label}, "cpu:8"))]
    assert entry.value == 42 and entry.by == (label or shared_run.ANOTHER) and entry.owner
    assert "Your run, computed at" in at.caption[0].value
    assert cache.computed == 1
