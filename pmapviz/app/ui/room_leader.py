"""Who leads the room, in a session: the one-time lead link, the leader's pass its browser
keeps, and the leader's presence as followers are told of it. The sidebar's panel and the
followers' polling are :mod:`pmapviz.app.ui.room_panel`; the room itself (key, lead link, pass,
step) is :mod:`pmapviz.core.base.room`.

A browser leads by opening the lead link the server printed on its terminal (``?lead=<token>``:
the token leaves the address bar in the run that opened it, and opens once) or by typing the
presenter key in the panel's password field; the key is drawn on no page. Either way the
session holds the room's leader pass, which its browser keeps in a cookie
(:mod:`pmapviz.core.ui.browser_store`) as long as the pass lasts; the next session's first run
reads it back, so a reload (or any page the browser opens) leads again. A newer pass (the next
lead link, or the key typed in another browser) ends it, and so do "Stop leading" and a server
restart. Followers say so when no leader is present: its page closed (Streamlit ended its
session) or it went silent (:data:`pmapviz.core.base.room.LEADER_SILENCE_S`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pmapviz.app.ui import lead_link
from pmapviz.core.base import room
from pmapviz.core.devices import jaxstartup
from pmapviz.core.ui import browser_store, shell

LEAD = "_room_lead"  # the leader pass this session was given (a lead link, or the key typed)
LEAD_PARAM = room.LEAD_KEY  # the lead link's query key: /?lead=<token>
PASS_COOKIE = "pmapviz_lead"  # the browser's cookie for the pass (and the server's port)
RESUMED = "_room_resumed"  # this session looked for a pass its browser kept
FORGET = "_room_forget"  # the browser should forget its pass (stopped leading, or a stale one)
REPLACED = "_room_replaced"  # this session led until another browser was given the pass
SPENT = (
    "This lead link was opened already: each opens once. Lead with the presenter key the "
    "server's terminal shows (sidebar, 'Lead or follow the room'), or with the next lead link "
    "it printed."
)
AWAY = "No presenter right now: you stay on their last step and follow again when they are back."


def the_room() -> room.Room:
    """This server's room, with the key it was started with (or one made now and printed on
    a real server's terminal: an AppTest, the doctor's page check, has no one to read it), and,
    on a real server's first visit, its first lead link printed there (``pmapviz serve``
    printed it at start)."""
    the = room.room(jaxstartup.applied_settings().presenter_key, _announce)
    if shell.real_server() and (token := the.first_invite()) is not None:
        _announce(lead_link.line(token))
    return the


def _announce(text: str) -> None:
    """Print on a real server's terminal only (not in an AppTest: the doctor's page check)."""
    if shell.real_server():
        print(text, file=sys.stderr, flush=True)


def leading() -> bool:
    """Whether this session holds the room's leader pass (a newer one, given to another
    browser, ends it)."""
    return the_room().holds(st.session_state.get(LEAD))


def arrive(follow_link: Callable[[], bool]) -> bool:
    """A lead link opened (``?lead=<token>``): its token leaves the address bar in this run,
    and this session leads if it was the unspent one (else one line says why not). Otherwise,
    once per session, the pass this browser kept (a reload) leads again, unless the page was
    opened as a follow link (``follow_link()``: the presenter trying the link follows); a stale
    one (a newer leader, a restarted server) is forgotten. Returns whether this session began
    leading in this run (it then follows no more)."""
    state = st.session_state
    began = False
    if LEAD_PARAM in st.query_params:
        token = st.query_params.get(LEAD_PARAM)
        st.query_params.pop(LEAD_PARAM, None)  # out of the address bar: this run rewrites it
        state[RESUMED] = True
        began = _open_lead_link(token)
    elif RESUMED not in state:
        state[RESUMED] = True
        kept = None if follow_link() else browser_store.read(_cookie())
        if kept is not None and the_room().holds(kept):
            began = now_leading(kept)
        elif kept is not None:
            state[FORGET] = True
    if LEAD in state and not leading():  # another browser was given the pass meanwhile
        del state[LEAD]
        state[REPLACED] = True
    return began


def _open_lead_link(token: object) -> bool:
    """Open the lead link: lead, and print the next one on the server's terminal; a spent
    (or never valid) token leads no one and says so."""
    the = the_room()
    given = the.redeem(token)
    if given is None:
        st.error(SPENT, icon=":material/key_off:")
        return False
    if shell.real_server():
        _announce(lead_link.line(the.invite(), first=False))
    st.toast("This browser leads the room, also after a reload.", icon=":material/podium:")
    return now_leading(given)


def admit(typed: object) -> bool:
    """The key typed: this session leads (True), or it was not the key."""
    given = the_room().admit(typed)
    return given is not None and now_leading(given)


def now_leading(given: str) -> bool:
    """This session leads with the pass ``given``; its browser keeps it (:func:`keep_pass`)."""
    state = st.session_state
    state[LEAD] = given
    state.pop(FORGET, None)
    return True


def stop_leading() -> None:
    """Stop leading: the pass is revoked (followers are told at once that no one leads) and
    this browser forgets it."""
    state = st.session_state
    the_room().revoke(state.pop(LEAD, None))
    state[FORGET] = True


def _cookie() -> str:
    return browser_store.cookie_name(PASS_COOKIE)


def keep_pass() -> None:
    """While leading, this browser keeps the pass (a cookie as long as the pass lasts); once
    stopped, it forgets it. Whole runs only: never inside the poll's fragment."""
    state = st.session_state
    if leading():
        browser_store.keep(_cookie(), state[LEAD], the_room().pass_left_s(), key="room_pass_keep")
    elif state.pop(FORGET, False):
        browser_store.keep(_cookie(), "", 0, key="room_pass_forget")


def heard(the: room.Room) -> None:
    """The leader's poll: heard (followers know a leader is present). A pass replaced by a
    newer one (another browser opened the next lead link or typed the key) or run out leads
    no more: the whole page reruns without it (and says so)."""
    state = st.session_state
    ctx = get_script_run_ctx()
    if not the.heard_leader(state[LEAD], ctx.session_id if ctx else ""):
        del state[LEAD]
        state[REPLACED] = True
        st.rerun(scope="app")


def replaced_note() -> None:
    """Once, after this session's lead ended elsewhere: a toast says so."""
    if st.session_state.pop(REPLACED, False):
        st.toast("Another browser leads the room now.", icon=":material/podium:")


def following_line(the: room.Room) -> None:
    """A follower in step: following, or no presenter right now (the leader's page closed,
    stopped leading or went silent: :data:`room.LEADER_SILENCE_S`)."""
    if the.leader_present(connected=connected):
        st.info("Following the presenter.", icon=":material/podium:")
    else:
        st.warning(AWAY, icon=":material/person_off:")


def connected(session: str) -> bool:
    """Whether a leader's ``session`` still has its page open (Streamlit ends a session as
    its page closes or reloads: followers hear of it at their next poll, not after a silence).
    Outside a real server (an AppTest) every session counts as open."""
    if not shell.real_server():
        return True
    return runtime.get_instance().is_active_session(session)
