"""The room: the presenter key, what a step carries, and who may lead."""

import threading

import pytest

from pmapviz.core.base import room
from pmapviz.core.base.valueparse import SettingError


def test_a_fresh_key_is_url_safe_long_and_accepted_by_the_parser():
    keys = {room.new_key() for _ in range(50)}
    assert len(keys) == 50  # no two alike
    for key in keys:
        assert len(key) == 16 and set(key) <= room.KEY_CHARS
        assert room.parse_key(key) == key


BAD_KEYS = ["short", "x" * 129, "has space 123", "quote'12345678", "ключключключ"]


@pytest.mark.parametrize("bad", BAD_KEYS)
def test_a_bad_key_gets_one_line_with_a_valid_example(bad):
    with pytest.raises(SettingError) as err:
        room.parse_key(bad)
    text = str(err.value)
    assert "\n" not in text and room.FLAG in text and f"got {len(bad)} characters" in text
    example = text.rsplit(" ", 1)[1]
    assert room.parse_key(example) == example  # the fix offered works


def test_only_the_key_leads_and_the_compare_is_hmacs():
    r = room.Room("k" * 16)
    step = room.Step.of("tour", {"step": "3"})
    for wrong in ("", None, 42, "k" * 15, "k" * 17, "K" * 16, ["k" * 16]):
        assert not r.lead(wrong, step)
    assert r.latest() == (0, None)
    assert r.lead("k" * 16, step) and r.latest() == (1, step)
    assert r.lead("k" * 16, step) and r.latest()[0] == 1  # the same step: no new version
    assert r.lead(" " + "k" * 16 + "\n", room.Step.of("", {})) and r.latest()[0] == 2


def test_a_step_never_carries_the_key_or_anyones_own_choices_and_is_bounded():
    query = {"present": "1", "follow": "1", "key": "secret", "presenter_key": "s", "a": "8"}
    query |= {f"k{i:03}": "v" * 10_000 for i in range(100)}
    step = room.Step.of("explorer", query)
    keys = [k for k, _ in step.query]
    assert not set(keys) & room.PRIVATE_KEYS and "a" in keys
    assert len(step.query) == room.MAX_QUERY_KEYS
    assert max(len(v) for _, v in step.query) == room.MAX_VALUE
    assert step == room.Step.of("explorer", dict(reversed(list(query.items()))))  # order-free


def test_followers_are_counted_while_they_poll_and_forgotten_within_a_bound(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    r = room.Room("k" * 16)
    for i in range(3):
        r.latest(f"s{i}")
    assert r.following() == 3
    clock[0] += room.FOLLOWER_SILENCE_S + 1
    r.latest("s0")
    assert r.following() == 1
    for i in range(room.MAX_FOLLOWERS + 10):
        r.latest(f"t{i}")
    assert len(r._seen) <= room.MAX_FOLLOWERS


def test_one_room_per_process_announced_once_and_only_when_made_here(monkeypatch):
    said = []
    monkeypatch.setattr(room, "_ROOM", [])
    made = room.room(None, said.append)
    assert room.room(None, said.append) is made and len(said) == 1 and made.key in said[0]
    monkeypatch.setattr(room, "_ROOM", [])
    given = room.room("g" * 12, said.append)
    assert given.key == "g" * 12 and len(said) == 1  # a key the operator chose is not printed


def test_concurrent_leaders_make_one_version_per_change():
    r = room.Room("k" * 16)
    steps = [room.Step.of("tour", {"step": str(i % 2)}) for i in range(200)]
    threads = [threading.Thread(target=r.lead, args=("k" * 16, s)) for s in steps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    version, step = r.latest()
    assert 1 <= version <= 200 and step in steps


def test_a_follower_forgotten_is_not_counted():
    the = room.Room(room.new_key())
    the.latest("a")
    the.latest("b")
    the.forget("a")
    the.forget("never-seen")
    assert the.following() == 1
