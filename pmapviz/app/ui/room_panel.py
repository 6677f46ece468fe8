"""Follow the presenter, in the sidebar: lead the room, or follow the presenter's page,
settings and tour step (``?follow=1``), leave by editing, come back with one button. The room
itself (key, lead link, pass, step, version) is :mod:`pmapviz.core.base.room`.

A browser leads with the one-time lead link the server printed, or the presenter key typed in
a password field (never drawn on a page), and a reload leads again from the pass its browser
kept: :mod:`pmapviz.app.ui.room_leader`, which also says when no leader is present.

A follower opens each step inside its own session: it forgets every page's settings and
switches to the step's page with the step's query (``st.switch_page``), so every setting is read
through the pages' schemas as any link's. The step stays this session's target until a run
starts on exactly that page and query: Streamlit folds a pending switch into a rerun that the
browser's poll timer sends meanwhile, which carries the page and query before it, and such a
run simply switches again. A switch retires the poll fragment (:func:`_retire_poller`), so
the polls its browser sends before it hears of the switch are dropped: a follower's arrival
costs the server one whole run of the page it lands on. (Each step as a fresh page load of
its link, as before, cost a follower 1.3-2.5 s of Chromium per step.)

A leader publishes the links its pages write: a whole run's (:func:`after_page`) and a page
fragment's edit (:func:`_lead_from_fragment`), never a poll's, which is its browser's."""

from __future__ import annotations

import time
from collections.abc import Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

from pmapviz.app.ui import room_leader
from pmapviz.app.ui.room_leader import LEAD, leading, the_room
from pmapviz.core.base import room, settings, valueparse
from pmapviz.core.ui import presenter, shared_run, shell, url_state
from pmapviz.features.exercises.ui import exercise_room

POLL_S = 0.5  # how often a follower (and the leader's fragment edits) are checked
FOLLOW_PARAM = room.FOLLOW_KEY
FOLLOWING, SYNCED, BASELINE, LEFT = "_room_following", "_room_synced", "_room_base", "_room_left"
TARGET = "_room_target"  # (version, step): the step this session is switching to
PAGE = "_room_page"  # the url_path of this session's page, for the fragment
FULL_RUN = "_room_full_run"  # the fragment is running inside a whole page's run
DIFFERS = "_room_differs"  # polls in a row that saw a link other than the step's
HEARD = "_room_heard"  # a poll since the last switch carried the step's link: the browser has it
PASSED = "_room_passed"  # the links of the last steps this session was switched away from
KEEP_PASSED = 4
EPOCH = "_room_epoch"  # switches so far: the poll fragment's identity (see _poll_fragment)
POLLER = "_room_poller"  # the fragment id of this session's poll fragment (see _retire_poller)
WRONG_KEY_DELAY_S = 0.5  # a wrong key waits: guessing is slow as well as hopeless
_PAGES: dict[str, st.Page] = {}  # url_path -> the page st.navigation was given (every session's)


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
    shell.on_link_written(__name__, _lead_from_fragment)
    shared_run.runs_by(lambda: "the presenter" if leading() else None)  # whose run is shared
    if room_leader.arrive(following):  # a lead link opened, or this browser's kept pass
        _follow_no_more()
    if not following():  # stopped: a reload stays out
        st.query_params.pop(FOLLOW_PARAM, None)
    elif not st.session_state.get(LEFT):
        _arrive_or_switch(url_path)
    with st.sidebar:
        if leading() or following():
            st.session_state[FULL_RUN] = True
            try:
                _poll_fragment()()
            finally:
                st.session_state[FULL_RUN] = False
        else:
            _join()
        room_leader.keep_pass()


def _poll_fragment():
    """The fragment polled every POLL_S, named for this session's switches so far: each switch
    gives the poll a new fragment id, and retires the old one (:func:`_retire_poller`)."""
    epoch = st.session_state.get(EPOCH, 0)

    def poll() -> None:
        st.session_state[POLLER] = _running_fragment()
        _in_step()

    poll.__qualname__ = f"_in_step.switched_{epoch}"  # Streamlit's fragment id: module.qualname
    return st.fragment(poll, run_every=POLL_S)


