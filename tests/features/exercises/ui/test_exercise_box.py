"""An exercise on its tour step, in AppTest: the task, Check, the attendee's own result
("Solved.", or the rule, pmapviz's words and JAX's own, as a warning: never the page's error),
the hint and worked answer on request, the worked answer open where the link says answer=;
what was typed shows as text, and the room's count gets its kind only."""

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.features.exercises import attempts, exercisebook, tally
from pmapviz.features.exercises.tally import Tally
from pmapviz.features.exercises.ui import exercise_box
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import texts
from tests.pages.conftest import open_link

N = TEST_DEVICES
FIT = exercisebook.BY_KEY["fit-devices"]
SHAPE = exercise_box.widget_key(FIT, "shape")
CHECK = "exercise_check_fit-devices"


@pytest.fixture()
def fresh(monkeypatch):
    made = Tally(exercisebook.BY_KEY)
    monkeypatch.setattr(tally, "_TALLY", [made])
    monkeypatch.setattr(attempts, "_PACE", type(attempts._PACE)())
    return made


def _step(monkeypatch, step: int, **query):
    return open_link(monkeypatch, page_file("tour"), {"step": str(step), **query})


def test_the_step_carries_its_exercise_and_check_gives_jaxs_own_words(monkeypatch, fresh):
    at = _step(monkeypatch, 4)
    assert f"Exercise: {FIT.title}" in [s.value for s in at.subheader]
    assert at.text_input(key=SHAPE).value == f"{N + 2}, 3"  # the step's mistake, to fix
    at.button(key=CHECK).click().run()
    assert not at.error and not at.exception
    said = [w.value for w in at.warning if w.value.startswith("Not yet")]
    assert len(said) == 1 and said[0].startswith(f"Not yet: mapped axis {N + 2} > {N} devices.")
    assert "What JAX itself says (IndivisibleError):" in [c.value for c in at.caption]
    assert any("IndivisibleError:" in c.value for c in at.code)
    assert fresh.summary("fit-devices").line() == (
        f"0 of 1 solved, 1 stuck on IndivisibleError (mapped axis {N + 2} > {N} devices)"
    )


def test_a_right_answer_is_solved_and_counted(monkeypatch, fresh):
    at = _step(monkeypatch, 4)
    at.text_input(key=SHAPE).set_value("5, 2, 3").run()
    at.button(key=CHECK).click().run()
    assert [s.value for s in at.success] == ["Solved."]
    assert (fresh.summary("fit-devices").working, fresh.summary("fit-devices").solved) == (1, 1)


def test_markup_and_huge_numbers_show_as_text_on_the_attendees_page_only(monkeypatch, fresh):
    at = _step(monkeypatch, 4)
    at.text_input(key=SHAPE).set_value("<b>boom</b>, 10**30").run()
    at.button(key=CHECK).click().run()
    warning = next(w.value for w in at.warning if w.value.startswith("Not yet"))
    assert "`<b>boom</b>" in warning  # quoted as code: text, not markup
    assert not at.exception and not at.error
    [(kind, count)] = fresh.summary("fit-devices").stuck
    assert kind == "SettingError (shape of x not read)" and count == 1


def test_hint_and_worked_answer_wait_for_a_request_unless_the_link_shows_it(monkeypatch, fresh):
    at = _step(monkeypatch, 4)
    labels = [e.label for e in at.expander]
    assert "Hint" in labels and "Worked answer" in labels
    assert "The worked answer, shown to everyone:" not in [i.value for i in at.info]
    shown = _step(monkeypatch, 4, answer="fit-devices")
    assert "The worked answer, shown to everyone:" in [i.value for i in shown.info]
    assert "Worked answer" not in [e.label for e in shown.expander]
    assert "shape of x: " + FIT.answer(N)["shape"] in texts(shown)
    assert shown.query_params["answer"] in ("fit-devices", ["fit-devices"])  # kept in its link
    shown.button(key="tour_next").click().run()  # the next step opens with its task
    assert "answer" not in shown.query_params


@pytest.mark.parametrize("exercise", exercisebook.EXERCISES, ids=lambda e: e.key)
def test_every_exercise_is_on_its_step_and_its_worked_answer_solves_it(monkeypatch, exercise):
    at = _step(monkeypatch, exercise.step)
    assert f"Exercise: {exercise.title}" in [s.value for s in at.subheader]
    for key, text in exercise.answer(N).items():
        widget = exercise_box.widget_key(exercise, key)
        if exercise.options(key):
            at.selectbox(key=widget).set_value(text).run()
        else:
            at.text_input(key=widget).set_value(text).run()
    at.button(key=f"exercise_check_{exercise.key}").click().run()
    assert "Solved." in [s.value for s in at.success], texts(at)


def _ring_on_one_device():
    from pmapviz.features.exercises.ui import exercise_box

    exercise_box.show("tour", {"step": "6"}, 1)


def test_an_exercise_that_needs_two_devices_says_so_on_one_and_offers_no_check(fresh):
    """On one device the ring shift does not exist (every value is its own neighbour's): the
    box says so in one line, has no boxes and no Check, keeps its hint and worked answer, and
    the room's count gets nothing."""
    from streamlit.testing.v1 import AppTest

    ring = exercisebook.BY_KEY["ring-shift"]
    at = AppTest.from_function(_ring_on_one_device, default_timeout=60).run()
    assert not at.exception and not at.error
    assert [i.value for i in at.info] == [ring.missing(1)]
    assert ring.missing(1).startswith("This exercise needs at least 2 devices")
    assert not at.button and not at.selectbox and not at.text_input
    assert [e.label for e in at.expander] == ["Hint", "Worked answer"]
    assert attempts.attempt(ring, ring.answer(1), "someone", 1).words == ring.missing(1)
    assert fresh.summary("ring-shift").working == 0
