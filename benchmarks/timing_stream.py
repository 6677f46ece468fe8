"""The Timing lab streams its sweep (issue 38): in headless Chromium on a real server, from the
click on "Run N measurements" to the first size's first bars on screen, and to the whole sweep's
results; and the tour's step 9, whose speed-up picture is measured on arrival, from the link to its
picture.

    .venv/bin/python benchmarks/timing_stream.py [--devices 8] [--repeat 3]

Goals: the first bars within 1 s of the click; step 9's picture within 1 s of the link when it is
measured then (after the server's first page), and at once on a later visit (the server's last
measurement, with its time).
"""

from __future__ import annotations

import statistics
import sys
import time

import common
from playwright.sync_api import sync_playwright

from harness import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server, wait_rendered

BARS = "[data-testid='stMain'] [role='img'][aria-label^='Measured so far']"
PICTURE = "[data-testid='stMain'] [role='img'][aria-label*='measured at']"


def one_sweep(page, url: str) -> tuple[float, float]:
    """(seconds to the first chart, seconds to the results) after pressing Run."""
    page.goto(url + "/timing")
    wait_rendered(page, timeout_ms=120_000)
    button = page.get_by_role("button", name="Run ")
    t = time.perf_counter()
    button.first.click()
    page.wait_for_selector(BARS, timeout=120_000)
    first = time.perf_counter() - t
    page.get_by_text("Download CSV").wait_for(timeout=120_000)
    return first, time.perf_counter() - t


def step_9(page, url: str) -> float:
    """Seconds from opening step 9 to its measured speed-up picture."""
    t = time.perf_counter()
    page.goto(url + "/tour?step=9")
    page.wait_for_selector(PICTURE, timeout=120_000)
    return time.perf_counter() - t


def main() -> int:
    args = common.start(__doc__, apply_devices=False, repeat=3)
    proc, url = start_server(["--devices", str(args.devices)], env={"PMAPVIZ_DEVICES": ""})
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t = time.perf_counter()
            page.goto(url + "/tour?step=1")  # the server's first page: its start-up costs
            wait_rendered(page, timeout_ms=120_000)
            fresh_page = time.perf_counter() - t
            first_visit = step_9(page, url)  # measured now, for the first time
            later_visit = step_9(page, url)  # the server's last measurement
            sweeps = [one_sweep(page, url) for _ in range(args.repeat)]
            browser.close()
    finally:
        stop_server(proc)
    first = statistics.median(s[0] for s in sweeps)
    whole = statistics.median(s[1] for s in sweeps)
    print(
        f"Timing lab: first bars {first:.2f} s after the click (goal <= 1 s); all results "
        f"{whole:.2f} s (median of {args.repeat})"
    )
    print(
        f"tour step 9: its measured picture {first_visit:.2f} s after the link, measured then "
        f"(goal <= 1 s); {later_visit:.2f} s on a later visit (the server's last measurement); "
        f"the fresh server's first page (step 1) took {fresh_page:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
