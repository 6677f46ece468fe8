"""Streamlit's page scripts compiled once, up front, under the parser's lock
(pmapviz.app.ui.page_code)."""

import sys

from streamlit.runtime.scriptrunner import magic
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

from pmapviz.app.page_registry import PAGES
from pmapviz.app.ui import page_check, page_code
from pmapviz.core.base import pythonast
from tests.conftest import ROOT
from tests.pages.conftest import steady_state_server


def test_every_page_script_is_parsed_once_first_and_under_the_lock(monkeypatch):
    """Streamlit parses a page script (its "magic") when it compiles it: each page's parse
    happens in the first run, while the lock is held, and never again."""
    # a fresh server process: its own compiled scripts (the suite's AppTests share one cache,
    # as a server's sessions do) and nothing warmed yet
    monkeypatch.setitem(page_check._SCRIPTS, "cache", ScriptCache())
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "app.py")])
    monkeypatch.setattr(page_code, "_WARMED", set())
    pages = {p.path for p in PAGES}
    parsed: list[tuple[str, bool, int]] = []  # (page script, lock held, run)
    run = [0]
    add_magic = magic.add_magic

    def spy(code, script_path):
        if script_path in pages:
            parsed.append((script_path, pythonast.LOCK.locked(), run[0]))
        return add_magic(code, script_path)

    monkeypatch.setattr(magic, "add_magic", spy)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    for page in PAGES[1:4]:  # later runs, on other pages
        run[0] += 1
        at.switch_page(page.path).run()
        assert not at.exception, page.title
    assert sorted(path for path, _, _ in parsed) == sorted(pages)  # each once
    assert all(held and r == 0 for _, held, r in parsed), parsed  # in the first run, locked
    assert page_code.warm(sorted(pages)) == 0  # nothing left to compile
