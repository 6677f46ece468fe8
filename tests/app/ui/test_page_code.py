"""Streamlit's parses of the app's scripts hold the parser's lock (pmapviz.app.ui.page_code),
also after Streamlit drops its compiled scripts, as it does when the last session leaves."""

import sys

from streamlit.runtime.scriptrunner import magic
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

from pmapviz.app.page_registry import PAGES
from pmapviz.app.ui import page_check, page_code
from pmapviz.core.base import pythonast
from tests.conftest import ROOT
from tests.pages.conftest import steady_state_server

APP = str(ROOT / "app.py")


def test_every_parse_of_a_script_holds_the_lock_also_after_streamlit_drops_its_cache(monkeypatch):
    """A CI run met `SystemError: AST constructor recursion depth mismatch` on the explorer:
    every session had left the hostile-link server, so Streamlit dropped its compiled scripts,
    and the next session's page was parsed again beside another session's f. Here: the first
    run, then the cache dropped as Streamlit drops it, then runs on other pages; every parse
    after app.py's first (which comes before any pmapviz code) holds the lock."""
    cache = ScriptCache()  # a fresh server process's, not the suite's shared one
    monkeypatch.setitem(page_check._SCRIPTS, "cache", cache)
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", [APP])
    parsed: list[tuple[str, bool]] = []  # (script, lock held)

    def streamlits(code, script_path):  # Streamlit's own, unguarded: the guard must wrap it
        parsed.append((script_path, pythonast.LOCK.locked()))
        return code

    monkeypatch.setattr(magic, "add_magic", streamlits)
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    assert parsed[0] == (APP, False)  # app.py, compiled before app.py could guard anything
    assert (PAGES[0].path, True) in parsed  # Home, in the first run, under the lock
    first = len(parsed)
    cache.clear()  # what Streamlit does when the last session leaves
    at.run()
    for page in PAGES[1:3]:
        at.switch_page(page.path).run()
        assert not at.exception, page.title
    again = parsed[first:]
    assert {path for path, _ in again} == {APP, PAGES[0].path, PAGES[1].path, PAGES[2].path}
    assert all(held for _, held in again), again
    assert page_code.guard() is False  # in place once; a later run adds nothing
