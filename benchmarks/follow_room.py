"""Follow the presenter under load: one presenter and a room of followers in headless Chromium
against one server: how fast the followers follow, and what following costs.

    .venv/bin/python benchmarks/follow_room.py [--followers 30] [--steps 20] [--devices 4]
        [--max-bytes 2G] [--dwell 2] [--idle 15] [--step-timeout 20] [--open-timeout 180]
        [--max-minutes 13] [--renderer-limit 0]

A quick run: ``--followers 3 --steps 5``; the full one (30 followers, 20 steps) takes about ten
minutes on two cores, and takes fewer steps (``steps_taken``) rather than run past
``--max-minutes``. One server (``-- --devices 4 --max-bytes 2G``), one Chromium, one
context per person (each its own Streamlit session; viewport 1280x720). Chromium's
``--renderer-process-limit`` is not set by default: renderers are never shared across
contexts, so it changes nothing here (6 contexts made 12-13 renderers with or without a
limit of 2); every page runs unthrottled, as an attendee's foreground tab does.

The presenter leads with "Lead from this browser" (it runs on the server's machine), walks
the cycle once alone (warming the server's caches, not timed), then the followers open
``/?follow=1`` and the presenter takes ``--steps`` steps, clicking inside the app only:
Home -> Guided tour -> Next x5 (Previous at the tour's last step) -> Shapes & sharding -> a
preset -> Collectives -> Home -> ...

Per step: the time the presenter's page first showed the step's final URL (path and query
once its page settled), and for each follower the time its URL (without ``follow=1``, query
in any order) first equalled it, then ``--dwell`` seconds on the step. The times are taken
in the pages themselves (an init script logs every history.pushState / replaceState with the
wall clock, the same in every process), so a busy harness does not blur them; every 50 ms
the harness reads each page.url (Playwright's events are delivered while the presenter's
page waits) only to see that all have arrived, and keeps those times too (polled_*). A
latency can be slightly negative: the step is published by the server, and a follower's
browser can show it before the presenter's own browser has updated its address bar.

Reported: follow latency median and p95 over all follower-steps, the fraction that arrived
within ``--step-timeout``, the leader's "N following" count, the server's peak RSS (its
process tree, every 0.2 s) against its memory budget (read from the sidebar), and CPU
seconds per follower per minute of the server (with its children), the Chromium processes
and the harness (this Python and Playwright's driver), following against not following:

- stepping: the steps above, against the same steps taken again (each padded to the
  duration of its following twin, so both phases last as long and the presenter does the
  same work) after every follower pressed "Stop following": the same sessions and pages,
  open and not following;
- idle: ``--idle`` seconds with the presenter on one page, following and not.

A follower that does not arrive is looked at: its sidebar's room line, any exception on its
page, the URLs it showed; one that "left the presenter" by itself presses "Back to the
presenter", one whose room line is gone reloads, as an attendee would, so later steps count
them again. The server's log is read for "Uncaught app execution" errors, each placed in the
step during which it happened. Other jobs on the same cores make every figure larger: the
load average before and after is in the output. Results go to artifacts/follow_room.json; the
exit status is 1 when a follower-step did not arrive or the server died.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import common  # noqa: F401  (the repository on sys.path)
import psutil
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    SIDEBAR,
    start_server,
    stop_server,
    tree_rss,
    wait_rendered,
)
from pmapviz.core.base import valueparse  # noqa: E402  (imports no JAX)

OUT = common.ROOT / "artifacts" / "follow_room.json"
VIEWPORT = {"width": 1280, "height": 720}
TICK_MS = 50  # arrival detection only: latencies come from in-page timestamps
SERVER_ENV = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_MAX_BYTES": "", "PMAPVIZ_PRESENTER_KEY": ""}
# one cycle of the presenter's steps, from Home: every step changes the presenter's URL
CYCLE = (
    ("link", "Guided tour"),
    *(("next", "Next"),) * 5,
    ("link", "Shapes & sharding"),
    ("preset", ""),
    ("link", "Collectives"),
    ("link", "Home"),
)
# small presets (abstract plans of a few elements), taken in turn so that two in a row differ
PRESETS = ("Broadcast weights (None)", "Mapped axis 1, out_axes=1", "Normalise with psum",
           "out_axes=None pitfall")  # fmt: skip
_SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-stale="true"]');
}"""
# in every page, before Streamlit's own code: each URL the page shows, with the wall-clock time
# (ms since the epoch, the same clock in every process) at which it showed it
URL_LOG = """(() => {
    const log = (window.__urlLog = []);
    const note = () => {
        if (!log.length || log[log.length - 1][1] !== location.href)
            log.push([performance.timeOrigin + performance.now(), location.href]);
    };
    for (const name of ["pushState", "replaceState"]) {
        const original = history[name];
        history[name] = function (...args) {
            const result = original.apply(this, args);
            note();
            return result;
        };
    }
    addEventListener("popstate", note);
    note();
})()"""
_EXCEPTION_TEXT = """() => [...document.querySelectorAll('[data-testid="stException"]')]
    .map(e => e.innerText.slice(0, 300)).join(' | ')"""
