"""End-to-end fixtures: a real `streamlit run app.py` server and headless Debian Chromium.

A missing browser skips these tests on a developer machine but FAILS them in CI (CI=true).
The server is started in its own process group and always stopped, also when a test fails.

Under pytest-xdist each worker has its own session: its own server (on a free port) and its
own browser. Assertions on the page use Playwright's auto-waiting ``expect``; its default
timeout is raised from 5 s to EXPECT_TIMEOUT_MS, since a page here runs real JAX programs on
a 2-core machine that another test worker shares.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from harness import CHROMIUM, CHROMIUM_ARGS, E2E_DEVICES, ROOT, start_server, stop_server

EXPECT_TIMEOUT_MS = 60_000
expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture(scope="session")
def server():
    (ROOT / "artifacts").mkdir(exist_ok=True)
    env = {k: "" for k in ("PMAPVIZ_DEVICES", "PMAPVIZ_PLATFORM")}
    proc, url = start_server(["--devices", str(E2E_DEVICES)], env=env)
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def browser():
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        msg = f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package."
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI must run the browser tests; it never skips them)")
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


VIEWPORT = {"width": 1400, "height": 900}


@pytest.fixture(scope="session")
def _tab(browser):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        yield [context.new_page()]
    finally:
        context.close()


@pytest.fixture()
def page(_tab):
    """The worker's one browser tab, reused: each test opens its own address in it (a new page
    load, so a new Streamlit session), which costs Chromium about half a fresh context. A
    test that installs handlers, routes or init scripts takes ``fresh_page`` instead."""
    if _tab[0].is_closed():
        _tab[0] = _tab[0].context.new_page()
    p = _tab[0]
    p.set_viewport_size(VIEWPORT)
    try:
        yield p
    finally:
        if not p.is_closed():
            p.goto("about:blank")  # ends this test's session before the next test's


@pytest.fixture()
def fresh_page(browser):
    """A page in a browser context of its own, closed after the test."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        yield context.new_page()
    finally:
        context.close()
