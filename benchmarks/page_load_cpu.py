"""What one page load costs Chromium: the CPU-seconds of Debian's Chromium (every process of
it, by process type) to open each page of the app and draw it, against a bare Streamlit page
and the same bare page with one ``st.code`` (the highlighter it loads), on one server; then the
explorer opened in a new tab and in a new browser context, where the caches are cold.

    .venv/bin/python benchmarks/page_load_cpu.py [--devices 4] [--loads 3]

The suite's browser phase is bound by this CPU (README: the suite's time); a follower's step in
a followed room is one page load. Each page is opened once to warm the browser's caches, then
``--loads`` times; the figure is the mean CPU-seconds a load, read with psutil.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import start

ARGS = start(__doc__, apply_devices=False, loads=3)

import psutil  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from harness.browser import CHROMIUM, CHROMIUM_ARGS, wait_rendered  # noqa: E402
from harness.server import start_server, stop_server  # noqa: E402
from pmapviz.app.page_registry import PAGES  # noqa: E402

VIEWPORT = {"width": 1400, "height": 900}
BARE = 'import streamlit as st\nst.title("bare")\nst.write("hello")\n'
WITH_CODE = BARE + 'st.code("ls -l", language="bash")\n'


def chromium_cpu() -> dict[str, float]:
    """CPU-seconds so far of this process's Chromium descendants, by their --type."""
    out: dict[str, float] = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "chrom" not in p.name():
                continue
            kind = next((a[7:] for a in p.cmdline() if a.startswith("--type=")), "browser")
            t = p.cpu_times()
            out[kind] = out.get(kind, 0.0) + t.user + t.system
        except psutil.Error:
            continue
    return out


def per_load(page, url: str, loads: int) -> tuple[float, dict[str, float]]:
    """Mean CPU-seconds a load of ``url`` (after one warm-up load), and its split by type."""
    page.goto(url)
    wait_rendered(page)
    before = chromium_cpu()
    for _ in range(loads):
        page.goto(url)
        wait_rendered(page)
    after = chromium_cpu()
    split = {k: (v - before.get(k, 0.0)) / loads for k, v in after.items()}
    return sum(split.values()), split


def first_loads(browser, context, url: str, loads: int) -> dict[str, float]:
    """Mean CPU-seconds of a load in a new tab of a used context, and in a new context (its
    caches cold): what a test pays for a tab or a context of its own. Each is read before its
    tab closes (a closed tab's process takes its CPU-seconds with it)."""
    out = {}
    for name in ("a new tab", "a new context"):
        total = 0.0
        for _ in range(loads):
            before = sum(chromium_cpu().values())
            ctx = context if name == "a new tab" else browser.new_context(viewport=VIEWPORT)
            page = ctx.new_page()
            page.goto(url)
            wait_rendered(page)
            total += sum(chromium_cpu().values()) - before
            (page if ctx is context else ctx).close()
        out[name] = total / loads
    return out


def main() -> None:
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        for i, (name, script) in enumerate((("bare page", BARE), ("bare + st.code", WITH_CODE))):
            path = Path(tmp) / f"bare{i}.py"
            path.write_text(script)
            proc, url = start_server([], script=str(path), cwd=Path(tmp))
            try:
                cpu, _ = per_load(page, url + "/", ARGS.loads)
            finally:
                stop_server(proc)
            print(f"{name:22s} {cpu:5.2f} CPU-s a load")
        unset = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_PLATFORM": ""}  # the option decides
        proc, url = start_server(["--devices", str(ARGS.devices)], env=unset)
        try:
            for info in PAGES:
                path = "/" if info.url_path == "home" else f"/{info.url_path}"
                t = time.perf_counter()
                cpu, split = per_load(page, url + path, ARGS.loads)
                wall = (time.perf_counter() - t) / (ARGS.loads + 1)
                parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(split.items()) if v >= 0.01)
                print(f"{info.url_path:22s} {cpu:5.2f} CPU-s a load ({parts}); {wall:.1f} s wall")
            for name, cpu in first_loads(browser, context, url + "/explorer", ARGS.loads).items():
                print(f"explorer in {name:13s} {cpu:5.2f} CPU-s a load")
        finally:
            stop_server(proc)
            browser.close()


if __name__ == "__main__":
    main()