FOLLOWING = "Following the presenter."
NO_ROOM = "no room line"  # a follower whose sidebar says nothing of the room: it dropped out
LEFT_LINE = "You left the presenter"  # a follower's sidebar once it has left the room
_SIDEBAR_TEXT = f"() => document.querySelector('{SIDEBAR}')?.textContent || ''"


def canon(url: str) -> str:
    """A URL as a step: its path and its query sorted, without ``follow``."""
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if k != "follow")  # fmt: skip
    return parts.path + ("?" + "&".join(f"{k}={v}" for k, v in query) if query else "")


def pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


class RssSampler(threading.Thread):
    """The server's process tree's RSS every 0.2 s, with the time of each sample."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.samples: list[tuple[float, int]] = []

    def run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.samples.append((time.perf_counter(), tree_rss(self.pid)))
            self.stop.wait(0.2)

    def peak(self, t0: float = 0.0, t1: float = float("inf")) -> int:
        return max((rss for t, rss in list(self.samples) if t0 <= t <= t1), default=0)


def _cpu(proc: psutil.Process, children_too: bool) -> float:
    with contextlib.suppress(psutil.Error):
        t = proc.cpu_times()
        return t.user + t.system + ((t.children_user + t.children_system) if children_too else 0)
    return 0.0


def server_cpu(pid: int) -> float:
    """CPU seconds of the server, its reaped children and its live ones."""
    root = psutil.Process(pid)
    return _cpu(root, True) + sum(_cpu(c, False) for c in root.children(recursive=True))


def browser_cpu() -> tuple[float, float]:
    """CPU seconds of this process's Chromium processes (browser, renderers, GPU, utility),
    and of the harness: this Python and Playwright's driver (node)."""
    mine = psutil.Process().children(recursive=True)
    chromium = sum(_cpu(p, False) for p in mine if "chrom" in p.name().lower())
    driver = sum(_cpu(p, False) for p in mine if "chrom" not in p.name().lower())
    return chromium, driver + _cpu(psutil.Process(), False)


def cpu_now(pid: int) -> dict:
    chromium, harness = browser_cpu()
    return {"t": time.perf_counter(), "server": server_cpu(pid), "browser": chromium,
            "harness": harness}  # fmt: skip


class Presenter:
    """The leading page and the state its steps need (which preset is next)."""

    def __init__(self, page):
        self.page, self.presets_used = page, 0

    def sidebar(self) -> str:
        return self.page.evaluate(_SIDEBAR_TEXT)

    def following(self) -> int | None:
        found = re.search(r"You lead the room: (\d+) following", self.sidebar())
        return int(found.group(1)) if found else None

    def lead(self) -> None:
        page = self.page
        page.locator(SIDEBAR).get_by_text("Lead or follow the room").click()
        page.get_by_role("button", name="Lead from this browser").click()
        page.wait_for_function(
            f"() => ({_SIDEBAR_TEXT})().includes('You lead the room')", timeout=30_000
        )

    def act(self, kind: str, name: str) -> str:
        """Click for one step; returns what was clicked."""
        page = self.page
        if kind == "link":
            page.locator(SIDEBAR).get_by_role("link", name=name).click()
            return name
        if kind == "preset":
            name = PRESETS[self.presets_used % len(PRESETS)]
            self.presets_used += 1
            page.get_by_role("button", name=name).first.click()
            return f"preset {name}"
        nxt = page.get_by_role("button", name="Next").first
        if nxt.is_disabled():  # the tour's last step
            page.get_by_role("button", name="Previous").first.click()
            return "Previous"
        nxt.click()
        return "Next"


