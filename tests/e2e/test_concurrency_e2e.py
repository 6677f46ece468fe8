"""Eight sessions at once, on different pages with different settings: every one gets correct
results and sees only its own state.

Each session is a browser's first request over Streamlit's own protocol (harness.stclient: a
websocket of its own, the URL's page and query), all eight sent before any has finished, so the
server runs the eight scripts at once. Sessions share nothing in the browser that could mix
their state; what could is the server's, and that is what this drives. (Several Chromium tabs on
one server at once: tests/e2e/test_follow_e2e.py's presenter and followers.)"""

from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import E2E_DEVICES, stclient

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


def test_eight_sessions_at_once(server):
    with ThreadPoolExecutor(len(SESSIONS)) as pool:
        pages = list(
            pool.map(lambda s: stclient.open_link(server, s[0].format(n=N), timeout=180), SESSIONS)
        )
    for page, (path, must1, must2) in zip(pages, SESSIONS, strict=True):
        text = "\n".join(page.texts())
        assert page.finished and not page.exceptions, (path, page.exceptions)
        assert must1.format(n=N) in text and must2.format(n=N) in text, (path, text[:800])
    # no session sees another's settings: each explorer kept its own function
    first, second = ("\n".join(p.texts()) for p in pages[:2])
    assert "Each device adds its blocks of x and y" in first
    assert "Each device multiplies its block of x by w" in second
    assert "multiplies its block of x by w" not in first
