"""The app's shell: the page list, routing every page through app.py, and the last resort
when a page (or a fragment of one) meets an error nobody foresaw."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from dataclasses import dataclass

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from pmapviz import deviceset, devicesetup
from pmapviz.ui import device_sets


@dataclass(frozen=True)
class PageInfo:
    """One page: its file, title, icon, URL path, line on Home, default device set, and the
    checks the doctor and the tests run on it (``checks``: each a query and the buttons pressed
    in order: the page's main actions, small enough to be quick)."""

    path: str
    title: str
    icon: str
    url_path: str
    blurb: str
    runs_on: str = "many"  # its default device set (deviceset.NEEDS): lessons want many
    checks: tuple[tuple[dict, tuple[str, ...]], ...] = (({}, ()),)


PAGES = (
    PageInfo(
        "pages/home.py",
        "Home",
        ":material/home:",
        "home",
        "What pmap does, your devices, and a live hello-pmap.",
    ),
    PageInfo(
        "pages/explorer.py",
        "Shapes & sharding",
        ":material/grid_view:",
        "explorer",
        "Set shapes, in_axes and out_axes; see how pmap splits them.",
    ),
    PageInfo(
        "pages/live.py",
        "Live outputs",
        ":material/play_circle:",
        "live",
        "Run pmap on real values, per device, checked against jit(vmap(f)).",
        checks=(({}, ("dot_run",)),),
    ),
    PageInfo(
        "pages/collectives.py",
        "Collectives",
        ":material/hub:",
        "collectives",
        "psum, all_gather, ppermute and friends, before and after, per device.",
    ),
    PageInfo(
        "pages/timing.py",
        "Timing lab",
        ":material/timer:",
        "timing",
        "pmap vs vmap vs shard_map: compile, transfer and compute, and the floor.",
        "real",
        checks=(({"sizes": "64,16384", "r": "3"}, ("tl_go",)),),
    ),
    PageInfo(
        "pages/training.py",
        "Data-parallel training",
        ":material/model_training:",
        "training",
        "Sharded batches, replicated parameters, pmean of gradients.",
        checks=(({"steps": "20"}, ("tr_go", "tr_time")),),
    ),
    PageInfo(
        "pages/cluster.py",
        "Multi-process",
        ":material/lan:",
        "cluster",
        "jax.distributed here or on a real cluster: local versus global devices.",
        checks=(({"p": "2", "d": "1"}, ("cl_go",)),),
    ),
    PageInfo(
        "pages/compiled.py",
        "Compiled program",
        ":material/memory_alt:",
        "compiled",
        "The collectives XLA really emits, cost and memory, a per-device timeline.",
        checks=(({"src": "collective", "c": "psum"}, ("cp_hidden", "cp_trace")),),
    ),
    PageInfo(
        "pages/meshes.py",
        "Meshes & PartitionSpecs",
        ":material/grid_on:",
        "meshes",
        "Named meshes, PartitionSpecs, and your f with jit and shard_map.",
        checks=(({}, ("me_run",)),),
    ),
    PageInfo(
        "pages/tour.py",
        "Guided tour",
        ":material/school:",
        "tour",
        "A step-by-step workshop path through pmap.",
        checks=(({"step": "1"}, ()), ({"step": "9"}, ("tour_time",))),
    ),
)


_ROUTER = threading.local()  # per script thread: is app.py's router running this page?


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


def page_info(path: str) -> PageInfo:
    """The entry of the page in file ``path``."""
    return next(p for p in PAGES if p.path == path)


def by_url_path(url_path: str) -> PageInfo:
    """The page entry ``st.navigation`` chose (its url_path; the default page's is empty)."""
    return next((p for p in PAGES if p.url_path == url_path), PAGES[0])


def device_report() -> devicesetup.DeviceReport:
    """The devices of this server process (configured once, by app.py, before JAX started;
    what they are is read once, by :mod:`pmapviz.devicefacts`)."""
    return devicesetup.describe(devicesetup.applied_settings())


UNEXPECTED = (
    "This page ran into an unexpected problem and stopped. The server is fine and "
    "other pages keep working: change a setting, or open the page again from the "
    "sidebar."
)


def page_failed(err: BaseException) -> None:
    """What a person sees when a page meets an error nobody foresaw: one clear line and the
    exception's type, never a traceback or a server path (the log has the details)."""
    st.error(UNEXPECTED, icon=":material/error:")
    with st.expander("Details"):
        st.code(type(err).__name__, language=None)


def fragment(body):
    """``st.fragment`` with app.py's last resort inside it: an error raised in a fragment is
    shown by Streamlit's fragment runner (a traceback) before app.py's ``try`` around the page
    could catch it, so the fragment gets the same one clear message itself."""

    @functools.wraps(body)
    def guarded(*args, **kwargs):
        try:  # a fragment's rerun skips app.py: it runs on the set of the page's last full run
            with deviceset.use(device_sets.running()):
                return body(*args, **kwargs)
        except Exception as err:  # noqa: BLE001  (as in app.py)
            page_failed(err)

    return st.fragment(guarded)