class Settle:
    """When the presenter's page has settled on a URL other than ``before``: its script done,
    nothing stale, and the same URL for 0.3 s (checked every 0.1 s)."""

    def __init__(self, page, before: str):
        self.page, self.before = page, before
        self.url, self.since, self.checked = None, 0.0, 0.0
        self.final: str | None = None

    def check(self, now: float) -> None:
        here = canon(self.page.url)
        if self.final is not None or here == self.before or now - self.checked < 0.1:
            return
        self.checked = now
        if not self.page.evaluate(_SETTLED):
            self.url = None
        elif here != self.url:
            self.url, self.since = here, now
        elif now - self.since >= 0.3:
            self.final = here


def watch(presenter: Presenter, followers: list, before: str, clicked: float,
          timeout_s: float) -> dict:  # fmt: skip
    """Tick every TICK_MS until the presenter's page settled on a new URL and every follower
    showed it or left (or ``timeout_s`` after the click); the first time each page showed
    each URL. A follower that has not arrived is asked every 2 s whether it left."""
    pages = [presenter.page, *followers]
    wall_clicked = time.time() - (time.perf_counter() - clicked)
    seen: list[dict[str, float]] = [{} for _ in pages]
    settle, left, asked = Settle(presenter.page, before), set(), clicked
    while True:
        now = time.perf_counter()
        for i, page in enumerate(pages):
            seen[i].setdefault(canon(page.url), now)
        settle.check(now)
        final = settle.final
        waiting = [i for i, s in enumerate(seen[1:]) if final not in s and i not in left]
        if final is not None and not waiting:
            break
        if final is not None and now - asked >= 2.0:
            asked = now
            left |= {i for i in waiting if _room_line(followers[i]) == LEFT_LINE}
        if now - clicked > timeout_s:
            break
        presenter.page.wait_for_timeout(TICK_MS)
    final = settle.final or canon(presenter.page.url)
    shown = seen[0].get(final, time.perf_counter())
    missed = {i: {"urls_seen_s": {u: round(t - clicked, 3) for u, t in s.items()},
                  "sidebar": _room_line(followers[i]),
                  "exception": followers[i].evaluate(_EXCEPTION_TEXT)}
              for i, s in enumerate(seen[1:]) if final not in s}  # fmt: skip
    in_page = [_first_at(page, final) for page in pages]  # wall-clock s, or None
    return {
        "url": final,
        "changed": final != before,
        "settled": settle.final is not None,
        "presenter_s": (in_page[0] or wall_clicked + shown - clicked) - wall_clicked,
        "latency_s": [t - in_page[0] if t and in_page[0] else None for t in in_page[1:]],
        "polled_latency_s": [
            s[final] - shown if final in s and final != before else None for s in seen[1:]
        ],  # fmt: skip
        "stayed": sum(canon(f.url) == final for f in followers),
        "missed": missed,
        "left": sorted(i for i, m in missed.items() if m["sidebar"] == LEFT_LINE),
    }


def _first_at(page, final: str) -> float | None:
    """When (wall-clock s) the page first showed ``final`` since its log was last read."""
    log = page.evaluate("() => (window.__urlLog || []).splice(0)")
    return next((ms / 1000 for ms, url in log if canon(url) == final), None)


def _room_line(page) -> str:
    """What a follower's sidebar says of the room (following, left, waiting)."""
    text = page.evaluate(_SIDEBAR_TEXT)
    for line in (FOLLOWING, LEFT_LINE, "waiting for the"):
        if line in text:
            return line
    return NO_ROOM


