"""The exercises as records: six along the tour, each with a task, a hint and a worked answer
in this server's numbers; every check judged with a right and a wrong answer on 8 devices here
and, in fresh processes, on 1 and 3 (JAX fixes the device count when it starts).

As a script (``python tests/features/exercises/test_exercisebook.py COUNT``) it is the walker
of one count: every exercise's answers judged on COUNT devices, one JSON line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pmapviz.features.exercises import exercisebook
from pmapviz.features.exercises.exercisebook import BY_KEY, EXERCISES

ROOT = Path(__file__).resolve().parents[3]
if __name__ != "__main__":  # the walker sets its own device count before JAX starts
    from pmapviz.core.base import valueparse
    from pmapviz.features.tour import toursteps
    from tests.conftest import TEST_DEVICES as N
# per exercise: a wrong answer on every count (the step's own mistake where it is wrong on
# one device too), and one more that is wrong where the devices make it so
WRONG = {
    "dot-pairs": ({"body": "jnp.vdot(x, y)"}, {"body": "jnp.sum(x * x, axis=-1)"}),
    "fit-devices": ({"shape": "{rows}, 3"}, {"shape": "{rows}, 2"}),
    "broadcast-w": ({"axis": "0"}, {"axis": "1"}),
    "ring-shift": ({"c": "axis_index", "perm": ""}, {"c": "ppermute", "perm": "0->0"}),
    "replicas-agree": ({"body": "g / 8"}, {"body": "lax.all_gather(g, 'i')"}),
    "block-spec": ({"spec": "P('i', 'i')"}, {"spec": "P('j')"}),
}
RIGHT_TOO = {  # another right answer than the worked one
    "dot-pairs": {"body": "jnp.sum(x * y, axis=-1)"},
    "fit-devices": {"shape": "1, {rows}, 3"},
    "broadcast-w": {"axis": "none"},
    "ring-shift": {"c": "ppermute", "perm": "ring right"},
    "replicas-agree": {"body": "lax.psum(g, 'i') / {n}"},
    "block-spec": {"spec": "None, i"},
}


def _texts(texts: dict, n: int) -> dict:
    return {k: v.format(rows=n + 2, n=n) for k, v in texts.items()}


def judge_all(n: int) -> dict:
    """Every exercise's worked answer, another right one and its wrong ones, judged on ``n``
    devices: {key: {"right": [solved...], "wrong": [(solved, kind)...]}}."""
    out = {}
    for e in EXERCISES:
        rights = [e.answer(n), _texts(RIGHT_TOO[e.key], n)]
        wrongs = [_texts(w, n) for w in WRONG[e.key]]
        out[e.key] = {
            "missing": e.missing(n),
            "right": [exercisebook.judge(e, t, n).solved for t in rights],
            "wrong": [
                [(j := exercisebook.judge(e, t, n)).solved, j.kind, j.checked] for t in wrongs
            ],
        }
    return out


def assert_judged(found: dict, n: int) -> None:
    assert set(found) == set(BY_KEY)
    for key, r in found.items():
        if n < BY_KEY[key].min_devices:  # it does not exist here: it says so, and judges nothing
            assert r["missing"].startswith("This exercise needs at least "), (key, n)
            assert f"this server has {n}." in r["missing"], (key, n)
            assert r["right"] == [False, False] and not any(w[2] for w in r["wrong"]), (key, r)
            continue
        assert r["missing"] is None and r["right"] == [True, True], (key, n)
        first, second = r["wrong"]
        assert first[0] is False and first[1] and first[2], (key, n, first)
        assert second[0] is False and second[1] and second[2], (key, n, second)


def test_six_exercises_along_the_tour_each_on_a_step_with_a_check():
    assert len(EXERCISES) >= 6 and len(BY_KEY) == len(EXERCISES)
    steps = [e.step for e in EXERCISES]
    assert steps == sorted(steps) and all(1 <= s <= len(toursteps.STEPS) for s in steps)
    kinds = {e.check.__module__.rsplit(".", 1)[1] for e in EXERCISES}
    assert kinds == {"planchecks", "runchecks", "programchecks"}
    for e in EXERCISES:
        assert exercisebook.on_step("tour", {"step": str(e.step)}).count(e) == 1
        assert e.task(N) and e.hint(N) and e.why(N) and e.answer(N)
        assert set(e.start(N)) == set(e.answer(N)) == {f.key for f in e.fields}
    assert exercisebook.on_step("explorer", {"step": "4"}) == []
    assert exercisebook.on_step("tour", {"step": "1"}) == []


@pytest.fixture(scope="module")
def judged_here() -> dict:
    return judge_all(N)


@pytest.mark.parametrize("key", list(BY_KEY))
def test_every_check_on_this_process_takes_the_right_answers_and_refuses_a_wrong_one(
    key, judged_here
):
    assert_judged({key: judged_here[key]} | {k: v for k, v in judged_here.items()}, N)
    assert judged_here[key]["wrong"][0][1]  # a kind for the room's count


def test_the_walk_fails_a_check_that_takes_everything_or_refuses_the_answer(monkeypatch):
    """The walk can fail: a check that solves every attempt, or one that refuses the worked
    answer, is caught on this process's devices."""
    from dataclasses import replace

    from pmapviz.features.exercises import verdicts

    for key, check in (
        ("broadcast-w", lambda values, n: verdicts.SOLVED),
        ("block-spec", lambda values, n: verdicts.wrong(verdicts.WRONG, "always wrong")),
    ):
        broken = replace(BY_KEY[key], check=check)
        monkeypatch.setitem(globals(), "EXERCISES", (broken,))  # judge_all's
        found = judge_all(N)
        with pytest.raises(AssertionError):
            assert_judged({k: found[key] for k in BY_KEY}, N)


