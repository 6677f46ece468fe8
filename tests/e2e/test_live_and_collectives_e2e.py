"""Live outputs and Collectives in a real browser: a run, the seed example, screenshots."""

import pytest
from playwright.sync_api import expect

from harness import (
    E2E_DEVICES,
    EXCEPTIONS,
    MAIN,
    click_and_wait_for_text,
    screenshot,
    wait_rendered,
)

pytestmark = pytest.mark.e2e
N = E2E_DEVICES
CHARTS = '[data-testid="stPlotlyChart"]'


def test_live_run_and_seed_example(server, page):
    page.goto(f"{server}/live?fn=batched_dot&s0={N},100,3&s1={N},100,3")
    main = page.locator(MAIN)
    expect(main).to_contain_text("PASS")
    expect(main).to_contain_text("the values match")
    wait_rendered(page)
    page.get_by_label("Pairs (1,000 to", exact=False).fill("200000")
    click_and_wait_for_text(page, "Run the example", "the values equal jit(vmap(dot))")
    expect(main).to_contain_text(f"({N}, {200_000 // N:_})")
    expect(main).to_contain_text("(200_000,)")  # "->" renders as an arrow
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "live-outputs")


# a long walk (tests/rotation.py): every run renders every collective in AppTest
# (tests/pages/test_live_and_collectives.py)
@pytest.mark.rotates(cpu_s=10)
def test_collectives_ppermute_and_all_gather(server, page):
    page.goto(f"{server}/collectives?c=ppermute&p=custom&pairs=0->1,1->2&n={N}&m=2")
    expect(page.locator(MAIN)).to_contain_text("receive zeros")
    wait_rendered(page)
    expect(page.locator(CHARTS)).to_have_count(1)
    screenshot(page, "collectives-ppermute")
    page.goto(f"{server}/collectives?c=all_gather&n={N}&m=2")
    expect(page.locator(MAIN)).to_contain_text("came from")
    wait_rendered(page)
    screenshot(page, "collectives")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


# a long walk (tests/rotation.py): every run runs a sweep in AppTest (tests/pages/test_timing.py)
@pytest.mark.rotates(cpu_s=12)
def test_timing_lab_sweep(server, page):
    # every implementation and the default sizes, at the fewest timed runs and two device counts
    # (the default sweep, seven runs on 1, 2 and 4 devices, draws the same four charts)
    page.goto(f"{server}/timing?r=3&ks=1,{N}")
    wait_rendered(page)
    page.get_by_role("button", name="Run").first.click()
    # four charts once the sweep is done (the locator counts them as they are drawn)
    expect(page.locator(CHARTS)).to_have_count(4, timeout=240_000)
    expect(page.locator(MAIN)).to_contain_text("GB/s")
    wait_rendered(page, timeout_ms=240_000)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "timing-lab")


# a long walk (tests/rotation.py): every run trains in AppTest (tests/pages/test_training_page.py)
@pytest.mark.rotates(cpu_s=6)
def test_training_page(server, page):
    page.goto(f"{server}/training?steps=60&model=mlp&lr=0.1")
    wait_rendered(page)
    click_and_wait_for_text(page, "Train 60 steps", "identical at every step")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "training")


# a long walk (tests/rotation.py): every run launches in AppTest (tests/pages/test_cluster_page.py)
@pytest.mark.rotates(cpu_s=11)
def test_multi_process_page(server, page):
    page.goto(f"{server}/cluster?p=3&d=2")
    wait_rendered(page)
    click_and_wait_for_text(page, "Launch 3 processes", "6 global devices")
    expect(page.locator(MAIN)).to_contain_text("in every process")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "cluster")