def recover(followers: list, missed: dict) -> list[int]:
    """What an attendee would do, so that later steps count them again: one who left presses
    "Back to the presenter", one whose room line is gone reloads the page (its link still
    says follow=1). Returns those reloaded."""
    reloaded = []
    for i, m in missed.items():
        with contextlib.suppress(PlaywrightError):  # a saturated machine: tried next step
            if m["sidebar"] == LEFT_LINE:
                back = followers[i].get_by_role("button", name="Back to the presenter")
                back.click(timeout=10_000)
            elif m["sidebar"] == NO_ROOM and m["exception"]:
                reloaded.append(i)
                followers[i].reload(wait_until="commit", timeout=15_000)
    return reloaded


def take_steps(presenter: Presenter, followers: list, n: int, start: int, args,
               pace: list[float] | None = None,
               until: float = float("inf")) -> list[dict]:  # fmt: skip
    """``n`` steps of the cycle from position ``start``, each ``args.dwell`` seconds past its
    arrivals, or, given ``pace``, padded to ``pace[k]`` seconds from its click; no new step
    after ``until`` (time.perf_counter())."""
    rows = []
    for k in range(n):
        if time.perf_counter() > until:
            print(f"  out of time (--max-minutes): {k} of {n} steps taken", flush=True)
            break
        kind, name = CYCLE[(start + k) % len(CYCLE)]
        before = canon(presenter.page.url)
        clicked, wall = time.perf_counter(), time.time()
        try:
            what = presenter.act(kind, name)
        except PlaywrightError as err:  # the machine too busy to click in time: said
            what = f"{name or kind}: CLICK FAILED ({type(err).__name__})"
        row = watch(presenter, followers, before, clicked, args.step_timeout)
        row["reloaded"] = recover(followers, row["missed"])
        if pace is None:
            presenter.page.wait_for_timeout(args.dwell * 1000)
        else:
            left = pace[k] - (time.perf_counter() - clicked)
            if left > 0:
                presenter.page.wait_for_timeout(left * 1000)
        row.update(step=k + 1, action=what, following=presenter.following(), clicked_at=wall,
                   duration_s=time.perf_counter() - clicked)  # fmt: skip
        rows.append(row)
        lat = [x for x in row["latency_s"] if x is not None]
        print(f"  {k + 1:>2} {what:<32} {row['url'][:48]:<48} "
              f"arrived {len(lat)}/{len(followers)} max {max(lat, default=0):.2f} s "
              f"(leader sees {row['following']})"
              + (f"; LEFT the room: followers {row['left']}" if row["left"] else "")
              + (f"; DROPPED OUT, reloaded: {row['reloaded']}" if row["reloaded"] else ""),
              flush=True)  # fmt: skip
    return rows


def open_pages(context_pages: list, url: str) -> None:
    """Open ``url`` in every page, then wait until each has rendered."""
    for page in context_pages:
        page.goto(url, wait_until="commit")
    for page in context_pages:
        wait_rendered(page, timeout_ms=180_000, quiet_ms=200)


def open_followers(presenter: Presenter, followers: list, url: str, timeout_s: float) -> dict:
    """Open the follow link in every follower's page; then, every 0.5 s, read each sidebar
    until every one says "Following the presenter." with the presenter's URL (or
    ``timeout_s``). A page that follows is never "settled": its fragment reruns every 0.5 s."""
    t0 = time.perf_counter()
    for page in followers:
        page.goto(url + "/?follow=1", wait_until="commit")
    joined: dict[int, float] = {}
    while len(joined) < len(followers) and time.perf_counter() - t0 < timeout_s:
        here = canon(presenter.page.url)
        for i, page in enumerate(followers):
            if i not in joined and canon(page.url) == here and _room_line(page) == FOLLOWING:
                joined[i] = time.perf_counter() - t0
        presenter.page.wait_for_timeout(500)
    presenter.page.wait_for_timeout(3000)
    return {"open_s": time.perf_counter() - t0, "joined": len(joined),
            "joined_after_s": sorted(round(t, 2) for t in joined.values()),
            "following": presenter.following()}  # fmt: skip


