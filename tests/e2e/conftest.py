"""End-to-end fixtures: a real `streamlit run app.py` server and headless Debian Chromium.

A missing browser skips these tests on a developer machine but FAILS them in CI (CI=true).
The server is started in its own process group and always stopped, also when a test fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("PMAPVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
]  # fmt: skip
E2E_DEVICES = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} was not healthy within {timeout} s")


def start_server(extra_args: list[str], env: dict[str, str] | None = None, script: str = "app.py"):
    """Start `streamlit run`; returns (process, base url). Caller must stop_server()."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.headless", "true", "--server.address", "127.0.0.1",
        "--server.port", str(port), "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
    ]  # fmt: skip
    if extra_args:
        cmd += ["--", *extra_args]
    log = open(ROOT / "artifacts" / f"server-{port}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    proc.log = log  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
    except Exception:
        stop_server(proc)
        raise
    return proc, url


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    proc.log.close()  # type: ignore[attr-defined]


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


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    p = context.new_page()
    try:
        yield p
    finally:
        context.close()


def wait_rendered(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished running the script for the current page."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && document.querySelector('[data-testid="stMain"] h1');
        }""",
        timeout=timeout_ms,
    )
    # charts draw after the script finishes: wait for every Plotly chart to have its SVG
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                 .every(c => c.querySelector('.main-svg'))""",
        timeout=timeout_ms,
    )


def screenshot(page, name: str, max_height: int = 6000) -> Path:
    """Screenshot of the whole page: Streamlit scrolls inside its main container, so the
    viewport is grown to the content's height first, then restored."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll(
                 '[data-testid="stMain"], [data-testid="stSidebarContent"]')]
                 .map(e => e.scrollHeight))"""
    )
    page.set_viewport_size({"width": size["width"], "height": min(max_height, max(size["height"], height))})
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path
