"""The app's shell: routing every page through app.py, and the last resort when a page (or a
fragment of one) meets an error nobody foresaw. The page list is the app's
(:mod:`pmapviz.app.page_registry`): its pages' schemas belong to features."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable

import streamlit as st
from streamlit import runtime
from streamlit.runtime.pages_manager import PagesManager

from pmapviz.core.base import pythonast
from pmapviz.core.devices import deviceset, jaxstartup
from pmapviz.core.ui import device_sets

_ROUTER = threading.local()  # per script thread: is app.py's router running this page?
_LINK_WRITTEN: dict[str, Callable[[], None]] = {}  # name -> hook (see on_link_written)
_LOG = logging.getLogger(__name__)  # no handler of its own: WARNING and above reach stderr


@contextlib.contextmanager
def routing(device_set: str | None = None):
    """app.py runs the chosen page inside this, so :func:`ensure_routed` can tell, on the
    device set ``device_set`` (``deviceset.use``: every runner's devices, JAX's default)."""
    _ROUTER.active = True
    try:
        with deviceset.use(device_set):
            yield
    finally:
        _ROUTER.active = False


def ensure_routed() -> None:
    """First line of every page: make sure the page runs inside app.py's router.

    A folder named ``pages/`` next to the main script makes Streamlit start each new server
    process in its legacy multipage mode, where ``/explorer`` runs ``pages/explorer.py``
    directly, skipping app.py (device set-up, panel, navigation). That happens to share links
    opened on a fresh server. When it does, switch the process to ``st.navigation`` mode, which
    app.py uses, and rerun: the same URL then goes through app.py.

    The test is this run's own (:func:`routing`), not Streamlit's process-wide flag: with two
    such links opened at once, the first page to get here clears the flag, and the second,
    started in the legacy mode too, used to read the cleared flag and run outside app.py
    (before app.py had set up the devices: JAX then started with the default count).
    """
    if getattr(_ROUTER, "active", False):
        return
    PagesManager.uses_pages_directory = False
    st.markdown(":material/hourglass_top: Starting pmapviz: JAX is setting up the devices…")
    time.sleep(0.15)  # sent to the browser before the rerun starts JAX, which holds the GIL
    st.rerun()


def device_report() -> jaxstartup.DeviceReport:
    """The devices of this server process (configured once, by app.py, before JAX started;
    what they are is read once, by :mod:`pmapviz.core.devices.devicefacts`)."""
    return jaxstartup.describe(jaxstartup.applied_settings())


UNEXPECTED = (
    "This page ran into an unexpected problem and stopped. The server is fine and "
    "other pages keep working: change a setting, or open the page again from the "
    "sidebar."
)


def page_failed(err: BaseException) -> None:
    """What a person sees when a page meets an error nobody foresaw: one clear line and the
    exception's type, never a traceback or a server path. The server's terminal (a real
    server's: not the doctor's page check, whose report is all it prints) has the traceback."""
    if real_server():  # formatting the traceback parses its lines (CPython 3.11): see pythonast
        with pythonast.LOCK:
            _LOG.error("pmapviz: a page failed (%s)", type(err).__name__, exc_info=err)
    st.error(UNEXPECTED, icon=":material/error:")
    with st.expander("Details"):
        st.code(type(err).__name__, language=None)


def fragment(body):
    """``st.fragment`` with app.py's last resort inside it: an error raised in a fragment is
    shown by Streamlit's fragment runner (a traceback) before app.py's ``try`` around the page
    could catch it, so the fragment gets the same one clear message itself. A run of it that
    changed this session's link calls the hooks of :func:`on_link_written`."""

    @functools.wraps(body)
    def guarded(*args, **kwargs):
        before = dict(st.query_params)
        try:  # a fragment's rerun skips app.py: it runs on the set of the page's last full run
            with deviceset.use(device_sets.running()):
                result = body(*args, **kwargs)
        except Exception as err:  # noqa: BLE001  (as in app.py)
            page_failed(err)
            return None
        if dict(st.query_params) != before:
            for hook in list(_LINK_WRITTEN.values()):
                hook()
        return result

    return st.fragment(guarded)


def on_link_written(name: str, hook: Callable[[], None]) -> None:
    """Call ``hook()`` after each run of a page's :func:`fragment` that wrote a new link (an
    edit that reran only that fragment: app.py's after-page step does not run then). The room
    publishes a leader's edit from it. One hook per ``name``: registering again replaces it."""
    _LINK_WRITTEN[name] = hook


def real_server() -> bool:
    """Whether this process is a real Streamlit server (an AppTest, the doctor's page check,
    has a runtime too: a mock one)."""
    return runtime.exists() and type(runtime.get_instance()) is runtime.Runtime