def stop_following(followers: list) -> dict:
    """Every follower presses "Stop following" (same sessions, same pages, not following);
    one without the button (it dropped out) reloads its page without ``follow=1``."""
    reloaded, deadline = 0, time.monotonic() + 90  # a saturated machine: give up in time
    for page in followers:
        button = page.get_by_role("button", name="Stop following")
        with contextlib.suppress(PlaywrightError):
            if time.monotonic() > deadline:
                break
            if button.count():
                button.click(timeout=3_000)
            else:
                reloaded += 1
                page.goto(page.url.replace("follow=1", "follow=0"), wait_until="commit")
    deadline = time.monotonic() + 60
    for page in followers:
        with contextlib.suppress(PlaywrightError, TimeoutError):
            left_ms = max(500, int((deadline - time.monotonic()) * 1000))
            wait_rendered(page, timeout_ms=left_ms, quiet_ms=200)
    return {"reloaded": reloaded, "room_lines": dict(Counter(_room_line(f) for f in followers)),
            "urls_still_with_follow_1": sum("follow=1" in f.url for f in followers)}  # fmt: skip


def follower_states(followers: list) -> dict:
    """What the followers' sidebars say now, and how many show an exception."""
    texts = [f.evaluate(_SIDEBAR_TEXT) for f in followers]
    errors = sum(f.locator('[data-testid="stException"]').count() > 0 for f in followers)
    return {
        "following_the_presenter": sum(FOLLOWING in t for t in texts),
        "left": sum("You left the presenter" in t for t in texts),
        "waiting": sum("waiting for the presenter" in t for t in texts),
        "exceptions": errors,
    }


def phase(name: str, pid: int, rss: RssSampler, run) -> tuple[list[dict], dict]:
    """Run ``run()`` (the phase's steps) between two CPU readings."""
    print(f"{name}:", flush=True)
    c0 = cpu_now(pid)
    rows = run()
    c1 = cpu_now(pid)
    wall = c1["t"] - c0["t"]
    cpu = {k: c1[k] - c0[k] for k in ("server", "browser", "harness")}
    return rows, {"wall_s": wall, "cpu_s": cpu, "peak_rss": rss.peak(c0["t"], c1["t"])}


def per_follower_minute(stats: dict, followers: int) -> dict:
    minutes = stats["wall_s"] / 60
    return {k: v / followers / minutes for k, v in stats["cpu_s"].items()}


def browser_args(renderer_limit: int) -> list[str]:
    extra = ["--mute-audio", "--disable-extensions"]
    if renderer_limit:
        extra.append(f"--renderer-process-limit={renderer_limit}")
    return [*CHROMIUM_ARGS, *extra]


def budget_from_sidebar(text: str) -> int | None:
    found = re.search(r"Memory budget for the whole server: \**([\d.]+) GiB", text)
    return int(float(found.group(1)) * 2**30) if found else None


def to_home(presenter: Presenter) -> None:
    """Back to Home (not timed), so that a phase's steps start where the cycle does."""
    if canon(presenter.page.url) != "/":
        with contextlib.suppress(PlaywrightError):  # a saturated machine: the phase says so
            presenter.act("link", "Home")
        watch(presenter, [], "", time.perf_counter(), 30.0)


def idle(name: str, presenter: Presenter, pid: int, rss: RssSampler, seconds: float) -> dict:
    """``seconds`` with the presenter on one page: the room's cost while they talk."""
    return phase(name, pid, rss, lambda: presenter.page.wait_for_timeout(seconds * 1000))[1]


