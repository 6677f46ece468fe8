"""Replay a workshop at home, on the Guided tour: open the lesson file the presenter saved
(:mod:`pmapviz.features.exercises.lessonfile`, checked through every page's schemas: a file
from another version or a changed one gets one line), then step through it. Each step opens
as a follower's step opens: this session's page settings forgotten, the step's page opened
with the step's link, so it shows what the room saw, exercises and shown answers included.
The lesson's bar (step k of N, Previous, Next) sits at the top of the tour.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.core.ui import url_state
from pmapviz.features.exercises import lessonfile

LESSON, AT = "_lesson", "_lesson_at"  # the open lesson, and its step shown last
SEEN = "_lesson_file_seen"  # (the upload's id, what reading it said: "" when it was read)
MAX_UPLOAD_MB = 1


def title_of(step: room.Step, pages: Sequence[PageInfo]) -> str:
    """A lesson step as its bar names it: the page's title, and the tour's step."""
    by_path = {p.url_path: p for p in pages}
    info = by_path.get(step.page) or (pages[0] if pages else None)
    title = info.title if info is not None else step.page
    tour_step = step.query_dict().get("step")
    return f"{title}, step {tour_step}" if step.page == "tour" and tour_step else title


def bar(pages: Sequence[PageInfo]) -> None:
    """While a lesson is open: where this session is in it, and the way through it."""
    lesson: lessonfile.Lesson | None = st.session_state.get(LESSON)
    if lesson is None:
        return
    total = len(lesson.steps)
    at = min(max(0, int(st.session_state.get(AT, 0))), total - 1)
    st.progress(
        (at + 1) / total,
        text=f"Lesson: step {at + 1} of {total}, {title_of(lesson.steps[at], pages)}",
    )
    cols = st.columns(4)
    if cols[0].button("Previous", key="lesson_prev", disabled=at == 0, width="stretch"):
        open_step(lesson, at - 1)
    if cols[1].button("Open this step", key="lesson_here", width="stretch"):
        open_step(lesson, at)
    if cols[2].button("Next", key="lesson_next", disabled=at == total - 1, width="stretch"):
        open_step(lesson, at + 1)
    if cols[3].button("Close the lesson", key="lesson_close", width="stretch"):
        for key in (LESSON, AT):
            st.session_state.pop(key, None)
        st.rerun()


def open_step(lesson: lessonfile.Lesson, k: int) -> None:
    """Open the lesson's step ``k`` as a follower opens the room's: every page's settings of
    this session forgotten, its page opened with its link (this session's own keys kept).
    Ends this run."""
    st.session_state[AT] = k
    step = lesson.steps[k]
    url_state.forget_pages()  # the step's link seeds them, through the page's schemas
    query = step.query_dict() | url_state.own_keys()
    st.switch_page(page_file(step.page or "home"), query_params=query)


def opener(pages: Sequence[PageInfo]) -> None:
    """Replay a workshop: the lesson file's upload; a new file read opens its first step."""
    with st.expander("Replay a workshop (a lesson file)", icon=":material/history_edu:"):
        st.caption(
            "The presenter saves the workshop's path as a lesson file (Lesson of this "
            "workshop, beside the room's controls). Open it here to replay it step by step."
        )
        up = st.file_uploader(
            "Lesson file", type=["json"], key="lesson_upload", max_upload_size=MAX_UPLOAD_MB
        )
        if up is None:
            return
        if st.session_state.get(SEEN, (None, ""))[0] != up.file_id:
            try:
                lesson = lessonfile.read(up.getvalue()[: lessonfile.MAX_BYTES + 1], pages)
            except lessonfile.LessonError as err:
                st.session_state[SEEN] = (up.file_id, str(err))
            else:
                st.session_state[SEEN] = (up.file_id, "")
                load(lesson)
                open_step(lesson, 0)
        if said := st.session_state[SEEN][1]:
            st.error(said, icon=":material/history_edu:")


def load(lesson: lessonfile.Lesson) -> None:
    """Open ``lesson`` in this session at its first step (without switching page)."""
    st.session_state[LESSON], st.session_state[AT] = lesson, 0
