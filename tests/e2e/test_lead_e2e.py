"""Leading the room in Chromium (issue 65): the one-time lead link the server printed leads, its
token leaves the address bar at once and a second open is refused; a reload, and a page opened
in presenter mode, lead again from the pass the browser kept; a follower is told when the
leader's page closed and follows again when it is back; and no page holds the presenter key.
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from harness.browser import MAIN, SIDEBAR, open_in_context, wait_rendered
from harness.server import ROOT
from harness.terminal import LEAD_LINK, PRESENTER_KEY, said
from pmapviz.app.page_registry import PAGES
from pmapviz.app.ui import room_leader


def _leads(page) -> None:
    expect(page.locator(SIDEBAR).get_by_text("You lead the room")).to_be_attached()


def _no_key(page, key: str, where: str) -> None:
    """Neither the page's text nor its HTML holds the key."""
    assert key not in page.content() and key not in page.inner_text("body"), where


# a long walk (tests/rotation.py): every run checks the same in AppTest
# (tests/app/ui/test_room_leader.py: the lead link, the kept pass, presence, no key on a page).
# Its cost is mostly waiting (62 s alone, 93 s in a whole run, 27 CPU-s of its own process):
# counted at 100 so the deal gives its part fewer other walks
@pytest.mark.rotates(cpu_s=100)
def test_the_lead_link_a_reload_presence_and_no_key_on_any_page(server, browser):
    contexts = []
    try:
        contexts.append((anyone := open_in_context(browser, server + "/"))[0])  # the first visit
        key, _ = said(server, PRESENTER_KEY)
        link, links = said(server, LEAD_LINK)
        assert urlsplit(link).port == urlsplit(server).port and key not in link
        lead_ctx, leader = open_in_context(browser, link)
        contexts.append(lead_ctx)
        _leads(leader)
        assert "lead=" not in leader.url  # out of the address bar, in the run that opened it
        token = link.split("lead=")[1]
        assert token not in leader.evaluate("location.href + JSON.stringify(history.state)")
        cookie = [c for c in lead_ctx.cookies() if c["name"].startswith("pmapviz_lead_")]
        assert cookie and cookie[0]["value"] != token and cookie[0]["sameSite"] == "Strict"
        said(server, LEAD_LINK, after=links)  # the next lead link, for another browser
        _refused_a_second_time(browser, link, contexts)
        follower_ctx, follower = open_in_context(browser, server + "/?follow=1")
        contexts.append(follower_ctx)
        side = follower.locator(SIDEBAR)
        expect(side.get_by_text("Following the presenter.")).to_be_visible()
        leader.reload()
        wait_rendered(leader)
        _leads(leader)  # a reload leads again
        leader.goto(server + "/tour?step=1&present=1")  # and presenter mode, from its pass
        wait_rendered(leader)
        _leads(leader)
        leader.get_by_role("button", name="Next").first.click()
        expect(follower.locator(MAIN).get_by_text("Step 2 of", exact=False)).to_be_visible()
        away_s, back = _leader_leaves_and_returns(lead_ctx, leader, follower, server)
        (ROOT / "artifacts" / "lead_e2e.json").write_text(json.dumps({"away_after_s": away_s}))
        for who, page in (("the leader", back), ("anyone", anyone[1])):
            _every_page_without_the_key(page, server, key, who)
    finally:
        for context in contexts:
            context.close()


def _refused_a_second_time(browser, link: str, contexts) -> None:
    context, again = open_in_context(browser, link)
    contexts.append(context)
    expect(again.locator(MAIN).get_by_text(room_leader.SPENT)).to_be_visible()
    assert "lead=" not in again.url
    expect(again.locator(SIDEBAR).get_by_text("You lead the room")).to_have_count(0)


def _leader_leaves_and_returns(lead_ctx, leader, follower, server):
    """The leader's page closes: the follower says no presenter is there (how long that took
    is returned, for the record: tests/core/base/test_room.py and test_room_panel.py hold the
    bound); the leader's browser opens the tour again: it leads, and the follower follows.
    Returns (seconds until the follower said so, the leader's new page)."""
    side = follower.locator(SIDEBAR)
    leader.close()
    closed = time.perf_counter()
    expect(side.get_by_text(room_leader.AWAY)).to_be_visible()
    away_s = time.perf_counter() - closed
    back = lead_ctx.new_page()
    back.goto(server + "/tour?step=3&present=1")
    wait_rendered(back)
    _leads(back)
    expect(side.get_by_text("Following the presenter.")).to_be_visible()
    expect(follower.locator(MAIN).get_by_text("Step 3 of", exact=False)).to_be_visible()
    return away_s, back


def _every_page_without_the_key(page, server: str, key: str, who: str) -> None:
    for info in PAGES:
        page.goto(f"{server}/{'' if info is PAGES[0] else info.url_path}")  # Home is "/"
        wait_rendered(page)
        opener = page.locator(SIDEBAR).get_by_text("Lead or follow the room")
        if opener.count():
            opener.click()  # the password field and what is said about leading
        _no_key(page, key, f"{who} on /{info.url_path}")
