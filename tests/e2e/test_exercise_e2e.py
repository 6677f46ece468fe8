"""The room's pace in Chromium (issue 65): a presenter and a follower on the Guided tour's step 4.
The follower attempts the exercise wrong (markup, then the step's own mistake) and then right,
reading "Not yet" with JAX's own words and then "Solved."; the presenter's sidebar counts the
attempts ("N of M solved, K stuck on IndivisibleError (mapped axis 6 > 4 devices)") without
any of the follower's typing; "Show the answer to everyone" moves the follower to the worked
answer."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from harness import terminal
from harness.browser import E2E_DEVICES, EXCEPTIONS, MAIN, SIDEBAR, wait_rendered
from pmapviz.features.exercises import exercisebook

VIEWPORT = {"width": 1280, "height": 720}
FIT = exercisebook.BY_KEY["fit-devices"]
ROWS = E2E_DEVICES + 2
MARKUP = "<b>zq77k</b>, 3"  # the follower's own typing: text on its page, on no other
COUNT = re.compile(r"(\d+) of (\d+) solved")


def _counted(presenter) -> tuple[int, int]:
    """(solved, working) as the presenter's sidebar says now (0, 0: no attempts yet)."""
    text = presenter.locator(SIDEBAR).inner_text()
    found = COUNT.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _attempt(follower, text: str) -> None:
    box = follower.locator(MAIN).get_by_label(FIT.fields[0].label, exact=True)
    box.fill(text)
    box.press("Enter")
    follower.locator(MAIN).get_by_role("button", name="Check").click()


def _sidebar_says(presenter, line: str) -> None:
    expect(presenter.locator(SIDEBAR).get_by_text(line, exact=True)).to_be_visible()


# a long walk (tests/rotation.py): every run checks the same in AppTest
# (tests/features/exercises/ui/test_exercise_room.py: the counts, no attendee's text, the
# answer shown to everyone; test_exercise_box.py: the box's replies)
@pytest.mark.rotates(cpu_s=8)
def test_a_follower_attempts_the_presenter_counts_and_shows_the_answer(server, browser):
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(2)]
    try:
        presenter, follower = (c.new_page() for c in contexts)
        presenter.goto(server + "/")
        wait_rendered(presenter)
        presenter.goto(terminal.lead_link(server))
        wait_rendered(presenter)
        expect(presenter.locator(SIDEBAR).get_by_text("You lead the room")).to_be_visible()
        presenter.goto(server + "/tour?step=4")  # leads again from the pass its browser kept
        wait_rendered(presenter)
        expect(presenter.locator(SIDEBAR).get_by_text("You lead the room")).to_be_visible()
        follower.goto(server + "/?follow=1")
        main = follower.locator(MAIN)
        expect(main.get_by_text(f"Exercise: {FIT.title}")).to_be_visible()
        solved, working = _counted(presenter)  # the shared server's earlier attempts, if any

        _attempt(follower, MARKUP)
        expect(main.get_by_text("Not yet: shape of x not read.", exact=False)).to_be_visible()
        assert main.locator("b", has_text="zq77k").count() == 0  # shown as text, not markup
        _attempt(follower, f"{ROWS}, 3")
        stuck = f"mapped axis {ROWS} > {E2E_DEVICES} devices"
        expect(main.get_by_text(f"Not yet: {stuck}.", exact=False)).to_be_visible()
        expect(main.get_by_text("What JAX itself says (IndivisibleError):")).to_be_visible()
        line = f"{solved} of {working + 1} solved, 1 stuck on IndivisibleError ({stuck})"
        if working == 0:  # the count's first attendee: the line is exactly theirs
            _sidebar_says(presenter, line)
        else:
            expect(presenter.locator(SIDEBAR)).to_contain_text(f"{solved} of {working + 1}")

        _attempt(follower, FIT.answer(E2E_DEVICES)["shape"])
        expect(main.get_by_text("Solved.", exact=True)).to_be_visible()
        expect(presenter.locator(SIDEBAR)).to_contain_text(f"{solved + 1} of {working + 1} solved")
        assert "zq77k" not in presenter.content()  # the follower's typing reached no other page

        presenter.locator(SIDEBAR).get_by_role("button", name="Show the answer to everyone").click()
        expect(main.get_by_text("The worked answer, shown to everyone:")).to_be_visible()
        expect(main).to_contain_text(f"shape of x: {FIT.answer(E2E_DEVICES)['shape']}")
        assert "answer=fit-devices" in follower.url and "answer=fit-devices" in presenter.url
        expect(
            presenter.locator(SIDEBAR).get_by_role("button", name="Answer shown to everyone")
        ).to_be_disabled()
        for page in (presenter, follower):
            assert page.locator(EXCEPTIONS).count() == 0
    finally:
        for context in contexts:
            context.close()