def test_an_exercise_that_needs_more_devices_says_so_and_judges_nothing():
    ring = BY_KEY["ring-shift"]
    assert ring.min_devices == 2 and ring.missing(2) is None
    said = exercisebook.judge(ring, ring.answer(1), 1)
    assert not said.checked and said.words == ring.missing(1)
    assert said.words.startswith("This exercise needs at least 2 devices, and this server has 1.")
    assert "--devices 8" in said.words and said.kind == ""
    assert [e.key for e in EXERCISES if e.missing(1)] == ["ring-shift"]
    assert not [e.key for e in EXERCISES if e.missing(2)]


@pytest.mark.parametrize("n", [2, 5])
def test_the_tasks_numbers_follow_the_devices_used(n):
    """A check judged on fewer devices than this process has: its task's numbers, its worked
    answer and its refusal all speak of those devices."""
    fit = BY_KEY["fit-devices"]
    assert f"({n + 2}, 3)" in fit.task(n)
    assert exercisebook.judge(fit, fit.answer(n), n).solved
    wrong = exercisebook.judge(fit, fit.start(n), n)
    assert wrong.kind.endswith(f"(mapped axis {n + 2} > {n} devices)")


def test_a_setting_that_does_not_parse_is_named_and_its_text_kept_out_of_the_kind():
    fit = BY_KEY["fit-devices"]
    judged = exercisebook.judge(fit, {"shape": "<b>10**30</b>, 3"}, N)
    assert not judged.solved and judged.kind == "SettingError (shape of x not read)"
    assert "<b>10**30</b>" in judged.words  # the attendee's own page quotes it (as code)
    body = exercisebook.judge(BY_KEY["dot-pairs"], {"body": "__import__('os')"}, N)
    assert body.kind == "ExprError (f(x, y) not read)" and "os" not in body.kind


def test_the_answer_field_takes_an_exercise_or_nothing():
    field = exercisebook.answer_field()
    assert field.parse("fit-devices", "answer") == "fit-devices" and field.parse("", "a") == ""
    with pytest.raises(valueparse.SettingError):
        field.parse("<script>", "answer")
    assert "answer" in toursteps.schema().defaults()


# a long walk per count (tests/rotation.py): the every-run tests above, on this process's 8
@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    "count", [pytest.param(c, marks=pytest.mark.rotates(cpu_s=14)) for c in (1, 3, 16)]
)
def test_every_check_with_a_right_and_a_wrong_answer_on_this_many_devices(count):
    from tests.pages.test_every_device_count import fresh_process

    result, took = fresh_process(Path(__file__).resolve(), count, 300)
    print(f"{count} device(s): {took:.0f} s")
    assert result["devices"] == count
    assert_judged(result["judged"], count)


if __name__ == "__main__":  # the walker: python tests/features/exercises/test_exercisebook.py N
    import os

    sys.path.insert(0, str(ROOT))
    from pmapviz.core.devices import jaxstartup

    count = int(sys.argv[1])
    jaxstartup.apply(
        jaxstartup.parse_settings(["--devices", str(count), "--platform", "cpu"], os.environ)
    )
    import jax

    from tests.pages.test_every_device_count import MARK

    found = judge_all(count)
    print(MARK + json.dumps({"devices": jax.device_count(), "judged": found}), flush=True)
