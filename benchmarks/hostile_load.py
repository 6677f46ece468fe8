"""Hostile load: hostile links and hostile trace files at once against ONE server.

    .venv/bin/python benchmarks/hostile_load.py [--devices 4] [--max-bytes 1G]
        [--max-seconds 60] [--phases all,lanes,two] [--timeout 240] [--kill-above-gib 8]

One server is started with ``-- --devices 4 --max-bytes 1G --max-seconds 60`` (load.py's
pieces: harness.start_server, one harness.stclient session per action speaking Streamlit's
protocol, the server's process-tree RSS sampled every 100 ms from before the first page).
Phases, one after another on the same server, each with its sessions released at once:

- ``all``: every action below at once, seven sessions;
- ``lanes``: the 5,000-lane trace alone (goal: answered within 30 s);
- ``two``: the big trace uploaded from two sessions at once (goal: peak within 1.3 x budget).

The actions. Links (each opened in a new session; then its "Run (" button pressed where the
page shows one, so whatever the server would run runs or is refused):
``/live?fn=expr&args=x&body=(jnp.einsum('a,b->ab', x, x) @ x).sum()&s0=4,12000&a0=0``,
``/live?...&body=jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()&s0=4,300&a0=0``, and
Markdown dict keys in f's own code, ``body={'![x](http://evil.example/a.png)': x,
'[click](http://evil.example/)': x}&s0=4,3&a0=0&out=0``, on /explorer and on /live (values
URL-encoded). Uploads to the Compiled page's "A trace from any machine" (key cp_upload), as the
browser's file uploader does (harness/stupload.py): a TPU-style perfetto trace, ~4.4 MB of
.json.gz that inflates to ~100 MiB of JSON with ~850k complete events (4 /device:TPU:N planes,
their "XLA Ops" and "XLA Modules" lines, a /host:CPU line: just under this budget's
``tracefiles.trace_limit``, so it is parsed), from two sessions at once; and a ~0.5 MB CPU-style
trace with 5,000 device lanes (``args.device_ordinal`` 0..4999, one call).

Reported: the baseline RSS (after a first page), each phase's peak and (peak - baseline) as a
multiple of the budget (goal <= 1.3), every action's time from its open, click or upload to its
final answer (a result, a refusal, or stopped: a queue that gave up) and that answer's text, the
longest action (goal: --max-seconds plus 5 s), exceptions on any page, Markdown from a link outside
code, and whether the server died. Every action has a deadline (--timeout), and the server is
stopped by its pid at the end, or as soon as its RSS passes --kill-above-gib. Exit status 0 when
every goal is met.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import sys
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import load  # benchmarks/load.py: Sampler, start_measured, finish (and common: sys.path)

from harness import stclient  # noqa: E402
from harness.stupload import UploadSession  # noqa: E402
from pmapviz.core.base import valueparse  # noqa: E402  (imports no JAX)
from pmapviz.core.xla import tracefiles  # noqa: E402  (imports no JAX)

ENV = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_MAX_BYTES": "", "PMAPVIZ_PLATFORM": "",
       "PMAPVIZ_MAX_SECONDS": "", "PMAPVIZ_MAX_DEVICE_BYTES": ""}  # fmt: skip
RUN = "Run ("  # the Live page's run button (only where the plan fits)
STOP_WORDS = ("Gave up after waiting", "Stopped while waiting")
MARKUP = ("evil.example",)  # from the links: never outside code on a page
LANES_GOAL_S, PEAK_GOAL, SLACK_S = 30.0, 1.3, 5.0


@dataclass(frozen=True)
class Action:
    name: str
    link: str  # the page opened
    after: str  # the heading below which the action's answer is
    result: str  # text that shows its result
    file: tuple[str, bytes] | None = None  # (name, bytes) to upload; None: the link is it


def link(page: str, params: dict[str, str]) -> str:
    return f"/{page}?" + urlencode(params, quote_via=quote)


def link_actions() -> list[Action]:
    own = {"fn": "expr", "args": "x"}
    markup = "{'![x](http://evil.example/a.png)': x, '[click](http://evil.example/)': x}"
    live, explorer = ("Live outputs", "Per device"), ("Shapes & sharding", "Valid.")
    return [
        Action("live einsum@x 4x12000", link("live", {**own, "a0": "0", "s0": "4,12000",
               "body": "(jnp.einsum('a,b->ab', x, x) @ x).sum()"}), *live),
        Action("live sort einsum 4x300", link("live", {**own, "a0": "0", "s0": "4,300",
               "body": "jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()"}), *live),
        Action("explorer markup keys", link("explorer", {**own, "body": markup, "s0": "4,3",
               "a0": "0", "out": "0"}), *explorer),
        Action("live markup keys", link("live", {**own, "body": markup, "s0": "4,3",
               "a0": "0", "out": "0"}), *live),
    ]  # fmt: skip


def upload_action(name: str, file: tuple[str, bytes]) -> Action:
    return Action(name, "/compiled", "A trace from any machine", "device lane(s)", file)


def big_trace(devices: int = 4, calls: int = 1000, ops: int = 211) -> tuple[bytes, int]:
    """(JSON, events): a TPU-style trace of ``calls`` calls of ``ops`` ops on each device."""
    parts = []
    for d in range(devices):
        parts += [f'{{"ph":"M","pid":{3 + d},"name":"process_name","args":{{"name":'
                  f'"/device:TPU:{d}"}}}}'] + [
            f'{{"ph":"M","pid":{3 + d},"tid":{tid},"name":"thread_name","args":{{"name":'
            f'"{line}"}}}}' for tid, line in ((2, "XLA Modules"), (3, "XLA Ops"))]  # fmt: skip
    parts += [
        '{"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}}',
        '{"ph":"M","pid":701,"tid":1497,"name":"thread_name","args":{"name":"python"}}',
    ]
    names = [f"fusion.{i}" for i in range(40)] + [f"all-reduce.{i}" for i in range(4)]
    t = 1000.0
    for c in range(calls):
        start = t
        for d in range(devices):
            ts = start
            for k in range(ops):
                i = (k * 7 + c) % len(names)
                dur = round(1 + (k % 13) * 0.25 + (c % 7) * 0.01, 2)
                parts.append(f'{{"ph":"X","pid":{3 + d},"tid":3,"ts":{ts:.2f},"dur":{dur},'
                             f'"name":"{names[i]}","args":{{"bytes_accessed":"'
                             f'{2 ** (10 + i % 8)}","model_flops":"{k % 100}"}}}}')  # fmt: skip
                ts += dur + 0.01
            parts.append(f'{{"ph":"X","pid":{3 + d},"tid":2,"ts":{start - 0.005:.3f},"dur":'
                         f'{ts - start + 0.01:.3f},"name":"jit_step","args":{{"run_id":'
                         f'"{c + 1}"}}}}')  # fmt: skip
            t = max(t, ts)
        parts.append(f'{{"ph":"X","pid":701,"tid":1497,"ts":{start - 5:.3f},"dur":4.0,'
                     f'"name":"PjitFunction(step)","args":{{"run_id":"{c + 1}"}}}}')  # fmt: skip
        t += 20
    text = '{"displayTimeUnit":"ns","traceEvents":[' + ",".join(parts) + "]}"
    return text.encode(), len(parts)


def lanes_trace(lanes: int = 5000) -> bytes:
    """A CPU-style trace of one call on ``lanes`` devices: one psum each (a CPU trace marks
    a device's op with ``args.device_ordinal``; an event's name may be left out)."""
    parts = [f'{{"ph":"X","pid":1,"tid":{d % 8},"ts":{d % 97},"dur":3,"args":{{'
             f'"device_ordinal":"{d}","hlo_op":"psum.7","run_id":"1"}}}}'
             for d in range(lanes)]  # fmt: skip
    return ('{"traceEvents":[' + ",".join(parts) + "]}").encode()


def answer(page, action: Action) -> tuple[str, str]:
    """(result | refused | stopped | no answer, its text) from the elements below the
    action's heading: its result marker, a queue that gave up, else its last alert."""
    at = next((i for i, (k, t) in enumerate(page.elements)
               if k == "heading" and t.startswith(action.after)), 0)  # fmt: skip
    below = page.elements[at:]
    for _, t in below:
        if action.result in t:
            return "result", t
    for _, t in below:
        if any(w in t for w in STOP_WORDS):
            return "stopped", t
    texts = {t for _, t in below}
    alerts = [(f, t) for f, t in getattr(page, "alerts", []) if t in texts
              and not any(w in t for w in load.QUEUE_WORDS)]  # fmt: skip
    # an error or warning says no; so does an info that ends the page's action ("f returns several
    # arrays ...": planned, never run)
    refusals = [t for f, t in alerts if f in ("error", "warning")] or [t for _, t in alerts]
    return ("refused", refusals[-1]) if refusals else ("no answer", "")


