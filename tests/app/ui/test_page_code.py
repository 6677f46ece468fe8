"""Streamlit's page scripts compiled once, up front, under the parser's lock
(pmapviz.app.ui.page_code)."""

import sys

from streamlit.testing.v1 import AppTest

from pmapviz.app.page_registry import PAGES
from pmapviz.app.ui import page_code
from pmapviz.core.base import pythonast
from tests.conftest import ROOT
from tests.pages.conftest import steady_state_server


def test_the_first_run_compiles_every_page_script_under_the_lock_and_later_runs_none(
    monkeypatch,
):
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "app.py")])
    monkeypatch.setattr(page_code, "_WARMED", set())
    compiled, held = [], []
    warm = page_code.warm

    def spy(paths):
        n = warm(paths)
        compiled.append(n)
        return n

    locked = pythonast.LOCK

    class Seen:  # the lock, noting whether it was held while a page script was compiled
        def __enter__(self):
            locked.acquire()
            held.append(True)

        def __exit__(self, *exc):
            locked.release()

    monkeypatch.setattr(page_code, "warm", spy)
    monkeypatch.setattr(pythonast, "LOCK", Seen())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(PAGES[1].path).run()
    assert not at.exception
    assert compiled[0] == len(PAGES) and set(compiled[1:]) == {0}  # once, then never again
    assert {p.path for p in PAGES} == page_code._WARMED
    assert len(held) >= len(PAGES)  # each compile inside the lock
