"""A long action on a page, never over a stale result shown as current.

Streamlit keeps what the last run drew until the new run draws over it: while a page recomputes
(a pod compile, a run, a sweep), the old figures stay under the spinner, and Streamlit only
fades them a second or so later, without a word. :func:`working` replaces ``st.spinner`` for
every long action: if the action takes longer than :data:`DELAY_S` (a kept result returns
sooner, and then nothing flickers), a line at the action's place says what is being computed,
and every part of the page left from before that has not been drawn again is greyed out at once,
with that line saying so. When the action ends (or fails, or a click stops it), the line and
the greying go, and what the page draws next replaces the old parts.

The greying is one style rule on Streamlit's own mark for an element of an earlier run
(``data-stale="true"``), active only while the line is on the page.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx

DELAY_S = 0.25  # Streamlit's own spinner waits 0.5 s, its own fading starts about then
STALE = '[data-testid="stMain"] [data-stale="true"]'
STYLE = (
    "<style>"
    f"{STALE} {{ opacity: 0.25 !important; filter: grayscale(1); transition: none !important;"
    " pointer-events: none; }"
    "</style>"
)
LABEL = "Greyed out until it is drawn again: what this page showed before."
ICON = ":material/hourglass_top:"


@contextlib.contextmanager
def working(message: str, delay_s: float = DELAY_S) -> Iterator[None]:
    """Run the ``with`` block (a long action) under a notice at this place: after ``delay_s``,
    ``message`` (plain text: it is shown as Markdown, so a caller escapes what a user typed)
    and :data:`LABEL`, and the page's earlier parts greyed out; both gone when the block ends."""
    slot = st.empty()
    lock, state = threading.Lock(), {"done": False, "shown": False}

    def show() -> None:
        with lock:
            if state["done"]:
                return
            box = slot.container()
            box.markdown(STYLE, unsafe_allow_html=True)
            box.info(f"{message} {LABEL}", icon=ICON)
            state["shown"] = True

    timer = threading.Timer(delay_s, show)
    timer.daemon = True
    add_script_run_ctx(timer)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            shown = state["shown"]
        if shown:
            slot.empty()
