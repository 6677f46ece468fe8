"""A lesson: the room's path as a file, versioned, bounded and checked through every page's
schemas when read; an old or changed file gets one clear line, never a half-read lesson."""

import json

import pytest

from pmapviz.app.page_registry import PAGES
from pmapviz.core.base import room
from pmapviz.features.exercises import lessonfile
from pmapviz.features.exercises.lessonfile import Lesson, LessonError

TOUR4 = room.Step("tour", (("step", "4"),))
ANSWER = room.Step("tour", (("answer", "fit-devices"), ("step", "4")))
EXPLORER = room.Step("explorer", (("fn", "add"), ("s0", "8, 3"), ("s1", "8, 3")))


def _lesson_text(**changes) -> str:
    data = Lesson((TOUR4, ANSWER, EXPLORER), 8).to_dict() | changes
    return json.dumps(data)


def test_a_path_becomes_a_lesson_without_a_sessions_own_keys_and_edits_in_progress():
    typing = [room.Step("explorer", (("fn", "add"), ("s0", t))) for t in ("8", "8,", "8, 3")]
    path = [
        (0.0, room.Step("tour", (("on", "cpu"), ("present", "1"), ("step", "4")))),
        (5.0, typing[0]),
        (5.3, typing[1]),
        (5.6, typing[2]),
        (9.0, ANSWER),
    ]
    lesson = lessonfile.from_path(path, 8)
    assert lesson.steps == (TOUR4, typing[2], ANSWER) and lesson.devices == 8


def test_a_lesson_reads_back_step_for_step():
    lesson = Lesson((TOUR4, ANSWER, EXPLORER), 8)
    assert lessonfile.read(lesson.to_text(), PAGES) == lesson
    assert lessonfile.read(lesson.to_text().encode(), PAGES).steps[1].query_dict() == {
        "answer": "fit-devices",
        "step": "4",
    }


@pytest.mark.parametrize(
    "text, says",
    [
        (_lesson_text(version=0), "from another version of pmapviz (lesson format 0)"),
        (_lesson_text(version="1"), "lesson format ?"),
        ("{}", "not a pmapviz lesson"),
        ("[" * 150_000 + "]" * 150_000, "is at most"),
        ("[" * 50_000 + "]" * 50_000, "not a pmapviz lesson"),
        ("not json", "not a pmapviz lesson"),
        ("\udcff", "not a pmapviz lesson"),
        (_lesson_text(devices=0), "device count"),
        (_lesson_text(steps=[]), "1 to 500 steps"),
        (_lesson_text(steps=[{"page": "admin", "query": {}}]), "names no page"),
        (_lesson_text(steps=[{"page": "tour", "query": {"step": "99"}}]), "step 1 (Guided tour)"),
        (_lesson_text(steps=[{"page": "tour", "query": {"zz": "1"}}]), "does not have"),
        (_lesson_text(steps=[{"page": "tour", "query": {"step": 4}}]), "not a link's"),
        (_lesson_text(steps=[{"page": "tour", "query": {}, "x": 1}]), "not a page and its"),
        (
            _lesson_text(
                steps=[{"page": "explorer", "query": {"s0": "<script>alert(1)</script>"}}]
            ),
            "step 1 (Shapes & sharding)",
        ),
        (
            _lesson_text(steps=[{"page": "tour", "query": {"answer": "__import__('os')"}}]),
            "changed or damaged",
        ),
    ],
)
def test_an_old_or_changed_file_gets_one_clear_line(text, says):
    with pytest.raises(LessonError) as err:
        lessonfile.read(text.encode("utf-8", "surrogatepass"), PAGES)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_lesson_is_bounded():
    big = Lesson((TOUR4,) * (lessonfile.MAX_STEPS + 1), 8)
    with pytest.raises(LessonError):
        lessonfile.read(big.to_text(), PAGES)
    path = [(float(k) * 2, room.Step("tour", (("step", str(1 + k % 11)),))) for k in range(900)]
    assert len(lessonfile.from_path(path, 8).steps) == lessonfile.MAX_STEPS


def test_each_step_is_checked_on_the_count_it_was_recorded_on():
    """A lesson recorded on 8 devices reads on a machine of 1: its 8-device settings were
    valid there (opening the step, the page replaces what does not fit here, with a note)."""
    on8 = Lesson((room.Step("collectives", (("c", "psum"), ("n", "8"))),), 8)
    assert lessonfile.read(on8.to_text(), PAGES) == on8
    with pytest.raises(LessonError):
        lessonfile.read(Lesson(on8.steps, 4).to_text(), PAGES)
