"""A result the room shares, on a page: the run behind a Run button taken from, or put into,
the server's shared results (:mod:`pmapviz.core.running.sharedresults`), and the one line that
says whose run it is and when it was computed, so a figure from the presenter's run is never
shown as this person's own."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pmapviz.core.devices import deviceset
from pmapviz.core.running import sharedresults
from pmapviz.core.running.sharedresults import Key, Shared

_WHO: list[Callable[[], str | None]] = []  # the app's hook: who runs in this session, in words
ANOTHER = "another session"
ME = "_shared_run_me"  # this session's id among the runs it started


def runs_by(hook: Callable[[], str | None]) -> None:
    """Name who starts a run in this session (``hook()``, run in that session: e.g. "the
    presenter" while it leads the room; None: another session). Registering replaces it."""
    _WHO[:] = [hook]


def _by() -> str:
    for hook in _WHO:
        if who := hook():
            return who
    return ANOTHER


def _session() -> str:
    """This session's own id for its runs (kept in its state: every AppTest session has
    Streamlit's one test session id)."""
    if get_script_run_ctx() is None:
        return ""
    return st.session_state.setdefault(ME, secrets.token_hex(8))


def key(page: str, settings: Mapping[str, object], n: int) -> Key:
    """The key of a run of ``page`` with ``settings`` on this page's device set (its name
    and ``n``, the devices it runs on)."""
    return Key.of(page, settings, f"{deviceset.current()}:{n}")


def kept(k: Key) -> Shared | None:
    """The result kept for ``k`` (anyone's run of the same settings), or None."""
    return sharedresults.shared().peek(k)


def under_way(k: Key) -> bool:
    """Whether a run for ``k`` is under way now (in any session)."""
    return sharedresults.shared().running(k)


def join(k: Key, on_wait=None) -> Shared | None:
    """The result for ``k`` kept, or under way in another session (waited for, ``on_wait``
    as a queue's waiter); None when neither: nothing runs here."""
    return sharedresults.shared().join(k, on_wait)


def run(k: Key, compute: Callable[[], object], on_wait=None) -> Shared:
    """The result for ``k``: kept, under way (waiting for it, ``on_wait`` as a queue's
    waiter), or ``compute()`` run in this session once for everyone who asks meanwhile."""
    entry, _ = sharedresults.shared().get(k, compute, by=_by(), owner=_session(), on_wait=on_wait)
    return entry


def words(entry: Shared, session: str | None = None) -> str:
    """Whose run ``entry`` is and when it finished, for this session (``session``: its id)."""
    at = time.strftime("%H:%M:%S", time.localtime(entry.finished))
    took = f"in {entry.seconds:,.1f} s"
    mine = entry.owner and entry.owner == (_session() if session is None else session)
    if mine:
        return (
            f"Your run, computed at {at} (server time) {took}; anyone on this server who "
            "opens the same settings sees this result, computed once."
        )
    whose = "The presenter's run" if entry.by == "the presenter" else "Another session's run"
    return (
        f"{whose} of these settings, shared: computed once at {at} (server time) {took}. "
        "Its figures, times included, come from that run, not from a run of your own."
    )


def caption(entry: Shared) -> None:
    """The line that says whose run this result is (:func:`words`)."""
    st.caption(f":material/groups: {words(entry)}")
