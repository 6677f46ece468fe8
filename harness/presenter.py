"""Presenter mode's first screen (issue 26): at 1280x720 a view shows its picture starting
inside the first screen, with the sidebar folded away. Shared by the e2e tests that reach views
from a link (tests/e2e/test_share_and_present_e2e.py) and by clicking
(tests/e2e/test_presenter_walk_e2e.py)."""

from __future__ import annotations

from playwright.sync_api import expect

from harness.browser import ARTIFACTS, EXCEPTIONS

FIRST_PICTURE = """() => {
    const pics = [...document.querySelectorAll('[data-testid="stMain"] [role="img"][aria-label]')]
        .map(p => [p.getBoundingClientRect().top, p.getAttribute('aria-label')])
        .filter(([top]) => top >= 0);
    pics.sort((a, b) => a[0] - b[0]);
    const side = document.querySelector('[data-testid="stSidebar"]');
    return {first: pics[0] || null, count: pics.length,
            sidebar: side ? side.getBoundingClientRect().width : 0,
            sidebarCollapsed: side ? side.getAttribute('data-collapsed') : null};
}"""


def picture_first(page, view: str) -> None:
    """Issue 26: at 1280x720 in presenter mode the view shows its picture (an element with
    role="img" and an aria-label that says what it shows) starting inside the first screen,
    the sidebar folded away; a view whose picture answers a problem shows the problem drawn
    (issue 63: tour step 4's entries that find no device, beside its question). A screenshot
    for the gallery."""
    state = page.evaluate(FIRST_PICTURE)
    assert state["first"] is not None, f"{view}: no picture at all"
    top, label = state["first"]
    assert top < 720, f"{view}: the first picture starts at {top:.0f} px: {label}"
    assert len(label) > 20, label  # says what it shows
    assert state["sidebarCollapsed"] == "true", state  # folded away (Streamlit's attribute)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    name = view.strip("/").replace("?step=", "-step-") or "home"
    page.screenshot(path=str(ARTIFACTS / f"present-{name}.png"))
