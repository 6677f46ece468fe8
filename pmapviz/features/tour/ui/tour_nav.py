"""The tour's navigation: the current step (from the link once, then this session's, kept in
``tour_step`` and written back to the link), its progress, Previous / Jump to / Next."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import url_state
from pmapviz.features.exercises.ui import exercise_box
from pmapviz.features.tour import toursteps


def step() -> int:
    """This session's step (seeded from the link, with a note if it did not parse), written
    to the URL through ``toursteps.schema()``."""
    url_state.register("tour_")  # forgotten with the pages' settings
    if st.session_state.get("tour_step") is None:
        texts, found = toursteps.schema().from_query(dict(st.query_params))
        st.session_state["tour_step"] = int(texts["step"])
        if texts["answer"]:  # the worked answer the presenter showed everyone
            st.session_state[exercise_box.ANSWER_STATE] = texts["answer"]
        st.session_state["_tour_notes"] = found
    url_state.notes(st.session_state.get("_tour_notes", []))
    url_state.save("tour_", toursteps.schema())  # the step's widget state is "tour_step"
    return st.session_state["tour_step"]


def go(to: int) -> None:
    """Goes to step ``to`` (kept within the tour's steps)."""
    st.session_state["tour_step"] = max(1, min(len(toursteps.STEPS), to))
    st.session_state.pop(exercise_box.ANSWER_STATE, None)  # a step opens with its task


def _jumped() -> None:
    """The jump list's choice, unless its state was forgotten meanwhile (a step opened)."""
    to = st.session_state.get("tour_jump")
    if isinstance(to, int):
        go(to)


def show(now: int, titles: list[str]) -> None:
    """Progress, then Previous, a jump list and Next."""
    last = len(toursteps.STEPS)
    st.progress(now / last, text=f"Step {now} of {last}: {titles[now - 1]}")
    nav = st.columns([1.4, 4, 1.4])  # "Previous" whole beside an open sidebar at 20 px type
    nav[0].button(
        "Previous",
        on_click=go,
        args=(now - 1,),
        disabled=now == 1,
        icon=":material/arrow_back:",
        key="tour_prev",
        width="stretch",
    )
    # the list shows this step: a keyed widget keeps its own value over reruns, so an index
    # alone left it on the step it first showed while Next and Previous moved on
    st.session_state["tour_jump"] = now
    nav[1].selectbox(
        "Jump to step",
        list(range(1, last + 1)),
        format_func=lambda k: f"{k}. {titles[k - 1]}",
        key="tour_jump",
        on_change=_jumped,
        label_visibility="collapsed",
    )
    nav[2].button(
        "Next",
        on_click=go,
        args=(now + 1,),
        disabled=now == last,
        icon=":material/arrow_forward:",
        key="tour_next",
        width="stretch",
    )
