"""Follow the presenter, in the sidebar: lead the room with the server's key, or follow the
presenter's page, settings and tour step (``?follow=1``), leave by editing, come back with one
button. The room itself (key, step, version) is :mod:`pmapviz.core.base.room`.

A follower opens each step inside its own session: it forgets every page's settings and
switches to the step's page with the step's query (``st.switch_page``), so every setting is read
through the pages' schemas as any link's. The step stays this session's target until a run
starts on exactly that page and query: Streamlit folds a pending switch into a rerun that the
browser's poll timer sends meanwhile, which carries the page and query before it, and such a
run simply switches again. (Each step as a fresh page load of its link, as before, cost a
follower 1.3-2.5 s of Chromium per step; in the session it is one rerun.)"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pmapviz.core.base import room, settings, valueparse
from pmapviz.core.devices import jaxstartup
from pmapviz.core.ui import presenter, shell, url_state

POLL_S = 0.5  # how often a follower (and the leader's fragment edits) are checked
FOLLOW_PARAM = room.FOLLOW_KEY
LEAD = "_room_lead"  # the key this session proved (only ever a proved one is kept)
FOLLOWING, SYNCED, BASELINE, LEFT = "_room_following", "_room_synced", "_room_base", "_room_left"
TARGET = "_room_target"  # (version, step): the step this session is switching to
PAGE = "_room_page"  # the url_path of this session's page, for the fragment
FULL_RUN = "_room_full_run"  # the fragment is running inside a whole page's run
DIFFERS = "_room_differs"  # polls in a row that saw a link other than the step's
HEARD = "_room_heard"  # a poll since the last switch carried the step's link: the browser has it
PASSED = "_room_passed"  # the links of the last steps this session was switched away from
KEEP_PASSED = 4
LEAD_SEEN = "_room_lead_seen"  # the step the leader's last poll saw
WRONG_KEY_DELAY_S = 0.5  # a wrong key waits: guessing is slow as well as hopeless
_PAGES: dict[str, st.Page] = {}  # url_path -> the page st.navigation was given (every session's)


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
    return bool(state[FOLLOWING])


def panel(url_path: str, pages: Sequence[st.Page] = ()) -> None:
    """The sidebar's room controls for this run's page (``pages``: what st.navigation was
    given, for switching to a step), and, while leading or following, the fragment that keeps
    this session in step. A follower switching to a step switches again here until this run
    is the step's."""
    _PAGES.update({p.url_path: p for p in pages})
    st.session_state[PAGE] = url_path
    if not following():  # stopped: a reload stays out
        st.query_params.pop(FOLLOW_PARAM, None)
    elif not st.session_state.get(LEFT):
        _arrive_or_switch(url_path)
    with st.sidebar:
        if leading() or following():
            st.session_state[FULL_RUN] = True
            try:
                st.fragment(_in_step, run_every=POLL_S)()
            finally:
                st.session_state[FULL_RUN] = False
        else:
            _join()


def _arrive_or_switch(url_path: str) -> None:
    """This run is on the target step's page and query: arrived (the page's own link, once it
    ran, is the baseline an edit is told by). Any other run switches to it again."""
    state = st.session_state
    target = state.get(TARGET)
    if target is None:
        return
    version, step = target
    if _here(url_path) == step:
        state[SYNCED], state[BASELINE], state[HEARD] = version, None, False
        del state[TARGET]
    else:
        _switch(version, step)


def after_page(url_path: str) -> None:
    """After the page ran: a leader publishes where it is; a follower that arrived takes this
    page, as it wrote its link, as the step (any later difference is this person's own edit
    or page, or a step passed, which is switched from again); one opened at the room's latest
    step (a link) has arrived too; one behind the room switches to the latest."""
    state = st.session_state
    if leading():
        the_room().lead(state.get(LEAD), _here(url_path))
    elif following() and not state.get(LEFT):
        version, step = the_room().latest()
        here = _here(url_path)
        if step is None:
            return
        if state.get(SYNCED) is not None and state.get(BASELINE) is None:
            state[BASELINE] = here  # the run that arrived
        elif state.get(SYNCED) is None and here == step:
            state[SYNCED], state[BASELINE] = version, here
        elif state.get(SYNCED) is not None and here != state.get(BASELINE):
            if _own(here):  # this person's own edit or page: tried freely until they return
                state[LEFT] = True
                return
            state[SYNCED] = None  # a request sent before a switch ran a step passed: again
        if state.get(SYNCED) != version:
            _switch(version, step)


