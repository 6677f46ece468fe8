"""Live-run soak: what a long-lived server keeps after each run (issue 26, point 1).

    .venv/bin/python benchmarks/live_soak.py [--runs 50] [--devices 4] [--max-bytes 512M]

A server is started with ``-- --devices 4 --max-bytes 512M``. One Chromium session opens ``--runs``
Live-output links of growing size, as a room does (``fn=double`` in float32, int8 and float16, then
``fn=add``: each link is a new Streamlit session, which the server keeps for
``server.disconnectedSessionTTL``), and presses Run wherever the page offers it. After each run it
reports the server's RSS over the warmed-up baseline (one small run of each kind first: JAX's first
use of a function or a dtype is a cost paid once, not kept per run). Goal: what stays after the runs
(the last one's RSS over the baseline) is under 10 % of the budget. Before the fix the same walk
kept +1,503 MiB after 15 runs: each session's last result held its arrays.
"""

from __future__ import annotations

import argparse
import sys
import time

import common  # noqa: F401  (the repository on sys.path)

from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    main_text,
    start_server,
    stop_server,
    tree_rss,
    wait_rendered,
)
from pmapviz.core.base import valueparse  # noqa: E402  (imports no JAX)


def rss_mib(pid: int) -> float:
    return tree_rss(pid) / 2**20


def links(runs: int, n: int, lo: int = 100_000, hi: int = 9_000_000) -> list[str]:
    """``runs`` links of growing size: elements per device from ``lo`` to ``hi``."""
    kinds = [("double", "float32"), ("double", "int8"), ("double", "float16"), ("add", "float32")]
    out = []
    for k in range(runs):
        fn, dtype = kinds[k % len(kinds)]
        m = lo + (hi - lo) * k // max(1, runs - 1)
        shapes = f"s0={n},{m}" + (f"&s1={n},{m}" if fn == "add" else "")
        second = f"&d1={dtype}" if fn == "add" else ""
        out.append(f"/live?fn={fn}&{shapes}&d0={dtype}{second}")
    return out


def run_one(page, url: str) -> str:
    page.goto(url)
    wait_rendered(page)
    button = page.get_by_role("button", name="Run (")
    if button.count():
        button.first.click()
        page.wait_for_function(
            "() => ['Per device', 'budget'].some(t => "
            "document.querySelector('[data-testid=\"stMain\"]').innerText.includes(t))",
            timeout=180_000,
        )
        wait_rendered(page)
    text = main_text(page)
    return "ran" if "Per device" in text else "refused" if "budget" in text else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--max-bytes", default="512M")
    args = ap.parse_args()
    budget = valueparse.parse_bytes(args.max_bytes, "--max-bytes")
    from playwright.sync_api import sync_playwright

    proc, url = start_server(["--devices", str(args.devices), "--max-bytes", args.max_bytes],
                             env={"PMAPVIZ_DEVICES": ""})  # fmt: skip
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            for warm in links(4, args.devices, 1000, 1000):  # each kind once, small
                run_one(page, url + warm)
            base = rss_mib(proc.pid)
            print(f"baseline RSS {base:.0f} MiB; budget {budget / 2**20:.0f} MiB")
            worst, t0 = 0.0, time.perf_counter()
            for k, link in enumerate(links(args.runs, args.devices), 1):
                state = run_one(page, url + link)
                time.sleep(0.3)
                grown = rss_mib(proc.pid) - base
                worst = max(worst, grown)
                print(f"{k:3} {link:58} {state:8} RSS +{grown:6.0f} MiB", flush=True)
            browser.close()
        kept = rss_mib(proc.pid) - base
        share = kept * 2**20 / budget
        print(f"{args.runs} runs in {time.perf_counter() - t0:.0f} s: kept +{kept:.0f} MiB after "
              f"the last ({share:.1%} of the budget; goal < 10%), the most after any run "
              f"+{worst:.0f} MiB")  # fmt: skip
        return 0 if share < 0.10 else 1
    finally:
        stop_server(proc)


if __name__ == "__main__":
    sys.exit(main())
