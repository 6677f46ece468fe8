"""Never a stale figure under a spinner, in Chromium (issue 62): while the Pods page compiles a
new setting, a line at the compile's place names it, and everything the page showed for the old
setting is greyed out; when it is done, nothing stale is left."""

import random

import pytest
from playwright.sync_api import expect

from harness import EXCEPTIONS, MAIN, wait_rendered
from pmapviz.core.ui import recompute

pytestmark = pytest.mark.e2e

# what every element the page drew before the change looks like while the compile runs
STALE_LOOKS = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-stale="true"]')].map(e => [
        +getComputedStyle(e).opacity, getComputedStyle(e).pointerEvents, e.textContent])"""


# a long walk (tests/rotation.py): every run checks, in AppTest, what the page has been sent
# while a slow action runs (tests/core/ui/test_recompute.py)
@pytest.mark.rotates(cpu_s=14)
def test_a_new_setting_greys_the_old_result_out_and_names_what_compiles(server, page):
    # a batch no other test compiles: the training step's compile takes seconds, never kept
    old, new = (8 * random.randrange(1000, 9000) for _ in range(2))
    page.goto(f"{server}/pods?prog=train&pod=v5e:2x2&batch={old}")
    wait_rendered(page, timeout_ms=120_000)
    expect(page.locator(MAIN)).to_contain_text(f"batch {old:,}")
    box = page.get_by_role("textbox", name="Batch (0: its own)")
    box.fill(str(new))
    box.press("Enter")
    notice = page.get_by_text(recompute.LABEL)
    expect(notice).to_be_visible(timeout=30_000)
    expect(page.locator(MAIN)).to_contain_text("Compiling for v5e:2x2")
    stale = page.evaluate(STALE_LOOKS)
    assert any(f"batch {old:,}" in text for _, _, text in stale)  # the old result: greyed
    assert all(opacity <= 0.3 and events == "none" for opacity, events, _ in stale)
    current = page.locator('[data-testid="stMain"] [data-stale="false"]')
    assert not [t for t in current.all_text_contents() if f"batch {old:,}" in t]
    expect(page.locator(MAIN)).to_contain_text(f"batch {new:,}", timeout=120_000)
    wait_rendered(page, timeout_ms=120_000)
    expect(notice).to_have_count(0)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
