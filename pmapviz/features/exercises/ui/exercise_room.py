"""The presenter's view of the room's pace, in the leader's sidebar panel (drawn by its fragment,
which reruns every poll, so the counts follow within a second): for each exercise of the step
the room is on, "14 of 20 solved, 4 stuck on IndivisibleError (mapped axis 10 > 8 devices)"
and the next commonest kinds, and one click that shows the worked answer to everyone (the
leader's own step, with ``answer=``, which the room then follows). And the lesson: the room's
path so far, as a file an attendee replays at home.
"""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import room
from pmapviz.core.ui import shell
from pmapviz.features.exercises import exercisebook, lessonfile, tally
from pmapviz.features.exercises.ui.exercise_box import ANSWER_STATE

LESSON_NAME = "pmapviz-lesson.json"


def leader_view(the: room.Room, here: room.Step) -> None:
    """The counts of the exercises on ``here`` (the leader's step), the answer for everyone,
    and the lesson so far."""
    query = here.query_dict()
    for exercise in exercisebook.on_step(here.page, query):
        st.markdown(f"**Exercise: {exercise.title}**")
        missing = exercise.missing(shell.device_report().count)
        if missing is not None:  # no attempts on these devices: nothing to count
            st.caption(missing)
        else:
            counts(tally.tally().summary(exercise.key))
        shown = exercise.key in (
            query.get(exercisebook.ANSWER_KEY),
            st.session_state.get(ANSWER_STATE),
        )
        if st.button(
            "Answer shown to everyone" if shown else "Show the answer to everyone",
            key=f"room_answer_{exercise.key}",
            icon=":material/school:",
            disabled=shown,
        ):
            # the leader's own page shows it, writes answer= into its link and so leads the
            # room there: every follower switches to the worked answer
            st.session_state[ANSWER_STATE] = exercise.key
            st.rerun(scope="app")
    _lesson(the)


def counts(counted: tally.Summary) -> None:
    """An exercise's count, legible on a shared screen: the line (its kinds are fixed words)
    over a bar of the solved share, then the next commonest kinds."""
    if not counted.working:
        st.caption(counted.line())
        return
    st.progress(counted.solved / counted.working, text=counted.line())
    for kind, count in counted.stuck[1:]:
        st.markdown(f"{count} stuck on {kind}")


def _lesson(the: room.Room) -> None:
    """The lesson of the room's path so far, drawn while its popover is open."""
    box = st.popover(
        "Lesson of this workshop",
        icon=":material/download:",
        key="room_lesson",
        on_change="rerun",
    )
    if not box.open:
        return
    lesson = lessonfile.from_path(the.path(), shell.device_report().count)
    with box:
        if not lesson.steps:
            st.caption("No steps led yet: the lesson is the path the room follows.")
            return
        st.caption(
            f"{len(lesson.steps)} step(s) so far, each with its settings. Attendees open the "
            "file on the Guided tour (Replay a workshop) to replay it step by step."
        )
        st.download_button(
            "Download the lesson",
            lesson.to_text(),
            file_name=LESSON_NAME,
            mime="application/json",
            key="room_lesson_file",
            icon=":material/download:",
            on_click="ignore",
        )
