"""AppTest helpers: run app.py (the router) in-process, optionally with command-line args."""

import sys

import pytest
import streamlit.testing.v1.app_test as app_test_module
import streamlit.testing.v1.local_script_runner as local_runner_module
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT


class _RoutedPagesManager(PagesManager):
    """AppTest resets Streamlit's legacy ``pages/`` flag before every run, so every run would
    look like the first request of a fresh server (see ``ui.ensure_routed``). A real server
    leaves that mode after its first request; model that steady state here. The fresh-server
    path itself is covered by the e2e deep-link test."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        PagesManager.uses_pages_directory = False


_SCRIPTS = ScriptCache()  # one per process, as a real server keeps one


def steady_state_server(monkeypatch) -> None:
    """Make AppTest behave like a server after its first request: the legacy ``pages/`` mode
    left (see ``_RoutedPagesManager``), and scripts compiled once and reused (AppTest makes a
    new ``ScriptCache`` for every run, recompiling app.py and the page each time: ~25 ms of a
    60 ms explorer rerun)."""
    monkeypatch.setattr(app_test_module, "PagesManager", _RoutedPagesManager)
    for module in (app_test_module, local_runner_module):
        monkeypatch.setattr(module, "ScriptCache", lambda: _SCRIPTS)


@pytest.fixture()
def run_app(monkeypatch):
    """run_app(page=None, argv=(), env=None) -> AppTest after the first run (and page switch)."""

    def _run(page: str | None = None, argv=(), env=None, timeout: float = 120,
             query: dict | None = None) -> AppTest:  # fmt: skip
        steady_state_server(monkeypatch)
        monkeypatch.setattr(sys, "argv", ["app.py", *argv])
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout).run()
        if page is not None:
            for k, v in (query or {}).items():
                at.query_params[k] = v
            at.switch_page(page).run()
        return at

    return _run


def all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [
        e.value for kind in ("error", "warning", "info", "success") for e in getattr(at, kind)
    ]
    parts += [t.value for t in at.title] + [h.value for h in at.subheader]
    parts += [h.value for h in at.header] + [c.value for c in at.code]
    return "\n".join(str(p) for p in parts)
