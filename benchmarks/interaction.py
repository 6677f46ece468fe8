"""Interaction speed, side by side with a bare baseline in the same run (issue 17):

1. Explorer: change a shape and press Enter, until the page shows the new shape and has settled
   in Chromium, against a bare Streamlit page with the same widgets and three small Plotly charts
   (shipped below as BARE_EXPLORER). Two explorer cases: both shapes valid (the whole page redrawn),
   and the issue's original alternation between a valid and a mismatched pair. A second baseline,
   the bare page with its start-up heap frozen out of Streamlit's after-run garbage collection (as
   pmapviz.core.base.heavyimports does for the app), shows what the explorer costs beyond that one
   server tuning. Also server-side, with AppTest kept in a real server's steady state (scripts
   compiled once): an explorer rerun against the bare page's.
2. The seed's 10M example on the Live page: click "Run the example" until the result shows,
   and the server's peak RSS (psutil, the server's process tree, sampled every 50 ms).

    .venv/bin/python benchmarks/interaction.py [--devices 8] [--edits 24] [--pairs 10000000]

Goals: explorer edit <= 1.5x the bare page in Chromium and <= 3x server side; 10M click to
result <= 2.5 s with peak RSS <= 800 MB. Run it on a quiet machine: other jobs on the same
cores make every figure (and mostly the ratios' noise) larger.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import common  # noqa: F401  (sys.path)

from harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    start_server,
    stop_server,
    tree_rss,
    wait_rendered,
)
from pmapviz.core.base.pageinfo import page_file

BARE_EXPLORER = """
import plotly.graph_objects as go
import streamlit as st

st.title("bare explorer")
c1, c2, c3 = st.columns([3, 1, 1])
c1.selectbox("Function f", ["batched_dot", "double"], key="fn")
c2.text_input("out_axes", "0", key="out")
c3.text_input("axis_name", "", key="name")
cols = st.columns(2)
for k, col in enumerate(cols):
    a, b, c = col.columns([4, 3, 2])
    a.text_input(f"shape of x{k}", "8, 1250000, 3", key=f"s{k}")
    b.selectbox(f"dtype of x{k}", ["float32", "int32"], key=f"d{k}")
    c.text_input("in_axes", "0", key=f"a{k}")
st.success(f"Valid: {st.session_state['s0']}")
for k, col in enumerate(st.columns(3)):
    with col:  # keyed: three identical figures would share one element id and raise
        st.plotly_chart(go.Figure(go.Bar(x=list(range(8)), y=list(range(8)))), key=f"chart{k}")
