"""Load: a room of sessions press the heaviest buttons at once against one server.

    .venv/bin/python benchmarks/load.py [--sessions 30] [--devices 8] [--max-bytes 2G]
                                        [--timeout 600] [--kill-above-gib 14]

A server is started with ``-- --devices 8 --max-bytes 2G``. ``--sessions`` sessions speak
Streamlit's own protocol (harness/stclient.py: what a browser sends, without a browser, so
two cores can carry thirty). Each opens its page, then all press at once: the Live page's
"Run" for an explorer shape of a quarter of the budget, the 10M example's "Run the example",
a Timing-lab sweep, "Train" for the MLP, and "Launch" of a cluster. The server's RSS (its
process tree: cluster workers too) is sampled every 100 ms from before the pages open.

Reported: the baseline and peak RSS against the budget (goal: peak <= baseline + 1.3 x
budget), each session's wait (from its click to the end of its last queue message) and
time to result, p50 and p95 of both, every session's outcome (its result, or the queue's
message when it gave up), exceptions and server deaths. Every session has a deadline and
the server is stopped past --kill-above-gib, so a run always ends by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
import urllib.request

import common  # noqa: F401  (the repository on sys.path)
import psutil

from harness import start_server, stop_server, tree_rss  # noqa: E402
from harness.stclient import Session  # noqa: E402
from pmapviz.core.base import valueparse  # noqa: E402  (imports no JAX)

QUEUE_WORDS = ("Waiting for", "Gave up after waiting")


def roles(n: int, budget: int) -> dict[str, tuple[str, str, str]]:
    """role -> (link, button label prefix, text that shows the result)."""
    m = max(1000, (budget // 4 - 24 * 2**20) // (3 * 4 * n))  # a live run of a quarter budget
    return {
        "live": (f"/live?fn=double&s0={n},{m}", "Run (", "Per device"),
        "dot": ("/live", "Run the example", "-> reshape ->"),
        "timing": (f"/timing?w=dot&r=3&sizes=64,16384,131072,1048576&ks=1,{n}"
                   "&impls=pmap,vmap,numpy", "Run ", "Results: "),
        "training": (f"/training?model=mlp&k={n}&batch={512 * n}&steps=100&lr=0.05",
                     "Train ", "One step, device by device"),
        "cluster": ("/cluster?p=2&d=2", "Launch ", "global devices"),
    }  # fmt: skip


ORDER = ["live", "dot", "training", "live", "dot", "timing", "live", "training", "dot",
         "cluster"]  # fmt: skip


class Sampler(threading.Thread):
    """Peak RSS of a process tree, every 100 ms; stops the server past a hard cap."""

    def __init__(self, proc, cap_bytes: int):
        super().__init__(daemon=True)
        self.proc, self.cap = proc, cap_bytes
        self.peak = self.last = 0
        self.killed = False
        self.stop = threading.Event()
        self.started = time.perf_counter()
        self.samples: list[tuple[float, int]] = []  # (time.perf_counter(), bytes)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rss = tree_rss(self.proc.pid)
            except psutil.Error:  # the server itself gone
                rss = 0
            self.last, self.peak = rss, max(self.peak, rss)
            self.samples.append((time.perf_counter(), rss))
            if rss > self.cap and not self.killed:
                self.killed = True
                stop_server(self.proc)
            self.stop.wait(0.1)

    def peak_between(self, t0: float, t1: float) -> int:
        """The highest sample taken from ``t0`` to ``t1`` (time.perf_counter()), 0 if none."""
        return max((rss for t, rss in list(self.samples) if t0 <= t <= t1), default=0)


SERVER_ENV = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_MAX_BYTES": ""}  # the flags alone set them


def start_measured(server_args: list[str], kill_above_gib: float, warm_link: str,
                   env: dict[str, str] | None = None, settle_s: float = 3.0):  # fmt: skip
    """(proc, url, sampler, baseline): a server started with ``server_args``, its process
    tree's RSS sampled every 100 ms from the start (stopped past ``kill_above_gib``), and the
    baseline RSS once ``warm_link`` was opened (the first page's start-up work) and
    ``settle_s`` passed. Stop it with :func:`finish`."""
    proc, url = start_server(server_args, env=SERVER_ENV if env is None else env)
    sampler = Sampler(proc, int(kill_above_gib * 2**30))
    sampler.start()
    try:
        warm = Session(url)
        warm.open(warm_link)
        warm.close()
        time.sleep(settle_s)
    except BaseException:
        finish(proc, url, sampler)
        raise
    return proc, url, sampler, sampler.last


def finish(proc, url: str, sampler: Sampler) -> bool:
    """Whether the server is still alive and healthy; then sampling and the server stop."""
    try:
        return proc.poll() is None and healthy(url)
    finally:
        sampler.stop.set()
        sampler.join(timeout=2)
        stop_server(proc)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as r:
            return r.status == 200
    except OSError:
        return False


def session(url: str, role: tuple[str, str, str], start: threading.Barrier, timeout: float,
            out: dict) -> None:  # fmt: skip
    """Open the page, wait for everyone, press, and record what happened when."""
    link, button, marker = role
    s = Session(url, timeout=timeout)
    try:
        s.open(link)
        start.wait()
        clicked = time.perf_counter()
        queued: list[float] = []

        def seen(kind: str, text: str) -> None:
            if any(w in text for w in QUEUE_WORDS):
                queued.append(time.perf_counter())
                out["queue_message"] = text[:160]

        page = s.press(button, seen)
        done = time.perf_counter()
        texts = " ".join(page.texts())
        out.update(result=marker in texts, finished=page.finished,
                   exceptions=len(page.exceptions), to_result=done - clicked,
                   wait=(queued[-1] - clicked) if queued else 0.0,
                   gave_up="Gave up after waiting" in texts,
                   errors=[t[:100] for k, t in page.elements if k == "alert"])  # fmt: skip
    except Exception as err:  # noqa: BLE001 - reported in the table
        out.update(result=False, finished=False, exceptions=0, to_result=0.0, wait=0.0,
                   gave_up=False, errors=[f"{type(err).__name__}: {err}"[:100]])  # fmt: skip
    finally:
        with contextlib.suppress(Exception):
            s.close()


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else (values or [0])[0]


def report(args, budget: int, base: int, names, outs, sampler, alive, wall: float) -> int:
    print(f"{args.sessions} sessions, --devices {args.devices} --max-bytes {args.max_bytes} "
          f"(the server's budget: {budget / 2**30:.2f} GiB), {wall:.0f} s in all")  # fmt: skip
    print(f"{'#':>2}  {'action':<9} {'wait':>8} {'to result':>10}  outcome")
    for i, (name, o) in enumerate(zip(names, outs, strict=True)):
        outcome = ("result" if o["result"] else "queue message: gave up" if o["gave_up"]
                   else "NO RESULT: " + "; ".join(o["errors"])[:90])  # fmt: skip
        if o["exceptions"]:
            outcome = f"EXCEPTION ({o['exceptions']})"
        print(f"{i:>2}  {name:<9} {o['wait']:>6.1f} s {o['to_result']:>8.1f} s  {outcome}")
    waits = [o["wait"] for o in outs]
    times = [o["to_result"] for o in outs if o["result"]]
    peak_over = sampler.peak - base
    served = sum(o["result"] or o["gave_up"] for o in outs)
    exceptions = sum(o["exceptions"] for o in outs)
    print(f"baseline RSS {base / 2**30:.2f} GiB; peak {sampler.peak / 2**30:.2f} GiB = baseline "
          f"+ {peak_over / budget:.2f} x budget (goal <= 1.3)"
          + ("; STOPPED at the cap" if sampler.killed else ""))  # fmt: skip
    print(f"wait: p50 {pct(waits, 50):.1f} s, p95 {pct(waits, 95):.1f} s; time to result: "
          f"p50 {pct(times, 50):.1f} s, p95 {pct(times, 95):.1f} s")  # fmt: skip
    print(f"{served}/{len(outs)} sessions got their result or a queue message "
          f"({sum(o['result'] for o in outs)} results); exceptions {exceptions}; server "
          f"{'alive and healthy' if alive else 'DIED'}")  # fmt: skip
    ok = alive and served == len(outs) and not exceptions and peak_over <= 1.3 * budget
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--max-bytes", default="2G")
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per session's action")
    ap.add_argument("--kill-above-gib", type=float, default=14.0)
    args = ap.parse_args()
    budget = valueparse.parse_bytes(args.max_bytes, "--max-bytes")
    plan = roles(args.devices, budget)
    names = [ORDER[i % len(ORDER)] for i in range(args.sessions)]
    proc, url, sampler, base = start_measured(
        ["--devices", str(args.devices), "--max-bytes", args.max_bytes],
        args.kill_above_gib,
        "/live?fn=double&s0=8,1000",
    )  # the first page and its start-up work, before the baseline
    t0 = sampler.started
    try:
        outs = [{} for _ in names]
        start = threading.Barrier(len(names))
        threads = [threading.Thread(target=session, args=(url, plan[name], start, args.timeout,
                                                          outs[i]))
                   for i, name in enumerate(names)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(args.timeout + 120)
    finally:
        alive = finish(proc, url, sampler)
    return report(args, budget, base, names, outs, sampler, alive, time.perf_counter() - t0)


if __name__ == "__main__":
    sys.exit(main())
