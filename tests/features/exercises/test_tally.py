"""The room's count: per exercise, attendees who tried, who solved it, the commonest kinds of
the others' latest attempts; one mark per attendee, bounded, in this process only."""

import pytest

from pmapviz.features.exercises import tally, verdicts
from pmapviz.features.exercises.tally import Tally

STUCK = verdicts.wrong("IndivisibleError", "mapped axis 10 > 8 devices")
WRONG = verdicts.wrong("WrongResult", "x must keep its 30 elements")


def test_the_presenters_line_counts_the_solved_and_names_the_commonest_kind():
    t = Tally(["fit"])
    assert t.summary("fit").line() == "No attempts yet."
    for k in range(14):
        t.record("fit", f"a{k}", verdicts.SOLVED)
    for k in range(4):
        t.record("fit", f"b{k}", STUCK)
    for k in range(2):
        t.record("fit", f"c{k}", WRONG)
    s = t.summary("fit")
    assert (s.working, s.solved) == (20, 14)
    assert s.line() == "14 of 20 solved, 4 stuck on IndivisibleError (mapped axis 10 > 8 devices)"
    assert s.stuck == (
        ("IndivisibleError (mapped axis 10 > 8 devices)", 4),
        ("WrongResult (x must keep its 30 elements)", 2),
    )
    assert s.to_dict()["stuck"][0] == {"kind": STUCK.kind, "count": 4}


def test_an_attendee_counts_once_their_latest_kind_and_solved_stays_solved():
    t = Tally(["fit"])
    for _ in range(100):
        t.record("fit", "same", STUCK)
    t.record("fit", "same", WRONG)
    assert t.summary("fit").stuck == ((WRONG.kind, 1),) and t.summary("fit").working == 1
    t.record("fit", "same", verdicts.SOLVED)
    t.record("fit", "same", STUCK)  # exploring after solving it
    assert (t.summary("fit").solved, t.summary("fit").stuck) == (1, ())


def test_only_checked_attempts_at_known_exercises_count():
    t = Tally(["fit"])
    assert not t.record("fit", "a", verdicts.not_checked("too fast"))
    assert not t.record("<script>", "a", STUCK)
    assert t.summary("fit").working == 0 and t.summary("<script>").working == 0


def test_the_count_is_bounded_and_forgets_on_request(monkeypatch):
    monkeypatch.setattr(tally, "MAX_ATTENDEES", 10)
    t = Tally(["fit"])
    for k in range(25):
        t.record("fit", f"a{k}", STUCK if k < 20 else verdicts.SOLVED)
    s = t.summary("fit")
    assert (s.working, s.solved) == (10, 5)
    t.forget()
    assert t.summary("fit").working == 0


@pytest.mark.parametrize("top", [1, 3])
def test_at_most_the_top_kinds(top):
    t = Tally(["fit"])
    for k in range(6):
        t.record("fit", f"a{k}", verdicts.wrong("ValueError", f"rule {k}"))
    assert len(t.summary("fit", top=top).stuck) == top


def test_the_process_tally_knows_every_exercise():
    from pmapviz.features.exercises import exercisebook

    t = tally.tally()
    assert t is tally.tally() and all(t.summary(k).working >= 0 for k in exercisebook.BY_KEY)
