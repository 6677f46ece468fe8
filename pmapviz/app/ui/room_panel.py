"""Follow the presenter, in the sidebar: lead the room with the server's key, or follow the
presenter's page, settings and tour step (``?follow=1``), leave by editing, come back with one
button. The room itself (key, step, version) is :mod:`pmapviz.core.base.room`; a step is
applied as a link is opened (``url_state.reopen``, then the step's query through the
pages' schemas), so it can carry nothing a link could not."""

from __future__ import annotations

import sys
import time

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pmapviz.app import page_registry
from pmapviz.core.base import room, settings, valueparse
from pmapviz.core.devices import jaxstartup
from pmapviz.core.ui import presenter, url_state

POLL_S = 0.5  # how often a follower (and the leader's fragment edits) are checked
FOLLOW_PARAM = room.FOLLOW_KEY
LEAD = "_room_lead"  # the key this session proved (only ever a proved one is kept)
FOLLOWING, SYNCED, BASELINE, LEFT = "_room_following", "_room_synced", "_room_base", "_room_left"
PAGE = "_room_page"  # the url_path of this session's page, for the fragment
PENDING = "_room_pending"  # (version, step, tries): a step opened, not yet seen arrived
FULL_RUN = "_room_full_run"  # the fragment is running inside a whole page's run
MAX_TRIES = 3
OPEN_NOW = "_room_open_now"  # a poll saw a new step: open it at the end of this whole run
TRIES = "_room_tries"  # (version, how often this session opened it)
OPENED, MAX_OPENED = "_room_opened", 8  # the last steps opened: a stale link is one of them
WRONG_KEY_DELAY_S = 0.5  # a wrong key waits: guessing is slow as well as hopeless


def the_room() -> room.Room:
    """This server's room, with the key it was started with (or one made now and printed on
    a real server's terminal: an AppTest, the doctor's page check, has no one to read it)."""
    return room.room(jaxstartup.applied_settings().presenter_key, _announce)


def _announce(text: str) -> None:
    if runtime.exists():
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
    return bool(state[FOLLOWING])


def panel(url_path: str) -> None:
    """The sidebar's room controls for this run's page, and, while leading or following, the
    fragment that keeps this session in step."""
    st.session_state[PAGE] = url_path
    if not following() and FOLLOW_PARAM in st.query_params:  # stopped: a reload stays out
        del st.query_params[FOLLOW_PARAM]
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
    """After the page ran: a leader publishes where it is; a follower checks it arrived at the
    step it opened (then notes the page as it wrote the step back), or that it has not gone
    elsewhere since."""
    if leading():
        the_room().lead(st.session_state.get(LEAD), _here(url_path))
    elif following() and not st.session_state.get(LEFT):
        _arrived_or_left(_here(url_path))
        version, step = the_room().latest()
        state = st.session_state
        behind = step is not None and not state.get(LEFT) and state.get(SYNCED) != version
        if behind and (state.pop(OPEN_NOW, False) or not _tried(version)):
            _open_step(version, step)  # at the end of a whole run: the page is drawn (_in_step)


def _here(url_path: str) -> room.Step:
    return room.Step.of(url_path, dict(st.query_params))


def _arrived_or_left(here: room.Step) -> None:
    """A step opened is synced once a page run shows it (Streamlit may fold a page switch into
    a timer's rerun of the old page: then the next poll opens it again, MAX_TRIES times at
    most); a synced step's page, as it wrote it back, is the baseline: any later difference
    is this person's own edit or page."""
    state = st.session_state
    pending = state.get(PENDING)
    if pending is not None:
        version, step, tries = pending
        if here == step or tries >= MAX_TRIES:
            state[SYNCED], state[BASELINE], state[PENDING] = version, here, None
            _resend_link()
        return
    base = state.get(BASELINE)
    if state.get(SYNCED) is None or base in (None, here):
        return
    if here not in state.get(OPENED, ()):
        state[LEFT] = True  # this person's own edit or page: tried freely until they come back
    elif here.page == base.page:  # a browser's rerun sent its stale link: the page is right
        st.query_params.from_dict({**base.query_dict(), **_own()})
    elif state.get(TRIES, (0, 0))[1] < MAX_TRIES:  # it ran the earlier page too
        state[SYNCED] = None  # open the current step again at the next poll


