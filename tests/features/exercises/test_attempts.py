"""An attendee's attempt: paced (hostile floods judge nothing and count nowhere but their own
mark), judged once per distinct answer, counted under an opaque token."""

import pytest

from pmapviz.features.exercises import attempts, exercisebook, tally
from pmapviz.features.exercises.tally import Tally
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
FIT = exercisebook.BY_KEY["fit-devices"]


@pytest.fixture()
def fresh(monkeypatch):
    """A tally, a pace and kept judgements of this test's own."""
    made = Tally(exercisebook.BY_KEY)
    monkeypatch.setattr(tally, "_TALLY", [made])
    monkeypatch.setattr(attempts, "_PACE", type(attempts._PACE)())
    monkeypatch.setattr(attempts, "_KEPT", type(attempts._KEPT)())
    return made


def test_the_token_is_a_hash_of_the_session_never_the_session():
    token = attempts.attendee("a-session-id-1234")
    assert token == attempts.attendee("a-session-id-1234") != attempts.attendee("another")
    assert "session" not in token and len(token) == 16


def test_a_burst_then_one_a_second(fresh):
    t0 = 1000.0
    allowed = [attempts.paced("a", t0) for _ in range(attempts.BURST + 3)]
    assert allowed == [True] * attempts.BURST + [False] * 3
    assert attempts.paced("a", t0 + attempts.EVERY_S) and not attempts.paced("a", t0 + 1.01)
    assert attempts.paced("b", t0)  # another attendee has their own


def test_ten_thousand_attempts_a_minute_change_no_count_but_their_own(fresh):
    """One client floods: a few are judged, the rest are not checked; every other count is as
    it was, and the flooder is one attendee with one kind."""
    for k in range(5):
        attempts.attempt(FIT, {"shape": "5, 2, 3"}, f"solver{k}", N)
    before = fresh.summary("fit-devices")
    judged = []
    fit = exercisebook.Exercise(**{**FIT.__dict__, "check": _counting(judged)})
    t0 = 1e6
    results = [  # 10,000 in 60 s, each a new hostile text
        attempts.attempt(fit, {"shape": f"<b>{k}</b>, 10**30"}, "flooder", N, t0 + k * 0.006)
        for k in range(10_000)
    ]
    checked = [r for r in results if r.checked]
    assert len(checked) <= attempts.BURST + 61
    assert all(r.words == attempts.TOO_FAST for r in results if not r.checked)
    after = fresh.summary("fit-devices")
    assert (after.working, after.solved) == (before.working + 1, before.solved)
    assert after.stuck == (("SettingError (shape of x not read)", 1),)
    assert all("<b>" not in kind and "10" not in kind for kind, _ in after.stuck)
    assert judged == []  # none parsed: the check itself never ran


def _counting(calls):
    def check(values, n):
        calls.append(values)
        return exercisebook.verdicts.SOLVED

    return check


def test_the_same_answer_is_judged_once(fresh, monkeypatch):
    calls = []
    fit = exercisebook.Exercise(**{**FIT.__dict__, "check": _counting(calls)})
    for who in ("a", "b", "c"):
        assert attempts.attempt(fit, {"shape": "5, 2, 3"}, who, N).solved
    attempts.attempt(fit, {"shape": "(5,2,3)"}, "d", N)  # the same parsed shape
    attempts.attempt(fit, {"shape": "2, 5, 3"}, "e", N)
    assert len(calls) == 2 and fresh.summary("fit-devices").solved == 5


def test_an_attempt_not_checked_now_is_not_kept(fresh, monkeypatch):
    calls = []

    def busy(values, n):
        calls.append(1)
        return exercisebook.verdicts.not_checked("the memory is busy")

    fit = exercisebook.Exercise(**{**FIT.__dict__, "check": busy})
    for _ in range(2):
        assert not attempts.attempt(fit, {"shape": "5, 2, 3"}, "a", N).checked
    assert len(calls) == 2 and fresh.summary("fit-devices").working == 0