def leaks(pages) -> int:
    """Texts where a link's Markdown is outside inline code (it would render)."""
    kinds = ("markdown", "alert", "caption", "heading")
    return sum(any(m in stclient.outside_code(t) for m in MARKUP)
               for p in pages for t in p.texts(*kinds))  # fmt: skip


def act(url: str, action: Action, start: threading.Barrier, timeout: float, out: dict) -> None:
    """Open the page (an upload's page before the others are ready), wait for everyone, then
    open the link and press its Run button if shown, or upload; record the answer."""
    out.update(outcome="no answer", text="", seconds=0.0, exceptions=0, leaks=0, pressed=False,
               waited=False, t0=0.0, t1=0.0)  # fmt: skip
    s, pages = None, []
    try:
        s = UploadSession(url, timeout=timeout)
        if action.file:
            pages.append(s.open(action.link))
    except Exception as err:  # noqa: BLE001 - reported in the table
        out["text"] = f"{type(err).__name__}: {err}"
    with contextlib.suppress(threading.BrokenBarrierError):
        start.wait(timeout=300)
    if s is None or out["text"]:
        return
    out["t0"] = time.perf_counter()

    def seen(kind: str, text: str) -> None:
        out["waited"] = out["waited"] or any(w in text for w in load.QUEUE_WORDS)

    try:
        if action.file:
            pages.append(s.upload("Trace file", *action.file, on_element=seen))
        else:
            pages.append(s.open(action.link, seen))
            if any(label.startswith(RUN) for label in s.buttons):
                out["pressed"] = True
                pages.append(s.press(RUN, seen))
        out["t1"] = time.perf_counter()
        out["outcome"], out["text"] = answer(pages[-1], action)
        if not pages[-1].finished:
            out["outcome"] = "no answer (deadline)"
    except Exception as err:  # noqa: BLE001 - reported in the table
        out["t1"] = time.perf_counter()
        out["outcome"], out["text"] = "error", f"{type(err).__name__}: {err}"
    finally:
        out["seconds"] = out["t1"] - out["t0"]
        out["exceptions"] = sum(len(p.exceptions) for p in pages)
        out["leaks"] = leaks(pages)
        with contextlib.suppress(Exception):
            s.close()