"""


# The same bare page with the one server tuning pmapviz makes (pmapviz.core.base.heavyimports): the
# objects alive after its first run are frozen out of the full garbage collection Streamlit runs
# after every script run. Against this page, the explorer's own cost shows, not the tuning's gain.
BARE_FROZEN = (
    "import gc\nif not gc.get_freeze_count():\n    gc.collect()\n    gc.freeze()\n" + BARE_EXPLORER
)


def _edit(page, label: str, value: str, expect: str) -> float:
    """Type a new shape and press Enter; seconds from Enter until the page shows ``expect``
    (the new shape as the page writes it) and has settled. (Waiting for the new text, not for
    Streamlit's script state: a check made before the server starts the run, 60-300 ms after
    Enter, would see the old page as settled, and a fragment's rerun does not change the
    script state at all. And ``textContent``, not ``innerText``: innerText lays the page out
    on every 10 ms poll, a cost the benchmark itself would add, and more to a bigger page.)"""
    box = page.get_by_role("textbox", name=label).first
    box.fill(value)
    t0 = time.perf_counter()
    box.press("Enter")
    page.wait_for_function(
        "t => document.querySelector('[data-testid=\"stMain\"]').textContent.includes(t)",
        arg=expect, timeout=120_000, polling=10,
    )  # fmt: skip
    took = wait_rendered(page, timeout_ms=120_000, quiet_ms=250) - t0
    if page.locator('[data-testid="stException"]').count():
        raise RuntimeError(f"the page behind {label!r} shows an exception: not timed")
    return took


SHAPES = ("8, 625000, 6", "8, 1250000, 3")
SHOWN = {  # what each page writes once it shows the new shape
    "bare": ("Valid: 8, 625000, 6", "Valid: 8, 1250000, 3"),
    "bare_frozen": ("Valid: 8, 625000, 6", "Valid: 8, 1250000, 3"),
    "explorer": ("(8, 625_000, 6)", "(8, 1_250_000, 3)"),
    "explorer_mismatch": ("x (625_000, 6), y (1_250_000, 3)", "(8, 1_250_000, 3)"),
}
EDIT_CASES = (  # name, script, page, label of the shape box
    ("bare", "bare.py", "/", "shape of x0"),
    ("bare_frozen", "bare_frozen.py", "/", "shape of x0"),
    # both shapes valid: the whole page (diagrams, table, code) redrawn for a new plan
    ("explorer", "app.py", "/explorer?fn=double", "shape of x"),
    # the first measurement: x and y of batched_dot alternate between equal and not,
    # so every other edit shows the mismatch message instead of the diagrams
    ("explorer_mismatch", "app.py", "/explorer?fn=batched_dot", "shape of x"),
)


def browser_edits(pw, devices: int, edits: int) -> dict:
    """Median edit time per case. Every case's server and page are up at once and the cases
    take turns, two edits each (one to each shape), so a slow spell of the machine falls on
    all of them alike instead of on whichever case ran then."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    cases, times = {}, {name: [] for name, *_ in EDIT_CASES}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bare.py").write_text(BARE_EXPLORER)
        (Path(tmp) / "bare_frozen.py").write_text(BARE_FROZEN)
        try:
            for name, script, path, label in EDIT_CASES:
                bare = script != "app.py"
                args = [] if bare else ["--devices", str(devices)]
                proc, url = start_server(args, env={"PMAPVIZ_DEVICES": ""}, script=script,
                                         cwd=Path(tmp) if bare else common.ROOT)  # fmt: skip
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                cases[name] = (proc, page, label)
                page.goto(url + path)
                wait_rendered(page, timeout_ms=120_000)
                for k in range(4):  # warm both sides' caches: not timed
                    _edit(page, label, SHAPES[k % 2], SHOWN[name][k % 2])
            for _ in range(-(-edits // 2)):
                for name, (_, page, label) in cases.items():
                    page.bring_to_front()
                    times[name] += [_edit(page, label, SHAPES[k], SHOWN[name][k]) for k in (0, 1)]
        finally:
            for proc, _page, _ in cases.values():
                stop_server(proc)
    browser.close()
    return {name: statistics.median(t) for name, t in times.items()}


def server_reruns(devices: int, reruns: int) -> dict:
    """AppTest: median rerun after a shape edit, explorer vs the bare page."""
    import os

    import pytest
    from streamlit.testing.v1 import AppTest

    from tests.pages.conftest import steady_state_server

    os.environ["PMAPVIZ_DEVICES"] = str(devices)
    steady_state_server(pytest.MonkeyPatch())  # scripts compiled once, as in a real server
    sys.argv = ["app.py"]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "bare.py"
        bare.write_text(BARE_EXPLORER)
        for name, key, fn in (("bare", "s0", None), ("explorer", "ex_s0", "double")):
            at = AppTest.from_file(str(bare if name == "bare" else common.ROOT / "app.py"),
                                   default_timeout=120).run()  # fmt: skip
            if fn:  # both shapes valid, as in the browser's "explorer" case
                at.switch_page(page_file("explorer")).run()
                at.selectbox(key="ex_fn").set_value(fn).run()
            times = []
            for k in range(reruns):
                at.text_input(key=key).input(SHAPES[k % 2])
                t0 = time.perf_counter()
                at.run()
                times.append(time.perf_counter() - t0)
                if at.exception:  # a failing page is cheap: never time one as the baseline
                    raise RuntimeError(f"{name} page raised: {at.exception[0].value}")
            out[name] = statistics.median(times[2:])
    return out


def dot_click(pw, devices: int, pairs: int) -> dict:
    import psutil

    proc, url = start_server(["--devices", str(devices), "--max-bytes", "4G"],
                             env={"PMAPVIZ_DEVICES": ""})  # fmt: skip
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.is_set():
            with contextlib.suppress(psutil.Error):  # the server itself gone
                peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url + "/live")
        wait_rendered(page, timeout_ms=120_000)
        box = page.get_by_role("spinbutton", name="Pairs").first
        box.fill(str(pairs))
        box.press("Enter")
        wait_rendered(page, timeout_ms=120_000)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Run the example").click()
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stMain\"]').innerText"
            ".includes('If you forget the reshape')", timeout=300_000)  # fmt: skip
        click_s = wait_rendered(page, timeout_ms=300_000, quiet_ms=200) - t0
    finally:
        browser.close()
        stop.set()
        stop_server(proc)
    return {"click_to_result_s": click_s, "peak_rss_mb": peak[0] / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--edits", type=int, default=24)
    ap.add_argument("--pairs", type=int, default=10_000_000)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = browser_edits(pw, args.devices, args.edits)
        d = dot_click(pw, args.devices, args.pairs)
    s = server_reruns(args.devices, args.edits)
    print(
        f"explorer edit in Chromium: {b['explorer'] * 1e3:.0f} ms vs bare {b['bare'] * 1e3:.0f}"
        f" ms: {b['explorer'] / b['bare']:.2f}x (goal <= 1.5x); alternating with a shape "
        f"mismatch: {b['explorer_mismatch'] * 1e3:.0f} ms "
        f"({b['explorer_mismatch'] / b['bare']:.2f}x)"
    )
    print(
        f"  against the bare page with the start-up heap frozen as pmapviz freezes its own "
        f"({b['bare_frozen'] * 1e3:.0f} ms): {b['explorer'] / b['bare_frozen']:.2f}x"
    )
    print(
        f"explorer rerun server side: {s['explorer'] * 1e3:.0f} ms vs bare "
        f"{s['bare'] * 1e3:.0f} ms: {s['explorer'] / s['bare']:.2f}x (goal <= 3x)"
    )
    print(
        f"10M example, click to result: {d['click_to_result_s']:.2f} s (goal <= 2.5 s); "
        f"server peak RSS {d['peak_rss_mb']:.0f} MB (goal <= 800 MB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