def _running_fragment() -> str | None:
    """The id of the fragment running now (Streamlit's thread state), None if unknown."""
    try:
        return ThreadState.get().fragment_id
    except (RuntimeError, AttributeError):
        return None


def _retire_poller() -> None:
    """Before a switch: the browser's timer keeps sending this poll until it hears of the
    switch, each with the page and link before it; Streamlit ran such a poll after the
    switched run, at the page before it, and told the browser so, which cleared the step's
    page (the follower switched again: a second whole run per step, and under thirty
    followers, more). Streamlit drops a poll of a fragment its session no longer holds
    (``AppSession.request_rerun``): the poll's fragment is taken out of this session's
    fragments now, and the next one has another id (:func:`_poll_fragment`)."""
    state = st.session_state
    state[EPOCH] = state.get(EPOCH, 0) + 1
    fragment = state.pop(POLLER, None)
    ctx = get_script_run_ctx()
    if fragment and ctx is not None and ctx.fragment_storage.contains(fragment):
        ctx.fragment_storage.delete(fragment)


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
    if LEAD in state:  # leading (or led until another browser was given the pass)
        _lead_poll(the)
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
        room_leader.following_line(the)
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


def _lead_from_fragment() -> None:
    """A page fragment's run wrote a new link (an edit that reran only that fragment, such as
    the explorer's settings): a leader publishes it at once, as the page wrote it. (A whole
    run publishes in after_page. Never a poll's link: a poll carries the link its browser
    had when it sent it, which a busy server runs after the page wrote a newer one, and a
    room led from polls stepped back and forth and, on entering the explorer, to its
    defaults: the page before it with the explorer's path.)"""
    ctx = get_script_run_ctx()
    if ctx is None or not ctx.fragment_ids_this_run:  # inside a whole run: after_page
        return
    state = st.session_state
    if leading():
        the_room().lead(state.get(LEAD), _here(state.get(PAGE, "")))


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
    _retire_poller()
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
        if url_state.only_this_machine():  # the server listens on loopback alone
            st.warning(url_state.ROOM_NOTE, icon=":material/lan:")
    exercise_room.leader_view(the, _here(st.session_state.get(PAGE, "")))  # the room's pace
    if st.button("Stop leading", key="room_unlead"):
        room_leader.stop_leading()
        st.rerun(scope="app")  # the whole page: the sidebar offers leading again


def _join() -> None:
    """Follow, or lead with the presenter key (typed, never shown), or say how to lead with
    the lead link."""
    room_leader.replaced_note()
    with st.expander("Lead or follow the room", icon=":material/podium:"):
        st.button("Follow the presenter", key="room_follow", on_click=_start_following)
        st.text_input("Presenter key", key="room_typed", type="password")
        typed = bool(st.session_state.get("room_typed"))
        st.button("Lead the room", key="room_lead", on_click=_lead_typed, disabled=not typed)
        if st.session_state.pop("_room_wrong", False):
            st.error("That is not this server's presenter key.", icon=":material/key_off:")
        st.caption(
            "The key and a one-time lead link are on the server's terminal. A browser that "
            "opened the link, or typed the key, leads again after a reload."
        )


def _start_following() -> None:
    st.session_state[FOLLOWING] = True
    _back()


def _lead_typed() -> None:
    """The key typed: this browser leads (the field is emptied either way)."""
    typed = st.session_state.get("room_typed", "")
    st.session_state["room_typed"] = ""
    if room_leader.admit(typed):
        _follow_no_more()
    else:
        time.sleep(WRONG_KEY_DELAY_S)
        st.session_state["_room_wrong"] = True


def _follow_no_more() -> None:
    """This session leads now: it follows no more, and its link says so."""
    st.session_state[FOLLOWING] = False
    st.query_params.pop(FOLLOW_PARAM, None)
    _back()


def _lead_poll(the: room.Room) -> None:
    """The leader's part of a poll: heard (a pass another browser was given since reruns the
    page without it), and its box (its edits are published where the page wrote them:
    after_page, _lead_from_fragment)."""
    room_leader.heard(the)
    _leader_box(the)