def run_phase(url: str, actions: list[Action], timeout: float, sampler) -> dict:
    """Every action in its own session, released at once; their records and the peak RSS
    sampled while they ran."""
    outs = [{} for _ in actions]
    start = threading.Barrier(len(actions))
    threads = [threading.Thread(target=act, args=(url, a, start, timeout, o), daemon=True)
               for a, o in zip(actions, outs, strict=True)]  # fmt: skip
    begin = sampler.last
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout + 360
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    for t, o in zip(threads, outs, strict=True):
        if t.is_alive():  # past its deadline: the table says so
            o.update(outcome="no answer (deadline)", t1=time.perf_counter())
            o["seconds"] = o["t1"] - o["t0"]
    t0 = min((o["t0"] for o in outs if o["t0"]), default=time.perf_counter())
    t1 = max(o["t1"] for o in outs) + 0.5
    time.sleep(0.6)  # the last samples of the window
    return {"actions": actions, "outs": outs, "begin": begin,
            "peak": sampler.peak_between(t0, t1), "window": t1 - t0}  # fmt: skip


def print_phase(title: str, ph: dict, base: int, budget: int) -> None:
    over = (ph["peak"] - base) / budget
    print(f"\n== {title}: {len(ph['actions'])} session(s) at once, {ph['window']:.1f} s; RSS "
          f"at the start {ph['begin'] / 2**30:.2f} GiB, peak {ph['peak'] / 2**30:.2f} GiB = "
          f"baseline + {over:.2f} x budget")  # fmt: skip
    print(f"   {'action':<24} {'seconds':>8}  {'outcome':<10} answer")
    for a, o in zip(ph["actions"], ph["outs"], strict=True):
        extra = " [pressed Run]" * o["pressed"] + " [queued]" * o["waited"]
        extra += f" [EXCEPTIONS {o['exceptions']}]" * bool(o["exceptions"])
        extra += f" [MARKUP OUTSIDE CODE {o['leaks']}]" * bool(o["leaks"])
        text = " ".join(o["text"].split())[:150]
        print(f"   {a.name:<24} {o['seconds']:>6.1f} s  {o['outcome']:<10} {text}{extra}")


