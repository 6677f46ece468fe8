"""An exercise on a page (the tour's steps carry six): the task in this server's numbers, the
boxes an attempt is typed in, Check, and the attendee's own result: "Solved", or what was
wrong with JAX's own words for it. A hint and the worked answer open on request; a step whose
link says ``answer=`` (the presenter showed it to everyone) shows the worked answer open.

Each box is a fragment: Check reruns the box alone. What an attendee types stays in their
session and on their page; the room's count (:mod:`pmapviz.features.exercises.tally`) gets
the attempt's kind only.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

import streamlit as st

from pmapviz.core.ui import shell
from pmapviz.features.exercises import attempts, exercisebook
from pmapviz.features.exercises.exercisebook import Exercise
from pmapviz.features.exercises.verdicts import Judgement

ANSWER_STATE = "tour_answer"  # the tour's answer= setting (its tour_ state, as tour_nav keeps)
JUDGED = "_exercise_judged_"  # + an exercise's key: this session's last judgement of it
ATTENDEE = "_exercise_attendee"  # this session's token in the room's count


def widget_key(exercise: Exercise, field_key: str) -> str:
    """The session-state key of one of an exercise's boxes."""
    return f"exercise_{exercise.key}_{field_key}"


def show(page: str, query: Mapping[str, str], n: int) -> None:
    """Every exercise this page's step carries, for ``n`` devices."""
    for exercise in exercisebook.on_step(page, query):
        _box(exercise, n)


@shell.fragment  # Check reruns this exercise's box only
def _box(exercise: Exercise, n: int) -> None:
    with st.container(border=True):
        st.subheader(f"Exercise: {exercise.title}", anchor=False)
        st.markdown(exercise.task(n))
        if (missing := exercise.missing(n)) is None:
            _attempt(exercise, n)
        else:  # no boxes and no Check: nothing to judge on these devices
            st.info(missing, icon=":material/devices:")
        with st.expander("Hint", icon=":material/lightbulb:"):
            st.markdown(exercise.hint(n))
        _answer(exercise, n)


def _attempt(exercise: Exercise, n: int) -> None:
    """The attempt's boxes, Check, and this session's last judgement."""
    state = st.session_state
    start = exercise.start(n)
    for f in exercise.fields:
        state.setdefault(widget_key(exercise, f.key), start[f.key])
        options = exercise.options(f.key)
        if options:
            st.selectbox(f.label, options, key=widget_key(exercise, f.key))
        else:
            st.text_input(
                f.label, key=widget_key(exercise, f.key), max_chars=exercisebook.MAX_ATTEMPT
            )
    if st.button("Check", key=f"exercise_check_{exercise.key}", icon=":material/task_alt:"):
        texts = {f.key: state.get(widget_key(exercise, f.key), "") for f in exercise.fields}
        state[JUDGED + exercise.key] = attempts.attempt(exercise, texts, _attendee(), n)
    judged = state.get(JUDGED + exercise.key)
    if judged is not None:
        show_judgement(judged)


def _attendee() -> str:
    """This session's token in the room's count: random, made at its first attempt, kept in
    the session only (nothing of the browser or the person)."""
    state = st.session_state
    if ATTENDEE not in state:
        state[ATTENDEE] = attempts.attendee(secrets.token_hex(16))
    return state[ATTENDEE]


def show_judgement(judged: Judgement) -> None:
    """An attempt's result, for the attendee who made it: solved, not checked now, or what
    was wrong (a warning: a mistake is the lesson, not the page's error) and JAX's words."""
    if judged.solved:
        st.success("Solved.", icon=":material/check_circle:")
    elif not judged.checked:
        st.info(judged.words, icon=":material/hourglass_top:")
    else:
        st.warning(f"Not yet: {judged.rule}. {judged.words}", icon=":material/school:")
        if judged.said:
            st.caption(f"What JAX itself says ({judged.error_type}):")
            st.code(judged.said, language=None, wrap_lines=True)


def _answer(exercise: Exercise, n: int) -> None:
    """The worked answer: open when the step's link says so (the presenter showed it to
    everyone), else on request."""
    if st.session_state.get(ANSWER_STATE) == exercise.key:
        st.info("The worked answer, shown to everyone:", icon=":material/school:")
        worked(exercise, n)
    else:
        with st.expander("Worked answer", icon=":material/school:"):
            worked(exercise, n)


def worked(exercise: Exercise, n: int) -> None:
    """The worked answer: what to type, and why it is right."""
    typed = exercise.answer(n)
    labels = {f.key: f.label.rstrip(" =").rstrip() for f in exercise.fields}
    st.code("\n".join(f"{labels[k]}: {v}" for k, v in typed.items()), language=None)
    st.markdown(exercise.why(n))
