"""First visits and an edit, each against its goal and a baseline measured in the same run
(issue 62), in headless Chromium:

1. **Home's first visit after a fresh start**: a server is started, and as soon as it answers
   (``/_stcore/health``) the browser asks for ``/``; seconds from that request until the page has
   settled (script finished, nothing stale: ``harness.wait_rendered``). For ``pmapviz serve``
   (which warms JAX and the app's modules before it answers) and for ``streamlit run app.py``
   (which has no start-up of its own: its first visitor starts JAX). Baseline: a one-box
   Streamlit page, the same way. Goal: Home under 2 s. The seconds from launch until the server
   answered are printed beside it.
2. **The Pods page's first figure after a fresh start**: the same, for ``/pods``, until the
   slice's first picture is drawn (its HTML picture of hosts and chips, drawn before the rest of
   the report); the seconds until its Plotly figure is drawn too, beside it. Goal: under 3 s.
3. **An explorer edit against a one-box page's round trip**: type a new shape and press Enter,
   until the page shows it and has settled (``interaction._edit``), on the explorer with both
   shapes valid (the whole plan redrawn) and on a page with one text box and one line. Both
   servers are up at once and take turns, two edits each. Goal: the explorer within 1.3x.

    .venv/bin/python benchmarks/responsiveness.py [--devices 8] [--repeat 3] [--edits 24]

(``--repeat 0``: no fresh starts; ``--edits 0``: no edits.)

Fresh starts are interleaved (box, Home and Pods with each entry, in turn), so a slow spell of
the machine falls on all of them alike; medians of ``--repeat``. Run it on a quiet machine.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import common
from interaction import _edit  # the edit, timed as interaction.py times it

from harness import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server, wait_rendered

ONE_BOX = """
import streamlit as st

