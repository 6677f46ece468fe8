"""The page list drawn: the sidebar's menu on every page and Home's links, from the registry
(:data:`pmapviz.app.page_registry.PAGES`)."""

from __future__ import annotations

import streamlit as st

from pmapviz.app.page_registry import PAGES


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