def _own() -> dict[str, str]:
    """This session's own query keys: following, and presenter mode if on."""
    return {FOLLOW_PARAM: "1"} | ({"present": "1"} if presenter.presenting() else {})


def _resend_link() -> None:
    """Send this session's link to its browser again: after a page switch the browser's
    address bar could keep the step before, and send it back with its next timer rerun."""
    params = dict(st.query_params)
    st.query_params.clear()
    st.query_params.from_dict(params)


def _in_step() -> None:
    """Polled every POLL_S: lead, or follow (open a new step; notice an edit)."""
    state, the = st.session_state, the_room()
    if leading():
        the.lead(state[LEAD], _here(state.get(PAGE, "")))
        _leader_box(the)
        return
    ctx = get_script_run_ctx()
    version, step = the.latest(ctx.session_id if ctx else None)
    polled = not state.get(FULL_RUN)  # a timer's run of this fragment alone
    if polled and not state.get(LEFT) and state.get(SYNCED) == version:
        _arrived_or_left(_here(state.get(PAGE, "")))
    if state.get(LEFT):
        _left_box()
    elif step is None:
        st.info("Following: waiting for the presenter to lead.", icon=":material/podium:")
    elif state.get(SYNCED) != version:
        # the step is opened at the end of a whole run (after_page), never from here: a page
        # switch made in a fragment, then folded by Streamlit into the browser's next timer
        # rerun of this fragment alone, left the main area cleared and never drawn again
        if polled:
            state[OPEN_NOW] = True
            st.rerun(scope="app")
        st.info("Following: catching up with the presenter.", icon=":material/podium:")
    else:
        st.info("Following the presenter.", icon=":material/podium:")
    st.button("Stop following", key="room_stop", on_click=_stop_following)


def _tried(version: int) -> bool:
    """Whether this session has opened step ``version`` already (a page run that follows
    the opening must not open it again: it is the arrival, or a rerun that lost the switch,
    which the next poll retries)."""
    pending = st.session_state.get(PENDING)
    return pending is not None and pending[0] == version


def _open_step(version: int, step: room.Step) -> None:
    """Open the presenter's step as a link: this session's own choices (presenter mode,
    following) kept, every page setting read again from the step's query."""
    state = st.session_state
    opened = state.get(TRIES)
    tries = opened[1] + 1 if opened and opened[0] == version else 1
    state[TRIES] = (version, tries)  # per step, however it ended: opening never loops
    state[PENDING], state[BASELINE] = (version, step, tries), None
    state[OPENED] = (*state.get(OPENED, ())[-(MAX_OPENED - 1) :], step)
    url_state.reopen()
    target = page_registry.by_url_path(step.page).path
    st.switch_page(target, query_params={**step.query_dict(), **_own()})


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
    state = st.session_state
    state[LEFT], state[SYNCED], state[BASELINE], state[PENDING] = False, None, None, None
    state.pop(TRIES, None)


def _stop_following() -> None:
    st.session_state[FOLLOWING] = False
    _back()
    st.query_params.pop(FOLLOW_PARAM, None)


def _leader_box(the: room.Room) -> None:
    n = the.following()
    st.success(
        f"You lead the room: {n} following." if n != 1 else "You lead the room: 1 following.",
        icon=":material/podium:",
    )
    with st.popover("Follow link", icon=":material/group:"):
        st.code(f"{url_state.base_url()}/?{FOLLOW_PARAM}=1", language=None, wrap_lines=True)
        st.caption("Attendees open it: their page follows yours within a second.")
        if _host() in LOOPBACK:
            st.caption(
                "This address reaches this machine only. To serve a room, start the server "
                "with `--address 0.0.0.0` and give this machine's name or address instead."
            )
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


LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def _on_this_machine() -> bool:
    """Whether this browser runs on the server's machine: a loopback connection, addressed to
    a loopback name, through no proxy (a tunnel such as ngrok connects from loopback too, but
    names its own host and says whom it forwards)."""
    headers = st.context.headers or {}
    forwarded = any(headers.get(h) for h in ("X-Forwarded-For", "Forwarded", "X-Real-Ip"))
    return st.context.ip_address is None and _host() in LOOPBACK and not forwarded


def _host() -> str:
    """The host name this browser used for the server, without the port."""
    host = str((st.context.headers or {}).get("Host", ""))
    if host.startswith("["):  # [::1]:8501
        return host.partition("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


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
