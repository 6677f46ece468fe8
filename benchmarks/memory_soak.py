"""Memory soak: 500 reruns of the busiest page (the explorer: plan, three diagrams, the
per-device table, two code exports) against a real server, driven from headless Chromium.
Reports the server's RSS after a warm-up and at the end.

    .venv/bin/python benchmarks/memory_soak.py [--reruns 500] [--devices 8]

Goal (issue #8): 500 reruns grow the server's memory by less than 50 MB.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    start_server,
    stop_server,
    tree_rss,
    wait_rendered,
)


def rss_mb(pid: int) -> float:
    return tree_rss(pid) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reruns", type=int, default=500)
    ap.add_argument("--heavyimports", type=int, default=50)
    ap.add_argument("--devices", type=int, default=8)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    n = args.devices
    values = [f"{n}, 1_250_000, 3", f"{n}, 625_000, 3", f"{n}, 1000, 3"]
    proc, url = start_server(["--devices", str(n)], env={"PMAPVIZ_DEVICES": ""})
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url + "/explorer")
            wait_rendered(page)
            box = page.get_by_label("shape of x", exact=True)
            samples = []
            t0 = time.perf_counter()
            for i in range(args.heavyimports + args.reruns):
                box.fill(values[i % len(values)])
                box.press("Enter")
                wait_rendered(page, quiet_ms=60)
                if i + 1 == args.heavyimports:
                    base = rss_mb(proc.pid)
                    t0 = time.perf_counter()
                done = i - args.heavyimports + 1
                if done > 0 and (done % 100 == 0 or done == args.reruns):
                    samples.append((done, rss_mb(proc.pid)))
            elapsed = time.perf_counter() - t0
            browser.close()
    finally:
        stop_server(proc)
    end = samples[-1][1]
    print(f"server RSS after {args.heavyimports} warm-up reruns: {base:.1f} MB")
    for k, mb in samples:
        print(f"  after {k:4d} more reruns: {mb:.1f} MB ({mb - base:+.1f})")
    print(f"{args.reruns} reruns in {elapsed:.0f} s ({elapsed / args.reruns * 1e3:.0f} ms each, "
          f"browser round trip); growth {end - base:+.1f} MB (goal < 50 MB): "
          f"{'OK' if end - base < 50 else 'OVER'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
