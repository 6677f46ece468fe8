"""Debian's Chromium through Playwright, against a server of harness.server: wait for a page
to finish rendering, full-page screenshots, a standard-library PNG reader. Shared by the e2e
tests and the benchmarks."""

from __future__ import annotations

import contextlib
import os
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import expect

from harness.server import ROOT, start_server, stop_server

ARTIFACTS = Path(os.environ.get("PMAPVIZ_SCREENSHOTS") or ROOT / "artifacts" / "screenshots")
CHROMIUM = os.environ.get("PMAPVIZ_CHROMIUM", "/usr/bin/chromium")
MAIN = '[data-testid="stMain"]'  # the page's main area
SIDEBAR = '[data-testid="stSidebar"]'
EXCEPTIONS = '[data-testid="stException"]'  # st.exception boxes: a page that raised
DIAGRAMS = '[data-testid="stHtml"] [role="img"]'  # array diagrams (arrayhtml.array_html)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
    # the tests' browser reaches this machine only: any other host name fails to resolve, so
    # a payload that became an image or a link is seen as a request and never fetched
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]  # fmt: skip
E2E_DEVICES = 4  # the e2e tests' shared server (tests/e2e/conftest.py) runs --devices 4


_SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !!document.querySelector('[data-testid="stMain"] h1')
        && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]')
        && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
               .every(c => c.querySelector('.main-svg'));
}"""


def wait_rendered(page, timeout_ms: int = 60_000, quiet_ms: int = 300) -> float:
    """Wait until Streamlit has finished the script for this page and drawn every chart.

    A page can run twice in a row (a rerun right after the first run), so the settled state
    must hold for ``quiet_ms`` before it counts. Returns the ``time.perf_counter()`` at which
    the final settled state was first seen (what a benchmark should record).
    """
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        remaining = max(1, int((deadline - time.monotonic()) * 1000))
        page.wait_for_function(_SETTLED, timeout=remaining, polling=20)
        settled_at = time.perf_counter()
        page.wait_for_timeout(quiet_ms)
        if page.evaluate(_SETTLED):
            return settled_at
        if time.monotonic() > deadline:
            raise TimeoutError("the page did not settle")


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
    page.set_viewport_size(
        {"width": size["width"], "height": min(max_height, max(size["height"], height))}
    )
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path


@dataclass(frozen=True)
class Png:
    width: int
    height: int
    distinct_rows: int  # of the image's scanlines (as filtered): 1 or 2 for a blank page


def read_png(path: Path) -> Png:
    """Decode a screenshot's structure with the standard library only: the signature, every
    chunk's CRC, the IHDR size, and the zlib-compressed scanlines (exactly one per row, each
    a filter byte and width * bytes-per-pixel). Raises if anything is off."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)  # 8-bit RGB or RGBA
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = 1 + width * (3 if colour == 2 else 4)
    assert len(raw) == height * stride, "the pixel data does not fill width x height"
    rows = {raw[k : k + stride] for k in range(0, len(raw), stride)}
    return Png(width, height, len(rows))


def main_text(page) -> str:
    return page.locator(MAIN).inner_text()


def click_and_wait_for_text(page, button: str, text: str, timeout_ms: int = 120_000) -> str:
    """Click the button named ``button``, expect the main area to show ``text`` (Playwright's
    auto-waiting ``expect``), then wait until the page has settled; returns the main area's
    text."""
    page.get_by_role("button", name=button).first.click()
    expect(page.locator(MAIN)).to_contain_text(text, timeout=timeout_ms)
    wait_rendered(page, timeout_ms=timeout_ms)
    return main_text(page)


@contextlib.contextmanager
def fresh_server(args: list[str], browser, viewport=(1400, 900)):
    """A server of its own (not the session one) and a page on it; both closed afterwards."""
    proc, url = start_server(args, env={"PMAPVIZ_DEVICES": ""})
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        yield url, context.new_page()
    finally:
        context.close()
        stop_server(proc)


def open_in_context(browser, url: str, viewport=(1280, 720)):
    """(a browser context of its own, its page opened at ``url`` and rendered): a person of
    their own, with their own cookies and storage (a presenter, an attendee)."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.goto(url)
    wait_rendered(page)
    return context, page
