"""The dashboard from a pip install: the wheel built from this checkout, installed into a fresh
venv (tests/wheelbuild.py's ``installed``), served by ``pmapviz serve --devices 4`` from a
folder with no checkout in it, every page opened in headless Chromium: 0 errors."""

from __future__ import annotations

import signal
import subprocess

import pytest
from playwright.sync_api import expect

from harness.browser import EXCEPTIONS, MAIN, wait_rendered
from harness.server import free_port, stop_group, wait_healthy
from pmapviz.app.page_registry import PAGES
from pmapviz.core.ui.shell import UNEXPECTED

# tests/wheelbuild.py's ``installed``, built once a run: on tests/test_packaging.py's worker
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def served(installed):
    port = free_port()
    log = installed.cwd / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [installed.venv / "bin" / "pmapviz", "serve", "--devices", "4", "--port", str(port)],
            cwd=installed.cwd,
            env=installed.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout=120)
        yield url, proc, log
    finally:
        stop_group(proc, signal.SIGINT)


def test_the_installed_package_serves_every_page_with_no_error(served, browser, installed):
    url, proc, log = served
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        for info in PAGES:
            page.goto(f"{url}/{'' if info is PAGES[0] else info.url_path}")
            wait_rendered(page, timeout_ms=180_000)
            expect(page.locator(f"{MAIN} h1").first).to_be_visible()
            assert page.locator(EXCEPTIONS).count() == 0, info.title
            assert UNEXPECTED not in page.locator(MAIN).inner_text(), info.title
            assert "could not start" not in page.locator(MAIN).inner_text(), info.title
    finally:
        context.close()
    assert errors == []
    served_from = subprocess.run(
        [installed.python, "-c", "import pmapviz; print(pmapviz.__file__)"],
        cwd=installed.cwd,
        env=installed.env,
        capture_output=True,
        text=True,
    ).stdout
    assert served_from.startswith(str(installed.site))  # the wheel's, not the checkout's
    text = log.read_text()
    assert "presenter key" in text and "Traceback" not in text