st.title("one box")
st.text_input("shape of x0", "8, 1250000, 3", key="s0")
st.markdown(f"Valid: {st.session_state['s0']}")
"""
PICTURE = '[data-testid="stMain"] [role="img"][aria-label]'  # the slice, as HTML
FIGURE = '[data-testid="stMain"] [data-testid="stPlotlyChart"] .main-svg'  # and with Plotly
VIEWPORT = {"width": 1400, "height": 900}
GOALS = {"home": 2.0, "pods": 3.0, "edit": 1.3}


def fresh_visit(browser, how: str, devices: int, box: Path, path: str = "/") -> tuple:
    """(seconds from launch until the server answered, seconds from the browser's request of
    ``path`` until it settled, or, for /pods, until its first picture was drawn, and then until
    its Plotly figure was)."""
    env = {"PMAPVIZ_DEVICES": ""}
    t0 = time.perf_counter()
    if how == "box":
        proc, url = start_server([], env=env, script=box.name, cwd=box.parent)
    else:
        proc, url = start_server(["--devices", str(devices)], env=env, serve=how == "serve")
    ready = time.perf_counter() - t0
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        t1 = time.perf_counter()
        page.goto(url + path)
        if path == "/pods":
            page.wait_for_selector(f"{PICTURE}, {FIGURE}", timeout=180_000)
            first = time.perf_counter() - t1
            page.wait_for_selector(FIGURE, timeout=180_000)
            return ready, first, time.perf_counter() - t1
        return ready, wait_rendered(page, timeout_ms=180_000) - t1, None
    finally:
        context.close()
        stop_server(proc)


VISITS = (  # name, how the server starts, path
    ("one-box page", "box", "/"),
    ("Home, pmapviz serve", "serve", "/"),
    ("Home, streamlit run", "run", "/"),
    ("Pods' first figure, pmapviz serve", "serve", "/pods"),
    ("Pods' first figure, streamlit run", "run", "/pods"),
)


def first_visits(browser, devices: int, repeat: int, box: Path) -> dict[str, list]:
    got: dict[str, list] = {name: [] for name, *_ in VISITS}
    for _ in range(repeat):
        for name, how, path in VISITS:
            got[name].append(fresh_visit(browser, how, devices, box, path))
    return got


EDITS = (  # name, script, path, the box's label, what the page shows for each shape
    ("one-box page", "box", "/", "shape of x0", ("Valid: 8, 625000, 6", "Valid: 8, 1250000, 3")),
    ("explorer", "app.py", "/explorer?fn=double", "shape of x",
     ("(8, 625_000, 6)", "(8, 1_250_000, 3)")),
)  # fmt: skip
SHAPES = ("8, 625000, 6", "8, 1250000, 3")


def edits(browser, devices: int, count: int, box: Path) -> dict[str, list[float]]:
    """Every case's server and page up at once; the cases take turns, two edits each."""
    cases, times = {}, {name: [] for name, *_ in EDITS}
    try:
        for name, script, path, label, shown in EDITS:
            if script == "box":
                proc, url = start_server([], env={"PMAPVIZ_DEVICES": ""}, script=box.name,
                                         cwd=box.parent)  # fmt: skip
            else:
                proc, url = start_server(["--devices", str(devices)], env={"PMAPVIZ_DEVICES": ""})
            page = browser.new_page(viewport=VIEWPORT)
            cases[name] = (proc, page, label, shown)
            page.goto(url + path)
            wait_rendered(page, timeout_ms=180_000)
            for k in range(4):  # warm both sides' caches: not timed
                _edit(page, label, SHAPES[k % 2], shown[k % 2])
        for _ in range(-(-count // 2)):
            for name, (_, page, label, shown) in cases.items():
                page.bring_to_front()
                times[name] += [_edit(page, label, SHAPES[k], shown[k]) for k in (0, 1)]
    finally:
        for proc, page, *_ in cases.values():
            page.close()
            stop_server(proc)
    return times


def report(visits: dict[str, list], edit_times: dict[str, list[float]]) -> None:
    if visits:
        report_visits(visits)
    if edit_times:
        report_edits(edit_times)


def report_visits(visits: dict[str, list]) -> None:
    med = {name: statistics.median(v for _, v, _ in runs) for name, runs in visits.items()}
    ready = {name: statistics.median(r for r, _, _ in runs) for name, runs in visits.items()}
    plotly = {
        name: statistics.median(p for *_, p in runs)
        for name, runs in visits.items()
        if runs[0][2] is not None
    }
    box = med["one-box page"]
    print(f"{'first visit after a fresh start':38} {'ready (s)':>9} {'visit (s)':>9} "
          f"{'/ one-box':>9}  goal")  # fmt: skip
    for name in med:
        goal = GOALS["pods" if "Pods" in name else "home"] if name != "one-box page" else None
        verdict = (
            "" if goal is None else f"< {goal:.0f} s: {'met' if med[name] < goal else 'NOT met'}"
        )
        print(f"{name:38} {ready[name]:9.2f} {med[name]:9.2f} {med[name] / box:8.2f}x  {verdict}")
        if name in plotly:
            print(f"{'  and its Plotly figure':38} {'':9} {plotly[name]:9.2f} "
                  f"{plotly[name] / box:8.2f}x")  # fmt: skip


def report_edits(edit_times: dict[str, list[float]]) -> None:
    e = {name: statistics.median(t) for name, t in edit_times.items()}
    ratio = e["explorer"] / e["one-box page"]
    print(
        f"edit round trip: explorer {e['explorer'] * 1e3:.0f} ms, one-box page "
        f"{e['one-box page'] * 1e3:.0f} ms: {ratio:.2f}x (goal <= {GOALS['edit']}x: "
        f"{'met' if ratio <= GOALS['edit'] else 'NOT met'}; medians of "
        f"{len(edit_times['explorer'])} edits each)"
    )


def main() -> int:
    args = common.start(__doc__, apply_devices=False, repeat=3, edits=24)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        box = Path(tmp) / "one_box.py"
        box.write_text(ONE_BOX)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            visits = first_visits(browser, args.devices, args.repeat, box) if args.repeat else {}
            edit_times = edits(browser, args.devices, args.edits, box) if args.edits else {}
        finally:
            browser.close()
    print(f"devices={args.devices} repeat={args.repeat} edits={args.edits}")
    report(visits, edit_times)
    return 0


if __name__ == "__main__":
    sys.exit(main())
