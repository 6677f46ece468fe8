"""The presenter's view of the room's pace, in AppTest: one server process, a leader and
attendees as sessions of it. The leader's sidebar counts the attempts of the step's exercise
("0 of 3 solved, 2 stuck on ..."), never shows what an attendee typed, and one click shows the
worked answer to everyone (the room's step, which followers switch to)."""

import pytest

from pmapviz.app.ui import room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from pmapviz.features.exercises import attempts, exercisebook, lessonfile, tally
from pmapviz.features.exercises.tally import Tally
from pmapviz.features.exercises.ui import exercise_box
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text, open_link

N = TEST_DEVICES
FIT = exercisebook.BY_KEY["fit-devices"]
MARKER = "987654321"  # typed by one attendee: it must reach no other page, in any form
FORMS = (MARKER, f"{int(MARKER):_}", f"{int(MARKER):,}")


@pytest.fixture()
def fresh(monkeypatch):
    made = room.Room(room.new_key())
    monkeypatch.setattr(room, "_ROOM", [made])
    monkeypatch.setattr(tally, "_TALLY", [Tally(exercisebook.BY_KEY)])
    monkeypatch.setattr(attempts, "_PACE", type(attempts._PACE)())
    return made


def _leader_on_step_4(run_app, the: room.Room):
    at = run_app()
    at.sidebar.text_input(key="room_typed").set_value(the.key).run()
    at.sidebar.button(key="room_lead").click().run()
    at.switch_page(page_file("tour")).run()
    at.selectbox(key="tour_jump").set_value(4).run()
    assert the.latest()[1] == room.Step("tour", (("step", "4"),))
    return at.run()  # the leader's poll: its sidebar drawn on the step's link


def _attempt(monkeypatch, shape: str):
    """An attendee following the room: they type ``shape`` and press Check."""
    at = open_link(monkeypatch, None, {"follow": "1"})
    assert at.session_state[room_panel.PAGE] == "tour"
    at.text_input(key=exercise_box.widget_key(FIT, "shape")).set_value(shape).run()
    at.button(key="exercise_check_fit-devices").click().run()
    return at


def _sidebar(at) -> list[str]:
    """The sidebar's words: captions, markdown, and the progress bars' lines."""
    side = at.sidebar
    return (
        [c.value for c in side.caption]
        + [m.value for m in side.markdown]
        + [p.proto.text for p in side.get("progress")]
    )


def test_the_leader_sees_the_count_and_the_commonest_kind_and_no_attendees_text(
    run_app, fresh, monkeypatch
):
    leader = _leader_on_step_4(run_app, fresh)
    assert "No attempts yet." in _sidebar(leader)
    attendees = [
        _attempt(monkeypatch, f"{N + 2}, 3"),
        _attempt(monkeypatch, f"{MARKER}, 3"),
        _attempt(monkeypatch, f"{N + 2}, 3"),
        _attempt(monkeypatch, "5, 2, 3"),
    ]
    leader.run()  # the leader's poll
    said = _sidebar(leader)
    stuck = f"IndivisibleError (mapped axis {N + 2} > {N} devices)"
    assert f"1 of 4 solved, 2 stuck on {stuck}" in said
    assert "1 stuck on WrongResult (x must keep its 30 elements)" in said
    [bar] = [p for p in leader.sidebar.get("progress") if "solved" in p.proto.text]
    assert bar.proto.value == 25  # 1 of 4 solved: a quarter of the bar
    for other in (leader, attendees[0], attendees[2], attendees[3]):
        shown = all_text(other.run()) + "\n".join(_sidebar(other))
        assert not any(form in shown for form in FORMS)
    assert any(form in all_text(attendees[1]) for form in FORMS)  # their own page quotes it


def test_one_click_shows_the_worked_answer_to_everyone(run_app, fresh, monkeypatch):
    leader = _leader_on_step_4(run_app, fresh)
    follower = _attempt(monkeypatch, f"{N + 2}, 3")
    assert "The worked answer, shown to everyone:" not in [i.value for i in follower.info]
    leader.sidebar.button(key="room_answer_fit-devices").click().run()
    version, step = fresh.latest()
    assert step == room.Step("tour", (("answer", "fit-devices"), ("step", "4")))
    assert leader.sidebar.button(key="room_answer_fit-devices").disabled
    follower.run()  # its poll: it switches to the step with the answer
    assert follower.session_state[room_panel.SYNCED] == version
    assert "The worked answer, shown to everyone:" in [i.value for i in follower.info]
    assert [s for _, s in fresh.path()][-2:] == [room.Step("tour", (("step", "4"),)), step]


def test_the_lesson_of_the_room_is_its_path(run_app, fresh):
    leader = _leader_on_step_4(run_app, fresh)
    leader.sidebar.button(key="room_answer_fit-devices").click().run()
    lesson = lessonfile.from_path(fresh.path(), N)
    assert lesson.steps[-1].query_dict() == {"answer": "fit-devices", "step": "4"}
    from pmapviz.app.page_registry import PAGES

    assert lessonfile.read(lesson.to_text(), PAGES) == lesson


def _leader_on_the_ring_step():
    from pmapviz.core.base import room
    from pmapviz.features.exercises.ui import exercise_room

    exercise_room.leader_view(room.Room(room.new_key()), room.Step("tour", (("step", "6"),)))


def test_on_one_device_the_leader_is_told_the_ring_exercise_does_not_exist_there(monkeypatch):
    """The ring shift needs two devices: on one, the leader's view says so in its line (no
    count, no bar), and the worked answer can still be shown."""
    from types import SimpleNamespace

    from streamlit.testing.v1 import AppTest

    from pmapviz.features.exercises.ui import exercise_room

    monkeypatch.setattr(exercise_room.shell, "device_report", lambda: SimpleNamespace(count=1))
    ring = exercisebook.BY_KEY["ring-shift"]
    at = AppTest.from_function(_leader_on_the_ring_step, default_timeout=60).run()
    assert not at.exception
    assert [c.value for c in at.caption] == [ring.missing(1)]
    assert not at.get("progress")
    assert at.button(key="room_answer_ring-shift").label == "Show the answer to everyone"
