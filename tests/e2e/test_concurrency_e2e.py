"""Eight browser sessions at once, on different pages with different settings: every one gets
correct results and sees only its own state."""

import pytest
from playwright.sync_api import expect

from harness import E2E_DEVICES, EXCEPTIONS, MAIN, wait_rendered

pytestmark = pytest.mark.e2e
N = E2E_DEVICES

SESSIONS = [
    ("/explorer?fn=add&s0=3,{n}&s1=3,{n}&a0=1&a1=1&out=1", "Valid.", "(3, {n})"),
    ("/explorer?fn=matmul&s0={n},2,5&s1=5,7&a0=0&a1=None", "Valid.", "({n}, 2, 7)"),
    ("/explorer?fn=double&s0=10000,3", "10,000 elements", "reshape"),
    ("/live?fn=double&s0={n},3", "PASS", "the values match"),
    ("/live?fn=batched_dot&s0={n},5,3&s1={n},5,3", "PASS", "({n}, 5)"),
    ("/collectives?c=psum&n={n}&m=2", "y after", "Communication"),
    ("/collectives?c=all_gather&n=2&m=3", "came from", "Communication"),
    ("/", "Hello, pmap", "y = x * 2"),
]


def test_eight_sessions_at_once(server, browser):
    """Eight tabs of one browser: each page load opens a Streamlit session of its own (a
    websocket of its own), as eight people's browsers do; tabs share the browser's cache of
    Streamlit's scripts, which a context each would compile eight times over."""
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    pages = []
    try:
        for path, *_ in SESSIONS:
            page = ctx.new_page()
            page.goto(server + path.format(n=N), wait_until="commit")  # all load concurrently
            pages.append(page)
        for page, (_, must1, must2) in zip(pages, SESSIONS, strict=True):
            main = page.locator(MAIN)
            expect(main).to_contain_text(must1.format(n=N), timeout=120_000)
            expect(main).to_contain_text(must2.format(n=N))
            wait_rendered(page, timeout_ms=120_000)
            expect(page.locator(EXCEPTIONS)).to_have_count(0)
        # no session sees another's settings: each explorer kept its own function
        expect(pages[0].locator(MAIN)).to_contain_text("Each device adds its blocks of x and y")
        expect(pages[1].locator(MAIN)).to_contain_text("Each device multiplies its block of x by w")
        expect(pages[0].locator(MAIN)).not_to_contain_text("multiplies its block of x by w")
    finally:
        ctx.close()
