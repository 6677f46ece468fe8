"""Which device set a page runs on: the picker at the top of every page where the server holds
two sets (an accelerator and emulated CPU devices), and the choice it keeps.

Until the person picks a set, each page runs on the set its lessons want (``PageInfo.runs_on``:
several devices, or the machine's own); once picked, the choice holds for every page of the session,
like presenter mode. ``?on=cpu`` (or ``gpu``, ``tpu``) in a link picks it too; a set this server
lacks gets a visible note and the page's default. Switching sets opens the pages afresh, with the
defaults for those devices (settings made for 8 devices would not fit 1).
"""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts, deviceset
from pmapviz.core.ui import url_state

CHOICE = "device_set"  # the person's choice (absent: each page's default)
RUNS = url_state.RUNS_ON  # the set this run uses: fragments and the URL read it
PICKER = "_device_set_picker"
SEEN = url_state.ON_SEEN  # the URL's on= as last read or written
URL_KEY = deviceset.URL_KEY


def label(name: str) -> str:
    """The set in words, from its facts: '1 TPU v5 lite device', '8 emulated CPU devices'."""
    return devicefacts.facts(name).devices_phrase()


def _from_link() -> None:
    """The link's ``on=``, through the settings layer, whenever the URL's differs from the one
    this session last read or wrote (a link opened, or edited by hand); a value this server
    cannot honour keeps the page's default, with a note."""
    text = st.query_params.get(URL_KEY)
    if text is None or text == st.session_state.get(SEEN):
        return
    st.session_state[SEEN] = text
    try:
        name = deviceset.parse(text, f"The link's {URL_KEY}=")
    except valueparse.SettingError as err:
        st.session_state["_device_set_note"] = str(err)
        return
    if name != "auto":
        st.session_state[CHOICE] = name


def current(runs_on: str) -> str:
    """The set this page runs on: the person's choice, else the page's default (``runs_on``,
    a ``deviceset.NEEDS`` word)."""
    _from_link()
    chosen = st.session_state.get(CHOICE)
    name = chosen if chosen in deviceset.names() else deviceset.default(runs_on)
    st.session_state[RUNS] = name
    return name


def running() -> str | None:
    """The set of this session's last full run (a fragment's rerun runs on it too)."""
    return st.session_state.get(RUNS)


def _picked() -> None:
    name = st.session_state.get(PICKER)
    if name is None or name == st.session_state.get(RUNS):
        return
    st.session_state[CHOICE] = name
    url_state.reset_pages()  # settings made for the other set's count would not fit


def picker(name: str) -> None:
    """Where the server holds two sets: which one this page runs on, and a switch (the main
    area's first row, so a projector shows it too). Nothing on a one-set server."""
    if note := st.session_state.pop("_device_set_note", None):
        st.warning(note, icon=":material/link_off:")
    names = deviceset.names()
    if len(names) < 2:
        return
    st.session_state[PICKER] = name  # the page's set, also when it came from its default
    st.segmented_control(
        "Devices this page runs on",
        names,
        format_func=label,
        key=PICKER,
        on_change=_picked,
        help="This server holds both sets at once. Lessons about splitting work start on the "
        "larger set, timing on the machine's own devices; switching opens the pages with the "
        "defaults for those devices. Also ?on=" + "|".join(names) + " in a link.",
    )
