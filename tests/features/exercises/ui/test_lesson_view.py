"""A workshop replayed at home, in AppTest: the lesson file opened on the Guided tour opens its
first step; Next and Previous open each step as the room saw it (its page, its settings, the
shown answer); an old or changed file is one line and opens nothing."""

import json

from pmapviz.app.ui import room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from pmapviz.features.exercises.lessonfile import Lesson
from pmapviz.features.exercises.ui import lesson_view

STEPS = (
    room.Step("tour", (("step", "3"),)),
    room.Step("tour", (("answer", "fit-devices"), ("step", "4"))),
    room.Step("explorer", (("fn", "add"), ("s0", "8, 3"), ("s1", "8, 3"))),
)
LESSON = Lesson(STEPS, 8)


def _upload(at, data: bytes, name: str = "pmapviz-lesson.json"):
    at.expander[-1]  # the opener, at the page's end
    at.get("file_uploader")[0].set_value((name, data, "application/json")).run()
    return at


def _where(at) -> room.Step:
    return room.Step.of(at.session_state[room_panel.PAGE], dict(at.query_params))


def test_the_lesson_file_opens_its_first_step_and_each_step_reproduces_page_and_settings(
    run_app,
):
    at = _upload(run_app(page_file("tour")), LESSON.to_text().encode())
    assert _where(at) == STEPS[0] and at.header[0].value.startswith("3. ")
    bar = at.get("progress")[0].proto.text
    assert bar == "Lesson: step 1 of 3, Guided tour, step 3"
    at.button(key="lesson_next").click().run()
    assert _where(at) == STEPS[1]
    assert "The worked answer, shown to everyone:" in [i.value for i in at.info]
    at.button(key="lesson_next").click().run()
    here = _where(at)  # the explorer writes its whole link: the step's settings are in it
    assert here.page == "explorer" and set(STEPS[2].query) <= set(here.query)
    assert at.text_input(key="ex_s0").value == "8, 3" and at.text_input(key="ex_s1").value == "8, 3"
    at.switch_page(page_file("tour")).run()  # back on the tour: the lesson is where it was
    assert at.get("progress")[0].proto.text.startswith("Lesson: step 3 of 3, Shapes & sharding")
    assert at.button(key="lesson_next").disabled
    at.button(key="lesson_prev").click().run()
    assert _where(at) == STEPS[1]
    at.button(key="lesson_close").click().run()
    assert lesson_view.LESSON not in at.session_state
    assert not [p for p in at.get("progress") if p.proto.text.startswith("Lesson")]


def test_an_old_or_changed_lesson_is_one_line_and_opens_nothing(run_app):
    old = json.dumps(LESSON.to_dict() | {"version": 0}).encode()
    at = _upload(run_app(page_file("tour")), old)
    assert [e.value for e in at.error] == [
        "This lesson file is from another version of pmapviz (lesson format 0); this pmapviz "
        "reads format 1. Record the lesson again with this version."
    ]
    assert lesson_view.LESSON not in at.session_state
    changed = LESSON.to_dict()
    changed["steps"][2]["query"]["s0"] = "<img src=x onerror=alert(1)>"
    at = _upload(at, json.dumps(changed).encode(), "changed.json")
    [said] = [e.value for e in at.error]
    assert said.startswith("This lesson file was changed or damaged: step 3 (Shapes & sharding)")
    assert "\n" not in said and "`<img" in said  # quoted as code: shown as text
    assert lesson_view.LESSON not in at.session_state and _where(at).page == "tour"
