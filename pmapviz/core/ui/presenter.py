"""Presenter mode: a layout for a projector, and where each page's main picture goes in it."""

from __future__ import annotations

import functools
import uuid

import streamlit as st

from pmapviz.core.base import settings

PRESENTER_CSS = """
<style>
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { padding-top: 1rem; max-width: 100%; }
[data-testid="stMain"] h1 { font-size: 1.9rem; padding: 0 0 0.4rem 0; }
[data-testid="stToolbarActions"], [data-testid="stMainMenu"], [data-testid="stAppDeployButton"],
[data-testid="stDecoration"], [data-testid="stCaptionContainer"],
[data-testid="stSidebarUserContent"] [data-testid="stNumberInput"],
[data-testid="stSidebarUserContent"] [data-testid="stCode"] { display: none; }
[data-testid="stHeader"] { background: transparent; }
[data-testid="stHeader"], [data-testid="stHeader"] * { pointer-events: none; }
[data-testid="stHeader"] [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"] [data-testid="stExpandSidebarButton"] * { pointer-events: auto; }

</style>
"""

FOLD = "_present_fold"  # a token per time presenter mode turned on in this session
FOLDER = "pmapviz.fold_sidebar"
# Streamlit keeps the sidebar open or closed as this browser last left it (localStorage), and
# that wins over set_page_config's initial_sidebar_state: a sidebar someone once opened stayed
# open when presenter mode was turned on, and the page's buttons were cut to fit beside it.
# Each time presenter mode turns on, this closes it as its own button does (once per token:
# the module is loaded once per page, so a rerun or a remount does not fold it again).
FOLD_JS = """
const folded = new Set();
export default function (component) {
  const { data } = component;
  if (typeof data !== "string" || folded.has(data)) return;
  folded.add(data);
  const fold = () => {
    const side = document.querySelector('[data-testid="stSidebar"]');
    if (side && side.getAttribute("data-collapsed") === "false") {
      const close = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
      if (close) close.click();
    }
  };
  requestAnimationFrame(() => requestAnimationFrame(fold));
}
"""


def toggle() -> bool:
    """Sidebar toggle (and ?present=1): a layout for a projector. The sidebar folds away,
    each page draws its picture first (see :func:`picture_slot`), type is larger and the fine
    print hidden. The device palette is colour-blind safe everywhere and every block carries
    its label."""
    state = st.session_state
    if "present" not in state:
        state["present"] = settings.present(dict(st.query_params))
        _turned()
    on = st.sidebar.toggle(
        "Presenter mode",
        key="present",
        on_change=_turned,
        help="A layout for a projector: the picture first, the sidebar "
        "folded, larger type, no fine print. Also ?present=1 in the "
        "URL.",
    )
    if on:
        st.set_page_config(initial_sidebar_state="collapsed")
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
        if fold := state.get(FOLD):  # draws nothing; closes the sidebar once per turn
            with st.sidebar:
                _folder()(key="present_fold", data=fold, height="content")
    return on


def _turned() -> None:
    """Presenter mode turned on (from the link, or the toggle): a new token to fold by."""
    if st.session_state.get("present"):
        st.session_state[FOLD] = uuid.uuid4().hex


@functools.cache
def _folder():
    """The component that folds the sidebar, registered on first use (inside a run)."""
    return st.components.v2.component(FOLDER, js=FOLD_JS)


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
