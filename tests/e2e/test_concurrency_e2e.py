"""Eight browser sessions at once, on different pages with different settings: every one gets
correct results and sees only its own state."""

import pytest

from tests.e2e.harness import E2E_DEVICES, wait_rendered

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
    contexts, pages = [], []
    try:
        for path, *_ in SESSIONS:
            ctx = browser.new_context(viewport={"width": 1300, "height": 900})
            contexts.append(ctx)
            page = ctx.new_page()
            page.goto(server + path.format(n=N), wait_until="commit")  # all load concurrently
            pages.append(page)
        for page, (path, must1, must2) in zip(pages, SESSIONS, strict=True):
            wait_rendered(page, timeout_ms=120_000)
            text = page.locator('[data-testid="stMain"]').inner_text()
            assert must1.format(n=N) in text, (path, text[:500])
            assert must2.format(n=N) in text, (path, text[:500])
            assert page.locator('[data-testid="stException"]').count() == 0
        # no session sees another's settings: each explorer kept its own function
        main = pages[0].locator('[data-testid="stMain"]').inner_text()
        assert "Each device adds its blocks of x and y" in main  # fn=add's own description
        main = pages[1].locator('[data-testid="stMain"]').inner_text()
        assert "Each device multiplies its block of x by w" in main  # fn=matmul's own
    finally:
        for ctx in contexts:
            ctx.close()
