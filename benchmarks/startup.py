"""Startup benchmark: seconds from `streamlit run` to /_stcore/health OK, and to the first page
fully rendered in headless Chromium (script finished, every chart drawn), for the pmapviz
dashboard and for a bare Streamlit page that only imports JAX and lists its devices.

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--devices 8] [--json out.json]

Goal (issue #2): the dashboard's first render within 1.2x of the bare page's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    start_server,
    stop_server,
    wait_rendered,
)

BARE_PAGE = """
import jax
import streamlit as st

st.title("bare")
st.write([str(d) for d in jax.devices()])
"""


def measure(browser, script: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    t0 = time.perf_counter()
    proc, url = start_server(args, env=env, script=script, cwd=cwd)
    t_health = time.perf_counter() - t0
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(url + "/")
        t_render = wait_rendered(page, timeout_ms=120_000) - t0
        context.close()
    finally:
        stop_server(proc)
    return {"health_s": t_health, "first_render_s": t_render}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    env = {"PMAPVIZ_DEVICES": "", "XLA_FLAGS": "", "JAX_NUM_CPU_DEVICES": str(args.devices)}
    rows: dict[str, list[dict]] = {"bare": [], "dashboard": []}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        bare = Path(tmp) / "bare.py"
        bare.write_text(BARE_PAGE)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(args.repeat):  # interleaved, so drift hits both alike
                rows["bare"].append(measure(browser, str(bare), [], Path(tmp), env))
                rows["dashboard"].append(
                    measure(browser, "app.py", ["--devices", str(args.devices)], ROOT, env)
                )
        finally:
            browser.close()

    summary = {}
    for name, runs in rows.items():
        summary[name] = {
            key: {
                "median": statistics.median(r[key] for r in runs),
                "min": min(r[key] for r in runs),
                "max": max(r[key] for r in runs),
            }
            for key in ("health_s", "first_render_s")
        }
    ratio = (
        summary["dashboard"]["first_render_s"]["median"]
        / summary["bare"]["first_render_s"]["median"]
    )
    print(f"devices={args.devices} repeat={args.repeat}")
    print(f"{'':10} {'health OK (s)':>22} {'first render (s)':>22}")
    for name, s in summary.items():
        h, r = s["health_s"], s["first_render_s"]
        print(
            f"{name:10} {h['median']:7.2f} [{h['min']:.2f}-{h['max']:.2f}]    "
            f"{r['median']:7.2f} [{r['min']:.2f}-{r['max']:.2f}]"
        )
    print(f"dashboard / bare first render: {ratio:.2f}x (goal <= 1.20x)")
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "runs": rows, "ratio": ratio}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
