"""The dashboard from a pip install: the wheel built from this checkout, installed into a fresh
venv (tests/wheelbuild.py's ``installed``), served by ``pmapviz serve --devices 4`` from a
folder with no checkout in it: every page opened as a browser's first request does (a new
session over Streamlit's protocol, harness.stclient), and the first page drawn in headless
Chromium: 0 errors. (What a page draws in Chromium is the same whoever installed it: the
other e2e tests draw every page from the checkout, at two CPU-seconds of Chromium a page.)"""

from __future__ import annotations

import signal
import subprocess

import pytest
from playwright.sync_api import expect

from harness import stclient
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


# a long walk (tests/rotation.py): every run checks what the wheel holds (tests/test_packaging.py)
@pytest.mark.rotates(cpu_s=21)
def test_the_installed_package_serves_every_page_with_no_error(served, browser, installed):
    url, proc, log = served
    for info in PAGES:
        path = "/" if info is PAGES[0] else f"/{info.url_path}"
        shown = stclient.open_link(url, path, timeout=180)
        texts = shown.texts()
        assert shown.finished and not shown.exceptions, (path, shown.exceptions)
        assert UNEXPECTED not in texts and not any("could not start" in t for t in texts), path
        title = "pmapviz" if info is PAGES[0] else info.title  # Home's h1 names the app
        assert any(title in t for t in shown.texts("heading")), (path, texts[:5])
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{url}/")
        wait_rendered(page, timeout_ms=180_000)
        expect(page.locator(f"{MAIN} h1").first).to_be_visible()
        assert page.locator(EXCEPTIONS).count() == 0
        assert "could not start" not in page.locator(MAIN).inner_text()
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
