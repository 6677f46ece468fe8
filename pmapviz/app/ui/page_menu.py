"""The page list drawn: the sidebar's menu on every page and Home's links, from the registry
(:data:`pmapviz.app.page_registry.PAGES`)."""

from __future__ import annotations

import streamlit as st

from pmapviz.app.page_registry import PAGES
from pmapviz.core.ui import presenter, url_state


def page_menu() -> None:
    """The page list at the top of the sidebar (app.py's navigation is hidden, and so is
    Streamlit's list of the pages/ files, which a fresh server flashed on a deep link)."""
    for p in PAGES:
        st.sidebar.page_link(p.path, label=p.title, icon=p.icon)
    st.sidebar.divider()


def page_links() -> None:
    """Every page but Home, two columns of links with a line on each (Home's list)."""
    cols = st.columns(2)
    for k, info in enumerate(PAGES[1:]):
        with cols[k % 2]:
            st.page_link(info.path, label=info.title, icon=info.icon)
            st.caption(info.blurb)


def presenter_bar(url_path: str) -> None:
    """In presenter mode, the row a presenter drives from, at the top of the first screen
    (the sidebar is folded away and Streamlit's header hidden on a projector): every page,
    the share link, and the way out of presenter mode. Page links keep this session, so
    presenter mode with it."""
    if not presenter.presenting():
        return
    row = st.container(horizontal=True, horizontal_alignment="right", key="presenter_bar")
    with row.popover("Pages", icon=":material/menu:"):
        for p in PAGES:
            st.page_link(p.path, label=p.title, icon=p.icon)
    url_state.share_link(url_path or "home", where=row, key=f"share_bar_{url_path or 'home'}")
    row.button(
        "Leave presenter mode",
        key="presenter_leave",
        icon=":material/close_fullscreen:",
        on_click=presenter.leave,
    )
