"""Presenter mode: a layout for a projector, and where each page's main picture goes in it."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import settings

PRESENTER_CSS = """
<style>
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { padding-top: 1rem; max-width: 100%; }
[data-testid="stMain"] h1 { font-size: 1.9rem; padding: 0 0 0.4rem 0; }
[data-testid="stHeader"], [data-testid="stCaptionContainer"],
[data-testid="stSidebarUserContent"] [data-testid="stNumberInput"],
[data-testid="stSidebarUserContent"] [data-testid="stCode"] { display: none; }

</style>
"""


def toggle() -> bool:
    """Sidebar toggle (and ?present=1): a layout for a projector. The sidebar folds away,
    each page draws its picture first (see :func:`picture_slot`), type is larger and the fine
    print hidden. The device palette is colour-blind safe everywhere and every block carries
    its label."""
    if "present" not in st.session_state:
        st.session_state["present"] = settings.present(dict(st.query_params))
    on = st.sidebar.toggle(
        "Presenter mode",
        key="present",
        help="A layout for a projector: the picture first, the sidebar "
        "folded, larger type, no fine print. Also ?present=1 in the "
        "URL.",
    )
    if on:
        st.set_page_config(initial_sidebar_state="collapsed")
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    return on


def leave() -> None:
    """Leave presenter mode (a button's callback): the switch off, and out of the link."""
    st.session_state["present"] = False
    st.query_params.pop("present", None)


def presenting() -> bool:
    """Whether presenter mode is on."""
    return bool(st.session_state.get("present"))


def picture_slot():
    """Where a page's main picture goes in presenter mode: right under the title, above the
    settings and the prose (a container to fill later); None otherwise (the picture stays
    where the page draws it). Pair with :func:`picture`."""
    return st.container() if presenting() else None


def picture(slot):
    """The container to draw the main picture in: the presenter's slot, or here."""
    return slot if slot is not None else st.container()