def _here(url_path: str) -> room.Step:
    return room.Step.of(url_path, dict(st.query_params))


def _in_step() -> None:
    """Polled every POLL_S: lead, or follow (switch to a new step; notice an edit)."""
    state, the = st.session_state, the_room()
    if leading():
        _lead_from_poll(the, not state.get(FULL_RUN))
        _leader_box(the)
        return
    ctx = get_script_run_ctx()
    version, step = the.latest(ctx.session_id if ctx else None)
    polled = not state.get(FULL_RUN)  # a timer's run of this fragment alone
    if polled and not state.get(LEFT) and state.get(BASELINE) is not None:
        if _poll_page(ctx) not in (None, state.get(PAGE)):
            _switch(state[SYNCED], state[BASELINE])  # see _poll_page
        _edited(_here(state.get(PAGE, "")))
    if state.get(LEFT):
        _left_box()
    elif step is None:
        st.info("Following: waiting for the presenter to lead.", icon=":material/podium:")
    elif state.get(SYNCED) != version:
        if polled:
            _switch(version, step)
        st.info("Following: catching up with the presenter.", icon=":material/podium:")
    else:
        st.info("Following the presenter.", icon=":material/podium:")
    st.button("Stop following", key="room_stop", on_click=_stop_following)


def _poll_page(ctx) -> str | None:
    """The page a poll's request named (None: unknown). One sent before the browser heard of
    a switch names the page before it, and Streamlit, running the poll there, tells the
    browser that page, which clears what it drew of the step's: the follower switches to its
    step again (one rerun) rather than show an empty page."""
    if ctx is None:
        return None
    page = ctx.pages_manager.get_pages().get(ctx.page_script_hash) or {}
    return page.get("url_pathname")


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
    """A page fragment's edit shows in the link this poll was sent with. Polls count only once
    one has carried the step's own link: before, the browser had not heard of the switch (a
    busy server delivers it late, and the browser's timer meanwhile sends the page and link
    before it). Then a link other than the step's, seen twice in a row, is this person's own
    edit (once could be a poll sent before the page's own link reached the browser)."""
    state = st.session_state
    if here == state.get(BASELINE):
        state[HEARD], state[DIFFERS] = True, 0
    elif state.get(HEARD) and _own(here):
        state[DIFFERS] = state.get(DIFFERS, 0) + 1
        state[LEFT] = state[DIFFERS] >= 2


def _own(here: room.Step) -> bool:
    """Whether ``here`` is a link of this person's making: neither the step's nor one of the
    last steps the room moved this session away from (a request the browser sent before it
    heard of a switch, which a busy server runs after it, carries one of those)."""
    state = st.session_state
    return here != state.get(BASELINE) and here not in state.get(PASSED, ())


def step_query(step: room.Step) -> dict[str, str]:
    """The query a follower switches to for ``step``: the step's query and this person's own
    keys (following; presenter mode if on)."""
    own = {FOLLOW_PARAM: "1"} | ({"present": "1"} if presenter.presenting() else {})
    return {**step.query_dict(), **own}


def _switch(version: int, step: room.Step) -> None:
    """Open ``step`` in this session: forget every page's settings (the step's query seeds
    them, through the schemas) and switch to its page. Ends this run."""
    page = _PAGES.get(step.page)
    if page is None:  # not a page of this app (a room is only ever led from one)
        return
    state = st.session_state
    passed = [*state.get(PASSED, ()), state.get(BASELINE), _here(state.get(PAGE, ""))]
    state[PASSED] = tuple(dict.fromkeys(p for p in passed if p is not None))[-KEEP_PASSED:]
    state[TARGET], state[HEARD] = (version, step), False
    state.pop(DIFFERS, None)
    url_state.forget_pages()  # the switch sets the link
    st.switch_page(page, query_params=step_query(step))


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
    """Back to the presenter: the latest step is switched to at the end of this run."""
    state = st.session_state
    state[LEFT], state[SYNCED], state[BASELINE], state[HEARD] = False, None, None, False
    state.pop(TARGET, None)
    state.pop(PASSED, None)
    state.pop(DIFFERS, None)


def _stop_following() -> None:
    st.session_state[FOLLOWING] = False
    _back()
    ctx = get_script_run_ctx()
    if ctx is not None:  # not counted as following from now (not after FOLLOWER_SILENCE_S)
        the_room().forget(ctx.session_id)
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
