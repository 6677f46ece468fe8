"""Load: eight browser sessions press the heaviest buttons at once against one server.

    .venv/bin/python benchmarks/load.py [--devices 8] [--max-bytes 2G] [--sessions 8]
                                        [--timeout 420] [--kill-above-gib 14]

A server is started with ``-- --devices 8 --max-bytes 2G``; eight Chromium sessions (one
context each) open their page, set it up, and then all press at once: the Live page's "Run"
for the largest explorer shape the budget allows, the 10M example's "Run the example" at the
largest allowed number of pairs, the Timing lab's sweep over every size, device count and
implementation, "Train" for the MLP at the largest batch, and "Launch" of the largest cluster.
The server's RSS (the process and all its children: cluster workers included) is sampled every
100 ms. Reported: peak RSS against the per-action budget, each session's wait from its click
to its result, server deaths and exception elements. Every session has a deadline (--timeout)
and the server is stopped when its RSS passes --kill-above-gib, so a run always ends by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
import urllib.request

import common  # noqa: F401  (the repository on sys.path)
import psutil

ROOT = common.ROOT

from pmapviz import devices  # noqa: E402  (imports no JAX)
from pmapviz.training import MAX_BATCH  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    start_server,
    stop_server,
    wait_rendered,
)

# per role: (path, button name (prefix), text that shows the result)
SIZES = "64,16384,131072,1048576,8388608"


def roles(n: int, budget: int, steps: int) -> dict[str, tuple[str, str, str]]:
    # batched_dot working set ~ 84 bytes per pair (3x the inputs, 3x the output)
    block = int(budget * 0.95 / 84 / n)
    return {
        "live": (f"/live?fn=batched_dot&s0={n},{block},3&s1={n},{block},3&a0=0&a1=0&out=0",
                 "Run (", "vs jit(vmap(f))"),
        "dot": ("/live", "Run the example", "max |pmap - vmap|"),
        "timing": (f"/timing?w=dot&r=5&sizes={SIZES}&ks={','.join(map(str, _ks(n)))}"
                   "&impls=pmap,vmap,jit_sharded,shard_map,numpy", "Run ", "Results: "),
        "training": (f"/training?model=mlp&k={n}&batch={MAX_BATCH}&steps={steps}&lr=0.05",
                     "Train ", "Max difference between replicas"),
        "cluster": ("/cluster?p=4&d=4", "Launch ", "global devices"),
    }  # fmt: skip


def _ks(n: int) -> list[int]:
    k, out = 1, []
    while k <= n:
        out.append(k)
        k *= 2
    return out if out[-1] == n else [*out, n]


ORDER = ["live", "dot", "timing", "training", "cluster", "live", "dot", "timing"]


class Sampler(threading.Thread):
    """Peak RSS of a process tree, every 100 ms; stops the server past a hard cap."""

    def __init__(self, proc, cap_bytes: int):
        super().__init__(daemon=True)
        self.proc, self.cap = proc, cap_bytes
        self.peak = 0
        self.killed = False
        self.stop = threading.Event()

    def run(self) -> None:
        root = psutil.Process(self.proc.pid)
        while not self.stop.is_set():
            try:
                rss = 0
                for p in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        rss += p.memory_info().rss
                self.peak = max(self.peak, rss)
                if rss > self.cap and not self.killed:
                    self.killed = True
                    stop_server(self.proc)
            except psutil.Error:
                pass
            self.stop.wait(0.1)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as r:
            return r.status == 200
    except OSError:
        return False


STATE = """(marker) => {
    const app = document.querySelector('[data-testid="stApp"]');
    const main = document.querySelector('[data-testid="stMain"]');
    return {
        running: !app || app.getAttribute('data-test-script-state') !== 'notRunning'
                 || !!document.querySelector('[data-stale="true"]'),
        result: !!main && main.innerText.includes(marker),
        exceptions: document.querySelectorAll('[data-testid="stException"]').length,
        errors: [...document.querySelectorAll('[data-testid="stAlertContentError"]')]
            .map(e => e.innerText.slice(0, 120)),
    };
}"""


def _open(browser, names, plan, url) -> list:
    """One browser context per session, each on its page; the dot session at its largest size."""
    pages = []
    for name in names:
        ctx = browser.new_context(viewport={"width": 1300, "height": 900})
        page = ctx.new_page()
        page.goto(url + plan[name][0], wait_until="commit")
        pages.append(page)
    for name, page in zip(names, pages, strict=True):
        wait_rendered(page, timeout_ms=180_000)
        if name == "dot":  # the largest number of pairs the budget allows
            box = page.locator('[data-testid="stNumberInput"] input[aria-label^="Pairs"]')
            label = box.get_attribute("aria-label")
            limit = int(label.split(" to ")[1].split(", a multiple")[0].replace(",", ""))
            box.fill(str(limit))
            box.press("Enter")
            wait_rendered(page, timeout_ms=60_000)
    return pages


def _click_all(names, pages, plan) -> tuple[list[float], dict[int, dict]]:
    clicked, result = [], {}
    for i, (name, page) in enumerate(zip(names, pages, strict=True)):  # all at once
        try:
            page.get_by_role("button", name=plan[name][1]).first.click(timeout=10_000)
        except Exception as err:  # noqa: BLE001 (reported in the table)
            why = f"no {plan[name][1]!r} button: {err}"[:80]
            result[i] = {"result": False, "exceptions": 0, "timed_out": False,
                         "wait": 0.0, "errors": [why]}  # fmt: skip
        clicked.append(time.perf_counter())
    return clicked, result


def _wait_all(names, pages, plan, clicked, result, timeout, proc) -> dict[int, dict]:
    pending = {i: name for i, name in enumerate(names) if i not in result}
    erred_at: dict[int, float] = {}  # when each session's page first showed an error only
    while pending:
        for i in list(pending):
            name = pending[i]
            waited = time.perf_counter() - clicked[i]
            try:
                st = pages[i].evaluate(STATE, plan[name][2])
            except Exception as err:  # noqa: BLE001
                st = {"running": True, "result": False, "exceptions": 0,
                      "errors": [str(err)[:80]]}  # fmt: skip
            # An error alone is an outcome once it has stood for 2 s: a result can show an
            # error of its own (the 10M example's "If you forget the reshape") a moment before
            # the element that says it is a result has loaded its code in the browser.
            only_error = st["errors"] and not (st["result"] or st["exceptions"] or st["running"])
            now = time.perf_counter()
            if only_error:
                erred_at.setdefault(i, now)
            else:
                erred_at.pop(i, None)
            settled_error = only_error and now - erred_at[i] > 2.0
            done = ((st["result"] or st["exceptions"]) and not st["running"]) or settled_error
            if done or waited > timeout or proc.poll() is not None:
                result[i] = {**st, "wait": waited, "timed_out": not done}
                del pending[i]
        time.sleep(0.1)
    return result


def _rows(names, result) -> list[tuple]:
    rows = []
    for i, name in enumerate(names):
        r = result[i]
        outcome = ("result" if r["result"] else "TIMED OUT" if r["timed_out"]
                   else "error: " + "; ".join(r["errors"])[:80])  # fmt: skip
        if r["exceptions"]:
            outcome = f"EXCEPTION ({r['exceptions']})"
        rows.append((i, name, r["wait"], outcome))
    return rows


def _print(args, n, budget, wall, rows, sampler, alive) -> None:
    print(f"{args.sessions} sessions, --devices {n} --max-bytes {args.max_bytes} "
          f"(budget {budget / 2**30:.2f} GiB per action), {wall:.0f} s in all")  # fmt: skip
    print(f"{'#':>2}  {'action':<9} {'click->result':>14}  outcome")
    for i, name, wait, outcome in rows:
        print(f"{i:>2}  {name:<9} {wait:>12.1f} s  {outcome}")
    peak = sampler.peak
    cap = f"; STOPPED at the {args.kill_above_gib} GiB cap" if sampler.killed else ""
    print(f"peak server RSS (process tree, 100 ms samples): {peak / 2**30:.2f} GiB = "
          f"{peak / budget:.1f}x the per-action budget{cap}")  # fmt: skip
    print(f"longest wait: {max((w for _, _, w, _ in rows), default=0):.1f} s; server "
          f"{'alive and healthy' if alive else 'DIED'}; exceptions: "
          f"{sum(o.startswith('EXCEPTION') for *_, o in rows)}; timeouts: "
          f"{sum(o == 'TIMED OUT' for *_, o in rows)}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--max-bytes", default="2G")
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=420.0, help="seconds per session's action")
    ap.add_argument("--steps", type=int, default=200, help="training steps (max 2000)")
    ap.add_argument("--kill-above-gib", type=float, default=14.0)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    n = args.devices
    budget = devices.parse_bytes(args.max_bytes, "--max-bytes")
    plan = roles(n, budget, args.steps)
    names = [ORDER[i % len(ORDER)] for i in range(args.sessions)]
    proc, url = start_server(["--devices", str(n), "--max-bytes", args.max_bytes],
                             env={"PMAPVIZ_DEVICES": "", "PMAPVIZ_MAX_BYTES": ""})  # fmt: skip
    sampler = Sampler(proc, int(args.kill_above_gib * 2**30))
    sampler.start()
    t_start = time.perf_counter()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            pages = _open(browser, names, plan, url)
            clicked, result = _click_all(names, pages, plan)
            result = _wait_all(names, pages, plan, clicked, result, args.timeout, proc)
            alive = proc.poll() is None and healthy(url)
            rows = _rows(names, result)
            browser.close()
    finally:
        sampler.stop.set()
        sampler.join(timeout=2)
        alive_end = proc.poll() is None
        stop_server(proc)
    _print(args, n, budget, time.perf_counter() - t_start, rows, sampler, alive and alive_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
