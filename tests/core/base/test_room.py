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


# -- who leads: the one-time lead link, the leader's pass and its presence (issue 65) ---------


def test_a_lead_link_opens_once_and_its_pass_is_the_rooms_one():
    the = room.Room(room.new_key())
    token = the.invite()
    assert len(token) == 32 and set(token) <= room.KEY_CHARS
    given = the.redeem(token)
    assert given and the.holds(given) and not the.holds(token) and not the.holds(the.key)
    assert the.redeem(token) is None  # spent: a second open leads no one
    assert the.holds(given)  # and takes nothing from the one who opened it


def test_a_new_lead_link_kills_the_unspent_one_and_its_pass_replaces_the_leaders():
    the = room.Room(room.new_key())
    first = the.invite()
    second = the.invite()
    assert the.redeem(first) is None
    a = the.redeem(second)
    b = the.redeem(the.invite())
    assert a != b and the.holds(b) and not the.holds(a)  # one leader: the newest
    c = the.admit(the.key)  # the key typed elsewhere replaces it too
    assert c and the.holds(c) and not the.holds(b)
    assert the.admit("not-the-key-123") is None and the.holds(c)


def test_the_first_lead_link_is_made_once_per_room():
    the = room.Room(room.new_key())
    token = the.first_invite()
    assert token and the.first_invite() is None
    assert the.redeem(token)


@pytest.mark.parametrize("bad", ["", None, 42, ["x"], "x" * 33, "a" * (room.MAX_TOKEN + 1)])
def test_nothing_but_the_token_opens_a_lead_link(bad):
    the = room.Room(room.new_key())
    token = the.invite()
    assert the.redeem(bad) is None and the.redeem(token + "x") is None
    assert the.redeem(token)  # what was refused spent nothing
    assert not the.holds(bad)


def test_a_pass_lasts_its_ttl_and_is_revoked_by_stopping(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    the = room.Room(room.new_key())
    given = the.admit(the.key)
    assert the.pass_left_s() == room.PASS_TTL_S
    clock[0] += room.PASS_TTL_S - 1
    assert the.holds(given) and the.pass_left_s() == 1
    clock[0] += 2
    assert not the.holds(given) and not the.heard_leader(given, "tab")
    assert not the.lead(given, room.Step.of("tour", {}))  # an expired pass publishes nothing
    given = the.admit(the.key)
    the.revoke("someone-elses-pass")
    assert the.holds(given)
    the.revoke(given)
    assert not the.holds(given) and the.pass_left_s() == 0 and not the.leader_present()


def test_the_leader_is_present_while_it_polls_and_away_after_a_silence(monkeypatch):
    clock = [50.0]
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    the = room.Room(room.new_key())
    assert the.leader_seen() is None and not the.leader_present()  # no leader yet
    given = the.redeem(the.invite())
    assert not the.leader_present()  # its page has not polled yet
    for _ in range(10):  # it polls every half second
        clock[0] += 0.5
        assert the.heard_leader(given, "tab") and the.leader_present()
    clock[0] += room.LEADER_SILENCE_S  # silent (a frozen page, a lost network)
    assert the.leader_present()  # not yet: exactly the threshold
    clock[0] += 0.01
    assert not the.leader_present() and the.leader_seen() > room.LEADER_SILENCE_S
    assert the.heard_leader(given, "tab") and the.leader_present()  # back
    the.redeem(the.invite())  # another browser leads now: the old pass is heard no more
    assert not the.heard_leader(given, "tab") and not the.leader_present()


def test_a_leaders_closed_page_is_away_at_once_and_its_reload_present_again(monkeypatch):
    clock = [50.0]
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    the = room.Room(room.new_key())
    given = the.admit(the.key)
    closed: set[str] = set()
    the.heard_leader(given, "first")
    assert the.leader_present(connected=lambda s: s not in closed)
    closed.add("first")  # its page closed (or reloads): no silence to wait for
    assert not the.leader_present(connected=lambda s: s not in closed)
    clock[0] += 0.3
    the.heard_leader(given, "reloaded")  # the reload's session, with the pass its browser kept
    assert the.leader_present(connected=lambda s: s not in closed)
    for i in range(room.MAX_LEADER_SESSIONS * 3):  # many tabs: the sessions kept are bounded
        the.heard_leader(given, f"tab{i}")
    assert len(the._leaders) == room.MAX_LEADER_SESSIONS
    the.revoke(given)  # stopped: no leader at once, whatever its pages do
    assert not the.leader_present() and not the.heard_leader(given, "tab0")


def test_the_terminal_names_the_key_and_the_lead_links_on_one_line_each():
    key, links = (
        room.new_key(),
        ["http://localhost:8501/?lead=abc", "http://10.1.2.3:8501/?lead=abc"],
    )
    said = room.terminal_line(key)
    assert key in said and "\n" not in said
    first, after = room.lead_link_line(links), room.lead_link_line(links, first=False)
    assert all(link in first and link in after for link in links)
    assert "opens once" in first and "next one" in after and "\n" not in first + after


def test_the_room_keeps_its_path_every_new_step_once_bounded(monkeypatch):
    """The room's path (for a lesson): each step the leader led to, in order, with when; a
    step led again unchanged is not a new one; the latest MAX_PATH kept."""
    monkeypatch.setattr(room, "MAX_PATH", 5)
    the = room.Room(room.new_key())
    steps = [room.Step("tour", (("step", str(k)),)) for k in range(1, 4)]
    for step in (steps[0], steps[0], steps[1], steps[2]):
        the.lead(the.key, step)
    assert [s for _, s in the.path()] == steps
    times = [t for t, _ in the.path()]
    assert times == sorted(times)
    for k in range(10):
        the.lead(the.key, room.Step("explorer", (("s0", str(k)),)))
    assert len(the.path()) == 5 and the.path()[-1][1].query_dict() == {"s0": "9"}
    assert not the.lead("not-the-key", steps[0]) and len(the.path()) == 5
