"""Follow the presenter, in the sidebar: lead the room with the server's key, or follow the
presenter's page, settings and tour step (``?follow=1``), leave by editing, come back with one
button. The room itself (key, step, version) is :mod:`pmapviz.core.base.room`.

A follower opens each step as a fresh page load of the step's link (page, query, ``follow=1``
and the room's version as ``followed=``), which its browser is told to open: every setting is
read through the pages' schemas as any link's, and nothing of the session before can disagree
with it. (Opening steps inside the session with ``st.switch_page`` raced with the browser's
own timer: Streamlit folds a pending page switch into the timer's rerun, which carries the old
page and query, so a follower lost steps or seemed to leave by itself.)"""

from __future__ import annotations

import sys
import time
from urllib.parse import urlencode

import streamlit as st
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pmapviz.core.base import room, settings, valueparse
from pmapviz.core.devices import jaxstartup
from pmapviz.core.ui import presenter, shell, url_state

POLL_S = 0.5  # how often a follower (and the leader's fragment edits) are checked
FOLLOW_PARAM = room.FOLLOW_KEY
LEAD = "_room_lead"  # the key this session proved (only ever a proved one is kept)
FOLLOWING, SYNCED, BASELINE, LEFT = "_room_following", "_room_synced", "_room_base", "_room_left"
OPENED_AT = "_room_opened_at"  # the room's version this page was opened at (its followed=)
PAGE = "_room_page"  # the url_path of this session's page, for the fragment
FULL_RUN = "_room_full_run"  # the fragment is running inside a whole page's run
DIFFERS = "_room_differs"  # polls in a row that saw a link other than the step's
LEAD_SEEN = "_room_lead_seen"  # the step the leader's last poll saw
OPENING = "_room_opening"  # (version, link, when): the step this session's browser was sent to
RESEND_S = 3.0  # a browser that has not opened the step by then is sent it again
WRONG_KEY_DELAY_S = 0.5  # a wrong key waits: guessing is slow as well as hopeless


def the_room() -> room.Room:
    """This server's room, with the key it was started with (or one made now and printed on
    a real server's terminal: an AppTest, the doctor's page check, has no one to read it)."""
    return room.room(jaxstartup.applied_settings().presenter_key, _announce)


def _announce(text: str) -> None:
    """Print on a real server's terminal only (not in an AppTest: the doctor's page check)."""
    if shell.real_server():
        print(text, file=sys.stderr, flush=True)


def leading() -> bool:
    """Whether this session proved the presenter key."""
    return the_room().proves(st.session_state.get(LEAD))


def following() -> bool:
    """Whether this session follows the presenter (``?follow=1`` opens in this mode)."""
    state = st.session_state
    if FOLLOWING not in state:
        try:  # a link's value, as any other: one that does not parse means "no"
            state[FOLLOWING] = settings.parse_flag(st.query_params.get(FOLLOW_PARAM, "0"), "follow")
        except valueparse.SettingError:
            state[FOLLOWING] = False
        state[OPENED_AT] = room.parse_version(st.query_params.get(room.FOLLOWED_KEY, ""))
    return bool(state[FOLLOWING])


def panel(url_path: str) -> None:
    """The sidebar's room controls for this run's page, and, while leading or following, the
    fragment that keeps this session in step."""
    st.session_state[PAGE] = url_path
    if not following():  # stopped: a reload stays out
        for key in (FOLLOW_PARAM, room.FOLLOWED_KEY):
            st.query_params.pop(key, None)
    with st.sidebar:
        if leading() or following():
            st.session_state[FULL_RUN] = True
            try:
                st.fragment(_in_step, run_every=POLL_S)()
            finally:
                st.session_state[FULL_RUN] = False
        else:
            _join()


def after_page(url_path: str) -> None:
    """After the page ran: a leader publishes where it is; a follower opened at the room's
    latest step takes this page, as it wrote its link, as the step (any later difference is
    this person's own edit or page); one opened at an earlier step opens the latest."""
    state = st.session_state
    if leading():
        the_room().lead(state.get(LEAD), _here(url_path))
    elif following() and not state.get(LEFT):
        version, step = the_room().latest()
        here = _here(url_path)
        if step is None:
            return
        if state.get(SYNCED) is None and state.get(OPENED_AT) == version:
            state[SYNCED], state[BASELINE] = version, here
        elif state.get(SYNCED) is not None and here != state.get(BASELINE):
            state[LEFT] = True  # this person's own edit or page: tried freely until they return
        elif state.get(SYNCED) != version:
            _open_step(version, step)


def _here(url_path: str) -> room.Step:
    return room.Step.of(url_path, dict(st.query_params))


def _in_step() -> None:
    """Polled every POLL_S: lead, or follow (open a new step; notice an edit)."""
    state, the = st.session_state, the_room()
    if leading():
        _lead_from_poll(the, not state.get(FULL_RUN))
        _leader_box(the)
        return
    ctx = get_script_run_ctx()
    version, step = the.latest(ctx.session_id if ctx else None)
    polled = not state.get(FULL_RUN)  # a timer's run of this fragment alone
    if polled and not state.get(LEFT) and state.get(SYNCED) is not None:
        _edited(_here(state.get(PAGE, "")))
    if state.get(LEFT):
        _left_box()
    elif step is None:
        st.info("Following: waiting for the presenter to lead.", icon=":material/podium:")
    elif state.get(SYNCED) != version:
        if polled:
            _open_step(version, step)
        st.info("Following: catching up with the presenter.", icon=":material/podium:")
    else:
        st.info("Following the presenter.", icon=":material/podium:")
    st.button("Stop following", key="room_stop", on_click=_stop_following)