def run_room(pw, url: str, proc, rss: RssSampler, args) -> dict:
    """Lead, warm up, follow for ``args.steps`` steps and ``args.idle`` seconds, then the
    same not following."""
    launch_args = browser_args(args.renderer_limit)
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=launch_args)
    try:
        contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(args.followers + 1)]
        for context in contexts:
            context.add_init_script(script=URL_LOG)
        pages = [c.new_page() for c in contexts]
        presenter, followers = Presenter(pages[0]), pages[1:]
        open_pages([presenter.page], url + "/")
        presenter.lead()
        budget_text = budget_from_sidebar(presenter.sidebar())
        print("warm-up (the presenter alone, not timed):", flush=True)
        take_steps(presenter, [], len(CYCLE), 0, args)
        to_home(presenter)
        opened, open_stats = phase("opening the follow link", proc.pid, rss, lambda: (
            open_followers(presenter, followers, url, args.open_timeout)))  # fmt: skip
        opened["cores_busy"] = {k: v / open_stats["wall_s"] for k, v in open_stats["cpu_s"].items()}
        print(f"{opened['joined']}/{len(followers)} followers joined in {opened['open_s']:.0f} s;"
              f" leader sees {opened['following']} following", flush=True)  # fmt: skip
        left = args.max_minutes * 60 - (time.perf_counter() - args.t0)
        until = time.perf_counter() + (left - 2 * args.idle - 200) / 2  # room for the baseline
        follow_rows, follow_stats = phase("following", proc.pid, rss, lambda: take_steps(
            presenter, followers, args.steps, 0, args, until=until))  # fmt: skip
        follow_idle = idle("following, presenter idle", presenter, proc.pid, rss, args.idle)
        states = follower_states(followers)
        to_home(presenter)
        stopped = stop_following(followers)
        presenter.page.wait_for_timeout(6000)  # the room forgets them after 5 s of silence
        stopped["urls_still_with_follow_1"] = sum("follow=1" in f.url for f in followers)
        silent = presenter.following()
        pace = [r["duration_s"] for r in follow_rows]
        base_rows, base_stats = phase("not following (baseline)", proc.pid, rss, lambda: take_steps(
            presenter, [], len(pace), 0, args, pace))  # fmt: skip
        base_idle = idle("not following, presenter idle", presenter, proc.pid, rss, args.idle)
        return {"chromium_args": launch_args, "budget_from_sidebar": budget_text,
                "opened": opened, "follower_states_after": states,
                "leader_count_after_leaving": silent, "stopped": stopped, "following": follow_rows,
                "following_stats": follow_stats, "following_idle_stats": follow_idle,
                "baseline": base_rows, "baseline_stats": base_stats,
                "baseline_idle_stats": base_idle}  # fmt: skip
    finally:
        browser.close()


ERROR_AT = re.compile(r"^(\S+ \S+) Uncaught app execution", re.M)


def server_errors(log_text: str) -> list[dict]:
    """Each "Uncaught app execution" in the server's log: when, and its last line."""
    found = []
    for m in ERROR_AT.finditer(log_text):
        tail = log_text[m.end() :].split("\n2", 1)[0].strip().splitlines()
        last = next((line for line in reversed(tail) if line and not line[0].isspace()), "")
        found.append({"at": m.group(1), "error": last.split(". Did you")[0][:160]})
    return found


def place_errors(errors: list[dict], room: dict) -> None:
    """Name the phase and step each server error fell in (the step clicked last before it)."""
    clicks = sorted((r["clicked_at"], f"{name} step {r['step']} ({r['action']})")
                    for name in ("following", "baseline") for r in room[name])  # fmt: skip
    for e in errors:
        t = datetime.strptime(e["at"], "%Y-%m-%d %H:%M:%S.%f").timestamp()
        e["during"] = next((what for at, what in reversed(clicks) if at <= t), "before the steps")


def cpu_summary(room: dict, followers: int) -> dict:
    """CPU seconds per follower per minute of each phase, and following / not following."""
    names = {"stepping": ("following_stats", "baseline_stats"),
             "idle": ("following_idle_stats", "baseline_idle_stats")}  # fmt: skip
    out: dict = {}
    for label, (f_key, b_key) in names.items():
        f = per_follower_minute(room[f_key], followers)
        b = per_follower_minute(room[b_key], followers)
        out[label] = {
            "wall_s": {"following": room[f_key]["wall_s"], "not_following": room[b_key]["wall_s"]},
            "cpu_s": {"following": room[f_key]["cpu_s"], "not_following": room[b_key]["cpu_s"]},
            "per_follower_minute": {"following": f, "not_following": b},
            "ratio": {k: f[k] / b[k] if b[k] else None for k in ("server", "browser")},
            "cores_busy": {  # CPU seconds per second (one core's worth is 1.0), per process
                who: {k: v / room[key]["wall_s"] for k, v in room[key]["cpu_s"].items()}
                for who, key in (("following", f_key), ("not_following", b_key))
            },
        }
    return out


