"""Live outputs and Collectives in a real browser: a run, the seed example, screenshots."""

import pytest

from tests.e2e.harness import (
    E2E_DEVICES,
    click_and_wait_for_text,
    main_text,
    screenshot,
    wait_rendered,
)

pytestmark = pytest.mark.e2e
N = E2E_DEVICES


def test_live_run_and_seed_example(server, page):
    page.goto(f"{server}/live?fn=batched_dot&s0={N},100,3&s1={N},100,3")
    wait_rendered(page)
    assert "PASS" in main_text(page) and "the values match" in main_text(page)
    page.get_by_label("Pairs (1,000 to", exact=False).fill("200000")
    text = click_and_wait_for_text(page, "Run the example", "the values equal jit(vmap(dot))")
    assert f"({N}, {200_000 // N:_})" in text and "(200_000,)" in text  # "->" renders as an arrow
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "live-outputs")


def test_collectives_ppermute_and_all_gather(server, page):
    page.goto(f"{server}/collectives?c=ppermute&p=custom&pairs=0->1,1->2&n={N}&m=2")
    wait_rendered(page)
    assert "receive zeros" in main_text(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 1
    screenshot(page, "collectives-ppermute")
    page.goto(f"{server}/collectives?c=all_gather&n={N}&m=2")
    wait_rendered(page)
    assert "came from" in main_text(page)
    screenshot(page, "collectives")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_timing_lab_sweep(server, page):
    page.goto(f"{server}/timing")
    wait_rendered(page)
    page.get_by_role("button", name="Run").first.click()
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stPlotlyChart\"]').length >= 4",
        timeout=240_000,
    )
    wait_rendered(page, timeout_ms=240_000)
    assert "GB/s" in main_text(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "timing-lab")


def test_training_page(server, page):
    page.goto(f"{server}/training?steps=60&model=mlp&lr=0.1")
    wait_rendered(page)
    click_and_wait_for_text(page, "Train 60 steps", "identical at every step")
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "training")


def test_multi_process_page(server, page):
    page.goto(f"{server}/cluster?p=3&d=2")
    wait_rendered(page)
    text = click_and_wait_for_text(page, "Launch 3 processes", "6 global devices")
    assert "in every process" in text
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "cluster")
