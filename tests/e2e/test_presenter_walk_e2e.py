"""A workshop in presenter mode, driven by clicking only (issue 53): at 1280x720, Home -> the
tour's steps -> Shapes & sharding -> Collectives -> Timing lab -> Home, then the share link
and out of presenter mode, without typing a URL. Presenter mode folds the sidebar away and
hides Streamlit's header, so everything goes through the presenter bar at the top of the first
screen; each view keeps presenter mode, shows no exception and shows its picture in the first
screen (harness.presenter.picture_first: issue 26's check, here for every view the walk reaches;
tests/e2e/test_share_and_present_e2e.py checks the other pages from links)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from harness.browser import EXCEPTIONS, MAIN, SIDEBAR, wait_rendered
from harness.presenter import picture_first
from pmapviz.features.tour import toursteps

VIEWPORT = {"width": 1280, "height": 720}
# the pages the walk opens from the page list, by title, and their url_path
OPENED = {"Shapes & sharding": "explorer", "Collectives": "collectives", "Timing lab": "timing"}
WALKED = ("tour", "home", *OPENED.values())  # each view's picture is checked here
STEPS = len(toursteps.STEPS)


def _in_first_screen(locator) -> None:
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def _open_page(page, title: str, heading: str | None = None) -> None:
    """Through the bar's page list, as a presenter does."""
    pages = page.get_by_role("button", name="Pages", exact=True)
    _in_first_screen(pages)
    menu = page.locator('[data-testid="stPopoverBody"]').filter(has_text="Guided tour")
    for _ in range(3):  # a popover opened while the page still ran can close with that run
        wait_rendered(page)
        pages.click()
        try:
            menu.get_by_role("link", name=title, exact=True).click(timeout=5000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        page.screenshot(path="artifacts/presenter-walk-failed.png")
        raise AssertionError(f"the page list never offered {title}")
    wait_rendered(page)
    shown = page.locator(MAIN).get_by_role("heading", name=heading or title).first
    expect(shown).to_be_visible()
    _still_presenting(page)


def _still_presenting(page) -> None:
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    _in_first_screen(page.get_by_role("button", name="Leave presenter mode"))
    assert "present=1" in page.url


# a long walk (tests/rotation.py): every run checks presenter mode's first screens from links
# (tests/e2e/test_share_and_present_e2e.py) and the tour's buttons in AppTest
@pytest.mark.rotates(cpu_s=18)
def test_a_presenter_walks_the_workshop_by_clicking_only(server, browser):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(server + "/?present=1")  # the one address typed: the README's
        wait_rendered(page)
        _still_presenting(page)
        _open_page(page, "Guided tour")
        for step in range(1, STEPS + 1):
            if step > 1:
                page.get_by_role("button", name="Next").first.click()
                expect(page).to_have_url(re.compile(rf"step={step}(&|$)"))
                wait_rendered(page)
            expect(page.locator(MAIN)).to_contain_text(f"Step {step} of {STEPS}")
            expect(page.locator(f"{MAIN} h2").first).to_contain_text(f"{step}. ")
            jump = page.locator(f"{MAIN} input[aria-label='Jump to step']")
            expect(jump).to_have_value(re.compile(rf"^{step}\. "))  # names the step shown
            _still_presenting(page)
            picture_first(page, f"/tour?step={step}")
        for title, path in (*OPENED.items(), ("Home", "")):
            _open_page(page, title, "pmapviz: see what jax.pmap does" if title == "Home" else None)
            picture_first(page, f"/{path}")
        share = page.locator(MAIN).get_by_role("button", name="Share this view")
        _in_first_screen(share)
        share.click()
        body = page.locator('[data-testid="stPopoverBody"]').filter(has_text="reproduces")
        link = body.locator('[data-testid="stCode"]').first
        expect(link).to_contain_text(server.split("://")[1])
        assert "present=1" not in link.inner_text()  # the view, not the presenter's mode
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Leave presenter mode").click()
        wait_rendered(page)
        assert "present=1" not in page.url
        expect(page.get_by_role("button", name="Leave presenter mode")).to_have_count(0)
        expect(page.locator(SIDEBAR).get_by_text("Presenter mode")).to_be_visible()
    finally:
        context.close()