def summarize(room: dict, rss: RssSampler, budget: int, args) -> dict:
    lat = [x for r in room["following"] for x in r["latency_s"] if x is not None]
    polled = [x for r in room["following"] for x in r["polled_latency_s"] if x is not None]
    total = args.followers * len(room["following"])
    counts = [r["following"] for r in room["following"] if r["following"] is not None]
    budget_used = room["budget_from_sidebar"] or budget
    return {
        "followers": args.followers, "steps": args.steps, "devices": args.devices,
        "steps_taken": len(room["following"]),
        "dwell_s": args.dwell, "idle_s": args.idle, "step_timeout_s": args.step_timeout,
        "chromium_args": room["chromium_args"], "viewport": VIEWPORT,
        "latency_median_s": pct(lat, 50), "latency_p95_s": pct(lat, 95),
        "latency_max_s": max(lat, default=None),
        "polled_latency_median_s": pct(polled, 50), "polled_latency_p95_s": pct(polled, 95),
        "latency_negative": sum(x < 0 for x in lat),
        "arrived_fraction": len(lat) / total if total else None,
        "arrived": len(lat), "follower_steps": total,
        "on_step_at_its_end": sum(r["stayed"] for r in room["following"]),
        "left_by_themselves": sum(len(r["left"]) for r in room["following"]),
        "dropped_out_reloaded": sum(len(r["reloaded"]) for r in room["following"]),
        "missed_with_exception": sum(bool(m["exception"]) for r in room["following"]
                                     for m in r["missed"].values()),  # fmt: skip
        "presenter_not_settled": sum(not r["settled"] for r in room["following"]),
        "steps_without_url_change": sum(not r["changed"] for r in room["following"]),
        "presenter_click_to_url_median_s": pct([r["presenter_s"] for r in room["following"]],
                                               50),  # fmt: skip
        "leader_count_min": min(counts, default=None),
        "leader_count_max": max(counts, default=None),
        "leader_count_after_followers_left": room["leader_count_after_leaving"],
        "after_stop_following": room["stopped"],
        "followers_opened": room["opened"], "follower_states_after": room["follower_states_after"],
        "peak_rss_gib": rss.peak() / 2**30,
        "peak_rss_following_gib": room["following_stats"]["peak_rss"] / 2**30,
        "peak_rss_baseline_gib": room["baseline_stats"]["peak_rss"] / 2**30,
        "budget_gib": budget_used / 2**30,
        "budget_source": "sidebar" if room["budget_from_sidebar"] else "--max-bytes",
        "peak_rss_over_budget": rss.peak() / budget_used,
        "cpu": cpu_summary(room, args.followers),
        "cores_busy_opening": room["opened"].get("cores_busy"),
        "machine_saturated": saturated(room, args.followers),
    }  # fmt: skip


def saturated(room: dict, followers: int) -> bool:
    """Whether the server, the browsers and the harness together kept (nearly) every core
    busy while following: then the figures measure this machine, not the room."""
    cores = os.cpu_count() or 1
    phases = [room["following_stats"], room["following_idle_stats"]]
    if room["opened"].get("joined", 0) < followers:
        return True
    return any(sum(p["cpu_s"].values()) / p["wall_s"] >= 0.85 * cores for p in phases)