def goals(phases: dict, base: int, budget: int, limit_s: float, alive: bool, killed: bool):
    """The goal lines, and whether every goal is met."""
    outs = [o for ph in phases.values() for o in ph["outs"]]
    peak = max(ph["peak"] for ph in phases.values())
    longest = max(outs, key=lambda o: o["seconds"])
    lanes = next((o for key in ("lanes", "all") if key in phases
                  for a, o in zip(phases[key]["actions"], phases[key]["outs"], strict=True)
                  if a.name.startswith("5,000")), None)  # fmt: skip
    two = phases.get("two") or phases.get("all")
    bad = sum(o["exceptions"] for o in outs), sum(o["leaks"] for o in outs)
    answered = sum(o["outcome"] in ("result", "refused", "stopped") for o in outs)
    rows = [
        (f"peak over baseline: {(peak - base) / budget:.2f} x budget (goal <= {PEAK_GOAL})"
         + ("; STOPPED at --kill-above-gib" if killed else ""),
         (peak - base) <= PEAK_GOAL * budget and not killed),
        (f"longest action: {longest['seconds']:.1f} s (goal <= {limit_s + SLACK_S:.0f} s)",
         longest["seconds"] <= limit_s + SLACK_S),
        *([(f"5,000 lanes answered in {lanes['seconds']:.1f} s, {lanes['outcome']} (goal "
            f"<= {LANES_GOAL_S:.0f} s, a result)",
            lanes["seconds"] <= LANES_GOAL_S and lanes["outcome"] == "result")] if lanes else []),
        *([(f"two uploads at once: peak {(two['peak'] - base) / budget:.2f} x budget (goal "
            f"<= {PEAK_GOAL})", two["peak"] - base <= PEAK_GOAL * budget)] if two else []),
        (f"exceptions {bad[0]}, Markdown outside code {bad[1]} (goal: none)", not any(bad)),
        (f"every action answered: {answered}/{len(outs)}", answered == len(outs)),
        (f"server {'alive and healthy' if alive else 'DIED'}", alive),
    ]  # fmt: skip
    return rows, all(ok for _, ok in rows)


def options() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--max-bytes", default="1G")
    ap.add_argument("--max-seconds", default="60")
    ap.add_argument("--phases", default="all,lanes,two", help="comma-separated: all,lanes,two")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per action")
    ap.add_argument("--kill-above-gib", type=float, default=8.0)
    return ap.parse_args()


def plan(phases: list[str], budget: int) -> dict[str, tuple[str, list[Action]]]:
    """The actions of each phase: the issue's links, its 100 MiB trace (twice), a trace just
    under this server's limit (twice: the most it reads, at once) and 5,000 lanes."""
    t = time.perf_counter()
    big, events = big_trace()
    gz = gzip.compress(big, 9)
    limit = tracefiles.trace_limit(budget)  # the JSON a trace may hold on this server
    near, near_events = big_trace(calls=int(1000 * 0.97 * limit / len(big)))
    near_gz = gzip.compress(near, 9)
    lanes = lanes_trace()
    print(f"traces made in {time.perf_counter() - t:.1f} s: perfetto_trace.json.gz "
          f"{len(gz) / 1e6:.2f} MB -> {len(big) / 2**20:.1f} MiB of JSON, {events:,} events; "
          f"at the limit: {len(near_gz) / 1e6:.2f} MB -> {len(near) / 2**20:.1f} MiB of JSON "
          f"(limit {limit / 2**20:.1f} MiB), {near_events:,} events; "
          f"lanes.json {len(lanes) / 1e3:.0f} KB, 5,000 lanes")  # fmt: skip
    up = [upload_action(f"upload {len(gz) / 1e6:.1f} MB gz #{k}",
                        ("perfetto_trace.json.gz", gz)) for k in (1, 2)]  # fmt: skip
    at_limit = [upload_action(f"upload at limit #{k}", ("perfetto_trace.json.gz", near_gz))
                for k in (1, 2)]  # fmt: skip
    lane = upload_action("5,000 lanes upload", ("lanes.json", lanes))
    every = {"all": ("all at once", [*link_actions(), *up, *at_limit, lane]),
             "lanes": ("5,000 lanes alone", [lane]),
             "two": ("two uploads at the limit at once", at_limit)}  # fmt: skip
    return {p: every[p] for p in phases}


def main() -> int:
    args = options()
    budget = valueparse.parse_bytes(args.max_bytes, "--max-bytes")
    names = [p.strip() for p in args.phases.split(",") if p.strip()]
    todo = plan(names, budget)
    server = ["--devices", str(args.devices), "--max-bytes", args.max_bytes,
              "--max-seconds", args.max_seconds]  # fmt: skip
    proc, url, sampler, base = load.start_measured(server, args.kill_above_gib, "/compiled", ENV)
    print(f"server pid {proc.pid}: -- {' '.join(server)} (budget {budget / 2**30:.2f} GiB); "
          f"baseline RSS {base / 2**30:.2f} GiB")  # fmt: skip
    done: dict[str, dict] = {}
    try:
        for key, (title, actions) in todo.items():
            done[key] = run_phase(url, actions, args.timeout, sampler)
            print_phase(title, done[key], base, budget)
            time.sleep(3)
    finally:
        alive = load.finish(proc, url, sampler)
    print(
        f"\nbaseline RSS {base / 2**30:.2f} GiB, peak {sampler.peak / 2**30:.2f} GiB; "
        f"{time.perf_counter() - sampler.started:.0f} s in all; server stopped (pid {proc.pid})"
    )
    rows, ok = goals(done, base, budget, float(args.max_seconds), alive, sampler.killed)
    for line, met in rows:
        print(f"  {'ok  ' if met else 'MISS'} {line}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
