"""The pages' part of ``python -m pmapviz doctor``: every page driven through Streamlit's
AppTest, its main buttons pressed, as a server would run it; what each page raised, showed as
an error, or said about the CPU on an accelerator. It lives with the adapters because it drives
Streamlit; pmapviz.doctor (below, no Streamlit) runs it when the CLI hands it over. The tests
make AppTest behave like a server the same way (:func:`steady_server_patches`)."""

from __future__ import annotations

import contextlib
import sys

import streamlit.testing.v1.app_test as app_test_module
import streamlit.testing.v1.local_script_runner as local_runner_module
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

from pmapviz import devicefacts, devices, doctor

CPU_ONLY_WORDS = ("emulated", "jax_num_cpu_devices", "share the cores", "CPU core(s) shared")

# (page, query, buttons pressed in order): each page's main actions, small enough to be quick
PAGE_ACTIONS: tuple[tuple[str, dict, tuple[str, ...]], ...] = (
    ("pages/home.py", {}, ()),
    ("pages/explorer.py", {}, ()),
    ("pages/live.py", {}, ("dot_run",)),
    ("pages/collectives.py", {}, ()),
    ("pages/timing.py", {"sizes": "64,16384", "r": "3"}, ("tl_go",)),
    ("pages/training.py", {"steps": "20"}, ("tr_go", "tr_time")),
    ("pages/cluster.py", {"p": "2", "d": "1"}, ("cl_go",)),
    ("pages/compiled.py", {"src": "collective", "c": "psum"}, ("cp_hidden", "cp_trace")),
    ("pages/meshes.py", {}, ("me_run",)),
    ("pages/tour.py", {"step": "1"}, ()),
    ("pages/tour.py", {"step": "9"}, ("tour_time",)),
)


def steady_server_patches() -> list[tuple[object, str, object]]:
    """(module, attribute, value) that make Streamlit's AppTest behave like a server after its
    first request. AppTest resets Streamlit's legacy ``pages/`` flag before every run, so each
    run would look like a fresh server's first request and be rerouted (``ui.shell.ensure_routed``),
    losing a button's click; and it compiles app.py and the page anew on every run. The tests
    apply the same patches (tests/pages/conftest.py)."""

    class RoutedPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    scripts = _SCRIPTS.setdefault("cache", ScriptCache())  # one per process, as a server's
    return [
        (app_test_module, "PagesManager", RoutedPagesManager),
        *((m, "ScriptCache", lambda: scripts) for m in (app_test_module, local_runner_module)),
    ]


_SCRIPTS: dict = {}


@contextlib.contextmanager
def _patched(patches: list[tuple[object, str, object]]):
    saved = [(m, name, getattr(m, name)) for m, name, _ in patches]
    for m, name, value in patches:
        setattr(m, name, value)
    try:
        yield
    finally:
        for m, name, value in saved:
            setattr(m, name, value)


def section(settings: devices.Settings, progress: doctor.Progress = None) -> list[dict]:
    """Every page through AppTest with its main buttons pressed (``python -m pmapviz doctor``):
    a row per page with its exceptions, errors, and CPU-only words on an accelerator."""
    facts = devicefacts.facts()
    argv = doctor.device_flags(settings)
    rows = []
    for page, query, buttons in PAGE_ACTIONS:
        doctor.say(progress, f"  {page} {query or ''} {' '.join(buttons)}")
        sys_argv, sys.argv = sys.argv, ["app.py", *argv]
        try:
            with _patched(steady_server_patches()):
                at, pressed = _page_run(AppTest, page, query, buttons)
            rows.append({**_page_row(page, query, at, facts), "pressed": pressed})
        except Exception as err:  # noqa: BLE001 - a report, not a crash
            rows.append({"page": page, "query": query, "exceptions": [f"{type(err).__name__}: "
                         f"{str(err)[:200]}"], "errors": [], "cpu_words": []})  # fmt: skip
        finally:
            sys.argv = sys_argv
    return rows


def _page_run(app_test, page: str, query: dict, buttons: tuple[str, ...]):
    """The app, switched to ``page`` with ``query``, and the buttons of ``buttons`` that it
    shows pressed in turn; returns it and the buttons pressed."""
    at = app_test.from_file(str(doctor.ROOT / "app.py"), default_timeout=240).run()
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(page).run()
    pressed = []
    for key in buttons:
        found = [b for b in at.button if b.key == key and not b.disabled]
        if found:
            found[0].click().run()
            pressed.append(key)
    return at, pressed


def _page_row(page: str, query: dict, at, facts: devicefacts.Facts) -> dict:
    texts = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "success",
                                       "error", "title", "header", "subheader", "code")
             for e in getattr(at, kind)]  # fmt: skip
    cpu_words = ([w for w in CPU_ONLY_WORDS if any(w in t for t in texts)]
                 if not facts.emulated else [])  # fmt: skip
    return {"page": page, "query": query,
            "exceptions": [str(e.value)[:300] for e in at.exception],
            "errors": [str(e.value)[:300] for e in at.error], "cpu_words": cpu_words}  # fmt: skip