def show(s: dict) -> None:
    def ms(x):
        return "n/a" if x is None else f"{x * 1e3:.0f} ms"

    print(
        f"\n{s['followers']} followers, {s['steps']} steps, --devices {s['devices']}; "
        f"chromium {' '.join(a for a in s['chromium_args'] if 'resolver' not in a)}"
    )
    print(
        f"follow latency: median {ms(s['latency_median_s'])}, p95 {ms(s['latency_p95_s'])}, "
        f"max {ms(s['latency_max_s'])}; arrived {s['arrived']}/{s['follower_steps']} "
        f"({s['arrived_fraction']:.1%}); on the step at its end: {s['on_step_at_its_end']}; "
        f"left the room by themselves: {s['left_by_themselves']}; dropped out (no room line, "
        f"reloaded): {s['dropped_out_reloaded']}"
    )
    print(
        f"leader's count during the steps: {s['leader_count_min']}..{s['leader_count_max']}"
        f" (expected {s['followers']}); after the followers left: "
        f"{s['leader_count_after_followers_left']}"
    )
    print(
        f"server peak RSS {s['peak_rss_gib']:.2f} GiB of a {s['budget_gib']:.1f} GiB budget "
        f"({s['peak_rss_over_budget']:.2f}x; {s['budget_source']})"
    )
    print(f"server errors (Uncaught app execution in its log): {s.get('server_errors', 0)}")
    if s["machine_saturated"]:
        print("MACHINE SATURATED: not every follower joined, or the server, the browsers and "
              "the harness kept every core busy: these figures measure this machine, not the "
              "room; try fewer --followers")  # fmt: skip
    print(f"{'CPU s per follower per minute':<36} {'server':>7} {'browsers':>9} {'harness':>7}")
    for label, c in s["cpu"].items():
        for who in ("following", "not_following"):
            d = c["per_follower_minute"][who]
            print(f"{label + ', ' + who.replace('_', ' '):<36} {d['server']:>7.2f} "
                  f"{d['browser']:>9.2f} {d['harness']:>7.2f}")  # fmt: skip
        r = {k: v or 0.0 for k, v in c["ratio"].items()}
        print(f"{label + ', following / not':<36} {r['server']:>6.2f}x {r['browser']:>8.2f}x")
        for who, busy in c["cores_busy"].items():
            print(f"    cores busy, {who.replace('_', ' ')}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in busy.items())
                  + f" (of {os.cpu_count()})")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--followers", type=int, default=30)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--max-bytes", default="2G")
    ap.add_argument("--dwell", type=float, default=2.0, help="seconds on a step after arrivals")
    ap.add_argument("--idle", type=float, default=15.0, help="seconds of each idle phase")
    ap.add_argument("--step-timeout", type=float, default=20.0)
    ap.add_argument("--open-timeout", type=float, default=180.0,
                    help="seconds for the followers to join")  # fmt: skip
    ap.add_argument("--max-minutes", type=float, default=13.0,
                    help="fewer steps when the run would take longer")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON goes")
    ap.add_argument("--renderer-limit", type=int, default=0,
                    help="Chromium's --renderer-process-limit (0: not set)")  # fmt: skip
    args = ap.parse_args()
    args.t0 = time.perf_counter()
    budget = valueparse.parse_bytes(args.max_bytes, "--max-bytes")

    load_before = os.getloadavg()  # other jobs on the same cores make every figure larger
    proc, url = start_server(["--devices", str(args.devices), "--max-bytes", args.max_bytes],
                             env=SERVER_ENV)  # fmt: skip
    rss = RssSampler(proc.pid)
    rss.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout`: still stop the server
    try:
        with sync_playwright() as pw:
            room = run_room(pw, url, proc, rss, args)
        alive = proc.poll() is None
    finally:
        rss.stop.set()
        rss.join(timeout=2)
        stop_server(proc)
    log = Path(proc.log.name)  # type: ignore[attr-defined]
    room["server_errors"] = errors = server_errors(log.read_text(errors="replace"))
    place_errors(errors, room)
    summary = summarize(room, rss, budget, args) | {
        "server_alive_at_end": alive,
        "server_log": os.path.relpath(log),
        "server_errors": len(errors),
        "server_error_kinds": dict(Counter(e["error"] for e in errors)),
        "server_errors_during": dict(Counter(e["during"] for e in errors)),
        "load_average_before_after": [load_before, os.getloadavg()],
    }
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, **room}, indent=2, default=str))
    print(json.dumps(summary, indent=2))
    show(summary)
    print(f"written to {os.path.relpath(args.out)}")
    return 0 if summary["arrived"] == summary["follower_steps"] and alive else 1


if __name__ == "__main__":
    sys.exit(main())