def _lead_from_poll(the: room.Room, polled: bool) -> None:
    """A leader's edit that reran only a page fragment shows in the link its polls are sent
    with: publish it once two polls in a row see it. (A whole run publishes its step itself,
    in after_page; and a poll sent before a click carries the link before it, which, seen
    once, made the room step back and forth.)"""
    state = st.session_state
    if not polled:
        return
    here = _here(state.get(PAGE, ""))
    if state.get(LEAD_SEEN) == here:
        the.lead(state[LEAD], here)
    state[LEAD_SEEN] = here


def _edited(here: room.Step) -> None:
    """A page fragment's edit shows in the link this poll was sent with; seen twice in a row
    it is this person's own (once could be a browser that has not yet heard its page's own
    link)."""
    state = st.session_state
    differs = here != state.get(BASELINE)
    state[DIFFERS] = state.get(DIFFERS, 0) + 1 if differs else 0
    if state[DIFFERS] >= 2:
        state[LEFT] = True


def step_link(version: int, step: room.Step) -> str:
    """The link a follower's browser opens for ``step``: the page under the server's base path,
    the step's query, this person's own keys (following; presenter mode if on) and the room's
    version. Only ever a path on this server."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    page = "" if step.page in ("", "home") else step.page
    path = f"/{base}/{page}" if base else f"/{page}"
    own = {FOLLOW_PARAM: "1", room.FOLLOWED_KEY: str(version)}
    if presenter.presenting():
        own["present"] = "1"
    return f"{path}?{urlencode({**step.query_dict(), **own})}"


def _open_step(version: int, step: room.Step) -> None:
    """Tell this session's browser to open the step's link (again only if it has not after
    RESEND_S: the browser may have been busy leaving this page)."""
    state, now = st.session_state, time.monotonic()
    opening = state.get(OPENING)
    if opening and opening[0] == version and now - opening[2] < RESEND_S:
        return
    link = step_link(version, step)
    state[OPENING] = (version, link, now)
    ctx = get_script_run_ctx()
    if ctx is not None:  # this session ends with the page load: no longer one who follows
        the_room().forget(ctx.session_id)
    if ctx is not None and shell.real_server():  # an AppTest has no browser: its test opens it
        message = ForwardMsg()
        message.auth_redirect.url = link  # Streamlit's own "browser, open this URL"
        ctx.enqueue(message)


def _left_box() -> None:
    st.info("You left the presenter to try this yourself.", icon=":material/edit:")
    st.button(
        "Back to the presenter",
        key="room_back",
        type="primary",
        on_click=_back,
        icon=":material/podium:",
    )


def _back() -> None:
    """Back to the presenter: the latest step is opened afresh at the end of this run."""
    state = st.session_state
    state[LEFT], state[SYNCED], state[BASELINE], state[OPENED_AT] = False, None, None, None
    state.pop(OPENING, None)
    state.pop(DIFFERS, None)


def _stop_following() -> None:
    st.session_state[FOLLOWING] = False
    _back()
    for key in (FOLLOW_PARAM, room.FOLLOWED_KEY):
        st.query_params.pop(key, None)


def _leader_box(the: room.Room) -> None:
    n = the.following()
    st.success(
        f"You lead the room: {n} following." if n != 1 else "You lead the room: 1 following.",
        icon=":material/podium:",
    )
    with st.popover("Follow link", icon=":material/group:"):
        st.code(f"{url_state.base_url()}/?{FOLLOW_PARAM}=1", language=None, wrap_lines=True)
        st.caption("Attendees open it: their page follows yours within a second.")
        if url_state.only_this_machine():
            st.caption(url_state.ROOM_NOTE)
    st.button("Stop leading", key="room_unlead", on_click=lambda: st.session_state.pop(LEAD, None))


def _join() -> None:
    """Follow, or lead with the key (one click on the server's own machine)."""
    with st.expander("Lead or follow the room", icon=":material/podium:"):
        st.button("Follow the presenter", key="room_follow", on_click=_start_following)
        if (
            _on_this_machine() and not presenter.presenting()
        ):  # this browser is on the server's machine (and not on a projector)
            st.button("Lead from this browser", key="room_lead_here", on_click=_lead_here)
            st.caption("To lead from another machine, type this key there:")
            st.code(the_room().key, language=None)
        st.text_input("Presenter key", key="room_typed", type="password")
        typed = bool(st.session_state.get("room_typed"))
        st.button("Lead the room", key="room_lead", on_click=_lead_typed, disabled=not typed)
        if st.session_state.pop("_room_wrong", False):
            st.error("That is not this server's presenter key.", icon=":material/key_off:")


def _start_following() -> None:
    st.session_state[FOLLOWING] = True
    _back()


def _on_this_machine() -> bool:
    """Whether this browser runs on the server's machine: a loopback connection, addressed to
    a loopback name, through no proxy (a tunnel such as ngrok connects from loopback too, but
    names its own host and says whom it forwards)."""
    headers = st.context.headers or {}
    forwarded = any(headers.get(h) for h in ("X-Forwarded-For", "Forwarded", "X-Real-Ip"))
    local = url_state.browser_host() in url_state.LOOPBACK
    return st.context.ip_address is None and local and not forwarded


def _lead_here() -> None:
    if _on_this_machine():
        st.session_state[LEAD] = the_room().key


def _lead_typed() -> None:
    typed = st.session_state.get("room_typed", "")
    st.session_state["room_typed"] = ""
    if the_room().proves(typed):
        st.session_state[LEAD] = typed.strip()
        st.session_state[FOLLOWING] = False
    else:
        time.sleep(WRONG_KEY_DELAY_S)
        st.session_state["_room_wrong"] = True
