"""A long action that a click stops, keeping what it finished (the Timing lab's sweep, a
training run). A click anywhere on the page reruns the script, which abandons the running one;
so while it runs, its partial result lives in the session, and the next run of the page finds
it interrupted, marks it (``cancelled``, ``stopped``) and keeps it as the result, with a note
saying so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st


@dataclass(frozen=True)
class LongRun:
    """A long action's session keys, and what the page says when a click interrupted it."""

    prefix: str  # session keys: prefix + "running", prefix + "partial"
    result_key: str  # where the finished (or interrupted) result is kept
    mark: str  # the partial result's flag that says it was interrupted
    message: str  # what the page says about an interrupted run
    icon: str

    def recover(self) -> None:
        """If the last run was interrupted, keep what it finished as the result, marked."""
        if not st.session_state.get(self.prefix + "running"):
            return
        st.session_state[self.prefix + "running"] = False
        partial = st.session_state.get(self.prefix + "partial")
        if partial is not None:
            setattr(partial, self.mark, True)
            st.session_state[self.result_key] = partial
        st.warning(self.message, icon=self.icon)

    def start(self, partial: Any = None) -> None:
        """Marks a run as begun, with ``partial`` as what it has finished so far."""
        st.session_state[self.prefix + "running"] = True
        st.session_state[self.prefix + "partial"] = partial

    def keep(self, partial: Any) -> None:
        """What the run has finished so far (kept if it is interrupted)."""
        st.session_state[self.prefix + "partial"] = partial

    def finish(self, result: Any) -> None:
        """The run ended by itself; ``result`` (None: nothing to show) becomes the result."""
        st.session_state[self.prefix + "running"] = False
        if result is not None:
            st.session_state[self.result_key] = result
