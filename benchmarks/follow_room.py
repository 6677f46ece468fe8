"""Follow the presenter under load: one presenter leads a room of followers on one real server;
how fast the followers follow, and what following costs the server.

    .venv/bin/python benchmarks/follow_room.py [--followers 30] [--steps 20] [--browsers 2]
        [--devices 4] [--max-bytes 2G] [--idle 15] [--dwell 1] [--step-timeout 30]
        [--out artifacts/follow_room.json] [--server-env NAME=VALUE ...]
        [--goal-median 1.0] [--goal-p95 2.0]

About five minutes with the defaults on two cores. ``--server-env`` sets an environment
variable for the server only, e.g. ``STREAMLIT_RUNNER_POST_SCRIPT_GC=false`` to compare a
Streamlit option against the checkout's configuration.

Why protocol clients. In a workshop each attendee's browser runs on their own laptop; what the
thirty followers share is the server. Thirty Chromium tabs on this 2-core machine would measure
this machine drawing thirty pages, not the server. So ``--followers`` are protocol followers,
cheap clients in one asyncio loop (a thread of this process) that do over the network what a
follower's browser does, without rendering. It loads the follow link once: GET the page's HTML,
``/_stcore/health`` (the XSRF cookie) and ``/_stcore/host-config``; open ``/_stcore/stream``
with the browser's subprotocols (``streamlit`` and the XSRF token) and Origin; send the first
``rerun_script`` with the URL's query string and page name (and context info, no widget states,
no cached hashes: a fresh page). Then, as the browser: ``navigation`` and ``new_session`` name
the page each run is on (a follower switches page in its session), ``page_info_changed``
updates its query string (the page wrote its link, or a switch set it); cacheable messages are
kept, their hashes sent with later reruns and ``ref_hash`` answered from them, as the browser's
message cache does; ``auto_rerun`` starts a timer that sends the fragment's rerun every
``interval`` seconds (``is_auto_rerun``, the current page's script hash, the current query), as
the browser's ``setInterval``, and a whole run's ``new_session`` ends every timer, as the
browser's ``cleanupAutoReruns``. A dropped connection loads the follow link again. Not done:
static assets (a browser has them cached), widget states (a follower touches none; the server
keeps their values), heartbeats (sent only inside an embedding host).
``--browsers`` more followers are real Chromium tabs on this machine, reported apart: end to
end, rendering included, on a shared 2-core machine.

The presenter is one headless Chromium tab (1280x720). It leads ("Lead from this browser";
the server is started with a known ``--presenter-key``), walks one cycle alone (warming the
server's caches, not timed), and steps by clicking only: Guided tour -> Next x4 (through the
tour and back: Previous from its end) -> Shapes & sharding -> the preset "Broadcast weights
(None)" -> a new "shape of x" for it -> Collectives -> Home -> ...

Phases, with CPU seconds of the server (its process tree), this process (the protocol
followers' thread apart), Chromium and Playwright's driver, and the whole machine:
idle with no followers; one cycle of steps with no followers (the presenter's own cost);
the followers join; idle following; ``--steps`` steps following. Per step: when the presenter's
page showed it (settled, in-page ``Date.now()``), and for each follower when it arrived: a
protocol follower when a whole run at that page and query first finished after the click; a
browser when its page first showed that URL settled after the click (in-page). Follow
latency = arrival - presenter shown (slightly negative is possible: the server publishes the
step before the presenter's browser has drawn it). Also counted: followers showing "You left
the presenter" (never done by them: must be 0), error alerts or exceptions (must be 0), the
leader's "N following", the server's sessions (``/_stcore/metrics``) before and after the
followers leave, the server's peak RSS (every 0.1 s) against ``--max-bytes``, and errors in
the server's log. A server that stops answering (no one, presenter included, finished three
steps in a row) ends the stepping early and is said so. Results: ``--out`` (JSON) and a
summary; exit status 1 when a follower-step did not arrive, the follow latency over every
follower-step (protocol and browsers) passed ``--goal-median`` or ``--goal-p95``, a follower
left or showed an error, or the server died.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import common  # noqa: F401  (the repository on sys.path)
import psutil
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from tornado.httpclient import AsyncHTTPClient
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from harness import CHROMIUM, CHROMIUM_ARGS, SIDEBAR, start_server, stop_server, tree_rss
from harness.browser import wait_rendered
from pmapviz.core.base import valueparse  # imports no JAX

OUT = common.ROOT / "artifacts" / "follow_room.json"
VIEWPORT = {"width": 1280, "height": 720}
KEY = "follow-room-bench-key"  # the server's presenter key (--presenter-key)
SERVER_ENV = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_MAX_BYTES": "", "PMAPVIZ_PRESENTER_KEY": ""}
NOT_A_STEP = frozenset({"follow", "present"})  # a follower's own keys
PRESET = "Broadcast weights (None)"  # the explorer's matmul preset: x (n, 4, 5) @ w (5, 2)
SHAPES = ("4, 6, 5", "4, 2, 5", "4, 8, 5", "4, 3, 5")  # "shape of x" for it, taken in turn
CYCLE = ("Guided tour", "next", "next", "next", "next", "Shapes & sharding", "preset",
         "shape", "Collectives", "Home")  # fmt: skip
WEDGED_AFTER = 3  # steps in a row that no one (presenter included) finished: stop stepping
LEFT = "You left the presenter"
ERROR_ALERT = 1  # Alert.Format.ERROR
XSRF = "_streamlit_xsrf"
# in every Chromium page, before Streamlit's code: each time the page's main area settles (a
# title, nothing stale in it) at a URL other than the last one noted, [Date.now(), href] goes to
# sessionStorage. Checked on every change to the page (a MutationObserver: a timer in a tab
# not in front is slowed), and every 25 ms besides; not the script's state (a follower's
# sidebar polls twice a second, and under load its page is running a poll more often than not)
SHOWN_LOG = """(() => {
    const key = "__followShown";
    let noted = null;
    const check = () => {
        const settled = !!document.querySelector('[data-testid="stMain"] h1')
            && !document.querySelector('[data-testid="stMain"] [data-stale="true"]');
        if (!settled || location.href === noted) return;
        noted = location.href;
        const log = JSON.parse(sessionStorage.getItem(key) || "[]");
        log.push([Date.now(), location.href]);
        sessionStorage.setItem(key, JSON.stringify(log));
    };
    new MutationObserver(check).observe(document, {subtree: true, childList: true,
        attributes: true, attributeFilter: ["data-stale"]});
    setInterval(check, 25);
})()"""
TAKE_SHOWN = """() => { const v = sessionStorage.getItem("__followShown") || "[]";
    sessionStorage.removeItem("__followShown"); return JSON.parse(v); }"""
# every tab is a screen someone watches: Chromium slows the timers of a tab not in front (to
# one wake-up a minute after five minutes), which a run of several minutes would measure
AWAKE = ["--disable-background-timer-throttling", "--disable-renderer-backgrounding",
         "--disable-backgrounding-occluded-windows"]  # fmt: skip
SIDEBAR_TEXT = f"() => document.querySelector('{SIDEBAR}')?.innerText || ''"


def canon(url: str) -> str:
    """A URL as a step: its path and its sorted query, without a follower's own keys."""
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if k not in NOT_A_STEP)  # fmt: skip
    return (parts.path or "/") + ("?" + urlencode(query) if query else "")


def pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# ------------------------------------------------------------------ protocol followers


@dataclass
class Load:
    """One page load of a protocol follower: a session of its own."""

    link: str
    opened: float
    path: str = "/"  # the page the last run was on (a follower switches page in its session)
    script_hash: str = ""
    query: str = ""
    pages: dict = field(default_factory=dict)  # page script hash -> its URL path
    runs: int = 0  # whole runs finished
    in_run: bool = False  # a whole run started and its end has not come yet
    left: bool = False
    errors: set = field(default_factory=set)


@dataclass
class Tally:
    loads: int = 0
    messages: int = 0
    bytes_in: int = 0
    polls: int = 0
    ref_hits: int = 0
    ref_misses: int = 0
    dropped: int = 0
    left: int = 0
    errors: list[str] = field(default_factory=list)
    status: str = ""  # the room line its sidebar showed last


class Follower:
    """An attendee's browser following the room, over Streamlit's websocket protocol."""

    def __init__(self, idx: int, base: str, events: list, closing: set):
        self.idx, self.base, self.events, self.closing = idx, base, events, closing
        self.cache: dict[str, ForwardMsg] = {}  # the browser's message cache
        self.cookie = ""
        self.tally = Tally()

    def note(self, kind: str, t: float, url: str, extra=None) -> None:
        """An event for the steps to read: (kind, follower, time, step's URL, extra)."""
        self.events.append((kind, self.idx, t, canon(url), extra))

    async def run(self, link: str, delay: float) -> None:
        await asyncio.sleep(delay)
        while link:
            link = await self._load(link)

    async def _load(self, link: str) -> str:
        """One page load of ``link``, followed until its connection drops; returns the link
        to load again."""
        load = Load(link, time.time(), path=urlsplit(link).path or "/", query=urlsplit(link).query)
        self.tally.loads += 1
        self.note("open", load.opened, link)
        self.cache.clear()  # a fresh page: an empty message cache
        tickers: dict[str, tuple[float, asyncio.Task]] = {}
        ws = None
        try:
            await self._http(load.path, load.query)
            ws = await connect(self.base.replace("http", "ws", 1) + "/_stcore/stream",
                               subprotocols=["streamlit", self.cookie or "PLACEHOLDER_AUTH_TOKEN"],
                               origin=self.base, additional_headers=self._cookie_header(),
                               max_size=None, ping_interval=None, proxy=None,
                               open_timeout=120)  # fmt: skip
            await ws.send(self._rerun(load, "").SerializeToString())
            async for data in ws:
                self.tally.messages += 1
                self.tally.bytes_in += len(data)
                fwd = ForwardMsg()
                fwd.ParseFromString(data)
                self._handle(fwd, load, ws, tickers)
            reason = "closed by the server"
        except (ConnectionClosed, OSError) as err:
            reason = repr(err)[:200]
        finally:
            for _, task in tickers.values():
                task.cancel()
            if ws is not None:  # closed as a tab leaving the page: the next load does not wait
                closing = asyncio.ensure_future(ws.close())
                self.closing.add(closing)
                closing.add_done_callback(self.closing.discard)
        self.tally.dropped += 1
        self.note("dropped", time.time(), link, reason)
        await asyncio.sleep(1.0)
        return link

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": f"{XSRF}={self.cookie}"} if self.cookie else {}

    async def _http(self, path: str, query: str) -> None:
        """What a page load asks over HTTP besides the cached assets."""
        client = AsyncHTTPClient()
        for target in (path + (f"?{query}" if query else ""), "/_stcore/health",
                       "/_stcore/host-config"):  # fmt: skip
            reply = await client.fetch(self.base + target, headers=self._cookie_header(),
                                       raise_error=False, request_timeout=120)  # fmt: skip
            for cookie in reply.headers.get_list("Set-Cookie"):
                name, _, rest = cookie.partition("=")
                if name.strip() == XSRF and not self.cookie:
                    self.cookie = rest.split(";", 1)[0]

    def _rerun(self, load: Load, fragment: str) -> BackMsg:
        """The browser's rerun_script: a page's first run (its page name), or a fragment's
        timer (the page's script hash, and the hashes of the messages it has cached)."""
        msg = BackMsg()
        run = msg.rerun_script
        run.query_string = load.query
        if fragment:
            run.page_script_hash, run.fragment_id, run.is_auto_rerun = (
                load.script_hash, fragment, True)  # fmt: skip
            run.cached_message_hashes.extend(self.cache)
        else:
            run.page_name = load.path.strip("/")
        info = run.context_info
        info.timezone, info.timezone_offset, info.locale = "UTC", 0, "en-US"
        info.url = f"{self.base}{load.path}" + (f"?{load.query}" if load.query else "")
        info.is_embedded, info.color_scheme = False, "light"
        return msg

    def _handle(self, fwd: ForwardMsg, load: Load, ws, tickers: dict) -> None:
        """One message from the server, as the browser takes it."""
        if fwd.metadata.cacheable:
            self.cache[fwd.hash] = fwd
        which = fwd.WhichOneof("type")
        if which == "ref_hash":
            cached = self.cache.get(fwd.ref_hash)
            self.tally.ref_hits += cached is not None
            self.tally.ref_misses += cached is None
            if cached is None:
                return
            fwd, which = cached, cached.WhichOneof("type")
        whole = not fwd.metadata.run.fragment_ids  # a whole run's message, not a poll's
        if which == "new_session" and whole:  # a poll runs at the page its request named
            self._on_page(load, fwd.new_session.page_script_hash)
            load.in_run = True
            for _, task in tickers.values():  # the browser ends every timer at a whole run's
                task.cancel()  # start (cleanupAutoReruns); the run's auto_rerun starts its own
            tickers.clear()
        elif which == "navigation":
            load.pages |= {
                p.page_script_hash: "/" + p.url_pathname for p in fwd.navigation.app_pages
            }
            self._on_page(load, fwd.navigation.page_script_hash)
        elif which == "page_info_changed":
            load.query = fwd.page_info_changed.query_string
        elif which == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            self._element(fwd.delta.new_element, load)
        elif which == "auto_rerun":
            self._timer(fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval, load, ws, tickers)
        elif which == "stop_auto_rerun":
            for fragment in fwd.stop_auto_rerun.fragment_ids:
                with contextlib.suppress(KeyError):
                    tickers.pop(fragment)[1].cancel()
        elif which == "script_finished" and load.in_run:
            # the first end after a whole run started is that run's, whatever it says: a busy
            # server sends it late, and Streamlit relabels a finish still queued when the next
            # run starts (as finished early, or as a fragment's)
            load.runs, load.in_run = load.runs + 1, False
            self.note("arrived", time.time(), f"{load.path}?{load.query}", load.runs)

    @staticmethod
    def _on_page(load: Load, script_hash: str) -> None:
        if script_hash:
            load.script_hash = script_hash
            load.path = load.pages.get(script_hash, load.path)

    def _element(self, el, load: Load) -> None:
        kind = el.WhichOneof("type")
        if kind == "exception":
            self._error(f"exception {el.exception.type}: {el.exception.message[:160]}", load)
        elif kind == "alert":
            body = el.alert.body
            if el.alert.format == ERROR_ALERT:
                self._error(f"error alert: {body[:160]}", load)
            if body.startswith(("Following", "You left", "You lead")):
                self.tally.status = body
            if body.startswith(LEFT) and not load.left:
                load.left = True
                self.tally.left += 1
                self.note("left", time.time(), f"{load.path}?{load.query}")

    def _error(self, text: str, load: Load) -> None:
        """An error on this page load (once each: a fragment redraws its own every poll)."""
        if text not in load.errors:
            load.errors.add(text)
            self.tally.errors.append(f"{canon(load.path + '?' + load.query)}: {text}")
            self.note("error", time.time(), f"{load.path}?{load.query}", text)

    def _timer(self, fragment: str, interval: float, load: Load, ws, tickers: dict) -> None:
        """The browser's setInterval for a fragment (the same interval again: kept)."""
        if fragment in tickers and tickers[fragment][0] == interval:
            return
        if fragment in tickers:
            tickers.pop(fragment)[1].cancel()
        tickers[fragment] = (interval, asyncio.ensure_future(self._tick(fragment, interval,
                                                                        load, ws)))  # fmt: skip

    async def _tick(self, fragment: str, interval: float, load: Load, ws) -> None:
        due = time.monotonic()
        with contextlib.suppress(ConnectionClosed):
            while True:
                due += interval
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                await ws.send(self._rerun(load, fragment).SerializeToString())
                self.tally.polls += 1


class ProtocolRoom:
    """The protocol followers, in an asyncio loop of their own thread."""

    def __init__(self, base: str, n: int):
        self.events: list[tuple] = []  # appended by the loop's thread only
        self.closing: set[asyncio.Future] = set()  # sockets being closed in the background
        self.followers = [Follower(i, base, self.events, self.closing) for i in range(n)]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, daemon=True, name="followers")
        self.tasks: list[asyncio.Task] = []
        self.thread_id: int | None = None
        self.started = self.stopped = 0.0

    def _main(self) -> None:
        self.thread_id = threading.get_native_id()
        asyncio.set_event_loop(self.loop)
        AsyncHTTPClient.configure(None, max_clients=256)
        self.loop.run_forever()

    def start(self, link: str, spread_s: float) -> None:
        """Every follower opens ``link``, spread over ``spread_s`` seconds (people arrive)."""
        self.thread.start()
        self.started = time.time()
        n = max(1, len(self.followers))

        def begin() -> None:
            self.tasks = [self.loop.create_task(f.run(link, spread_s * i / n))
                          for i, f in enumerate(self.followers)]  # fmt: skip

        self.loop.call_soon_threadsafe(begin)

    def stop(self) -> None:
        """Close every follower (its socket closed as a tab is), then the loop."""
        if not self.thread.is_alive():
            return

        async def close() -> None:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            if self.closing:
                await asyncio.wait([*self.closing], timeout=10)
            self.loop.stop()

        self.loop.call_soon_threadsafe(lambda: self.loop.create_task(close()))
        self.thread.join(timeout=30)
        self.stopped = time.time()


# ------------------------------------------------------------------ measuring


class RssSampler(threading.Thread):
    """The server's process tree's RSS every 0.1 s."""

    def __init__(self, pid: int):
        super().__init__(daemon=True, name="rss")
        self.pid, self.stop = pid, threading.Event()
        self.samples: list[tuple[float, int]] = []

    def run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.samples.append((time.time(), tree_rss(self.pid)))
            self.stop.wait(0.1)

    def peak(self, t0: float = 0.0, t1: float = float("inf")) -> int:
        return max((rss for t, rss in list(self.samples) if t0 <= t <= t1), default=0)


def _cpu(proc: psutil.Process, children_too: bool = False) -> float:
    with contextlib.suppress(psutil.Error):
        t = proc.cpu_times()
        return t.user + t.system + ((t.children_user + t.children_system) if children_too else 0)
    return 0.0


def cpu_now(server_pid: int, followers_thread: int | None) -> dict:
    """CPU seconds so far: the server's tree, this process (and its followers' thread),
    Chromium, Playwright's driver, and the whole machine (busy = not idle)."""
    me, server = psutil.Process(), psutil.Process(server_pid)
    server_tree = {server_pid, *(c.pid for c in server.children(recursive=True))}
    kids = [p for p in me.children(recursive=True) if p.pid not in server_tree]
    thread = next((t.user_time + t.system_time for t in me.threads()
                   if t.id == followers_thread), 0.0)  # fmt: skip
    machine = psutil.cpu_times()
    return {
        "t": time.time(),
        "server": _cpu(server, True) + sum(_cpu(c) for c in server.children(recursive=True)),
        "bench": _cpu(me),
        "protocol_followers": thread,
        "chromium": sum(_cpu(p) for p in kids if "chrom" in p.name().lower()),
        "driver": sum(_cpu(p) for p in kids if "chrom" not in p.name().lower()),
        "machine": sum(machine) - machine.idle - getattr(machine, "iowait", 0.0),
    }


class Phase:
    """A phase's wall time, CPU seconds by process, peak RSS and steps."""

    def __init__(self, name: str, ctx: Run):
        self.name, self.ctx = name, ctx

    def __enter__(self) -> Phase:
        print(f"{self.name}:", flush=True)
        self.c0 = cpu_now(self.ctx.proc.pid, self.ctx.room.thread_id if self.ctx.room else None)
        return self

    def __exit__(self, *exc) -> None:
        c1 = cpu_now(self.ctx.proc.pid, self.ctx.room.thread_id if self.ctx.room else None)
        wall = c1["t"] - self.c0["t"]
        cpu = {k: c1[k] - self.c0[k] for k in c1 if k != "t"}
        self.ctx.phases[self.name] = {
            "wall_s": wall, "cpu_s": cpu,
            "cores_busy": {k: v / wall for k, v in cpu.items()} if wall > 0 else {},
            "peak_rss": self.ctx.rss.peak(self.c0["t"], c1["t"]),
        }  # fmt: skip


def metrics(base: str) -> dict:
    """The server's sessions: active now, and connects/disconnects so far."""
    url = base + "/_stcore/metrics?families=active_sessions&families=session_events"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
    except OSError as err:
        return {"error": repr(err)}
    out = {"active": None}
    for line in text.splitlines():
        if m := re.match(r'session_events_total\{type="(\w+)"\} (\d+)', line):
            out[m.group(1)] = int(m.group(2))
        elif m := re.match(r"active_sessions (\d+)", line):
            out["active"] = int(m.group(1))
    return out


# ------------------------------------------------------------------ the presenter


class Presenter:
    """The leading Chromium page: its moves, and when it showed each step."""

    def __init__(self, page):
        self.page, self.shapes, self.forward = page, 0, True
        self.shown: list[tuple[float, str]] = []  # (when, URL) the page showed settled

    def sidebar(self) -> str:
        return self.page.evaluate(SIDEBAR_TEXT)

    def following(self) -> int | None:
        found = re.search(r"You lead the room: (\d+) following", self.sidebar())
        return int(found.group(1)) if found else None

    def lead(self, url: str) -> None:
        page = self.page
        page.goto(url + "/")
        wait_rendered(page)
        page.locator(SIDEBAR).get_by_text("Lead or follow the room").click()
        button = page.get_by_role("button", name="Lead from this browser")
        if button.count():
            button.click()
        else:  # not seen as this machine: type the key
            box = page.get_by_label("Presenter key")
            box.fill(KEY)
            box.press("Enter")  # the button takes the key once the field has sent it
            page.get_by_role("button", name="Lead the room").click()
        page.wait_for_function(f"() => ({SIDEBAR_TEXT})().includes('You lead the room')",
                               timeout=60_000)  # fmt: skip

    def act(self, move: str) -> str:
        """One move by clicking; returns what was done."""
        page, side = self.page, self.page.locator(SIDEBAR)
        if move == "next":  # through the tour and back: Next to its end, then Previous
            name = "Next" if self.forward else "Previous"
            button = page.get_by_role("button", name=name).first
            if button.is_disabled():
                self.forward = not self.forward
                name = "Next" if self.forward else "Previous"
                button = page.get_by_role("button", name=name).first
            button.click()
            return name
        if move == "preset":
            page.get_by_role("button", name=PRESET).first.click()
            return f"preset {PRESET}"
        if move == "shape":
            box = page.get_by_label("shape of x", exact=True)
            now = box.input_value().replace(" ", "")
            value = next(s for s in SHAPES[self.shapes :] + SHAPES if s.replace(" ", "") != now)
            self.shapes = (SHAPES.index(value) + 1) % len(SHAPES)
            box.fill(value)
            box.press("Enter")
            return f"shape of x = {value}"
        side.get_by_text(move, exact=True).click()
        return move

    def read_shown(self) -> None:
        with contextlib.suppress(PlaywrightError):
            self.shown += [(ms / 1000, canon(url)) for ms, url in self.page.evaluate(TAKE_SHOWN)]

    def steady(self, before: str, clicked: float, timeout_s: float) -> tuple[str, float | None]:
        """The URL the page settled on (the same for 0.5 s, shown settled since the click)
        and when it first showed it settled; (its URL, None) if it did not in time."""
        url, since = None, time.time()
        while time.time() - clicked < timeout_s:
            self.read_shown()
            now, here = time.time(), canon(self.page.url)
            if here != url:
                url, since = here, now
            first = next((t for t, u in self.shown if u == here and t >= clicked), None)
            if here != before and first is not None and now - since >= 0.5:
                return here, first
            self.page.wait_for_timeout(100)
        return canon(self.page.url), None


# ------------------------------------------------------------------ the run


@dataclass
class Run:
    """What the phases share."""

    args: argparse.Namespace
    proc: object
    base: str
    rss: RssSampler
    presenter: Presenter | None = None
    room: ProtocolRoom | None = None
    browsers: list = field(default_factory=list)  # follower pages
    browser_shown: list[list] = field(default_factory=list)  # per page: [(t, canon)]
    phases: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    cursor: int = 0  # how much of the room's events the steps have read

    def read_browsers(self) -> None:
        for page, seen in zip(self.browsers, self.browser_shown, strict=True):
            with contextlib.suppress(PlaywrightError):  # a page navigating under the read
                seen += [(ms / 1000, canon(u)) for ms, u in page.evaluate(TAKE_SHOWN)]


def arrivals(run: Run, url: str, since: float) -> tuple[dict, dict]:
    """When each follower arrived at ``url`` since ``since``: {index: time}, protocol (a whole
    run on that page and query finished) and browsers (the page settled at that URL)."""
    proto: dict[int, float] = {}
    for kind, idx, t, u, _ in run.room.events[run.cursor :]:
        if kind == "arrived" and t >= since and u == url and idx not in proto:
            proto[idx] = t
    browsers = {}
    for i, shown in enumerate(run.browser_shown):
        t = next((t for t, u in shown if t >= since and u == url), None)
        if t is not None:
            browsers[i] = t
    return proto, browsers


def wait_arrivals(run: Run, url: str, since: float, timeout_s: float) -> tuple:
    """Until every follower arrived at ``url`` (or ``timeout_s``)."""
    n, k = len(run.room.followers), len(run.browsers)
    while True:
        run.read_browsers()
        proto, browsers = arrivals(run, url, since)
        if (len(proto) == n and len(browsers) == k) or time.time() - since > timeout_s:
            return proto, browsers
        run.presenter.page.wait_for_timeout(100)


def take_step(run: Run, k: int, move: str) -> dict:
    """One move, then wait for the followers and ``--dwell`` seconds more; the step's row."""
    p, args = run.presenter, run.args
    before, clicked = canon(p.page.url), time.time()
    try:
        what = p.act(move)
    except PlaywrightError as err:  # a busy machine: said, and the step still waited for
        what = f"{move}: CLICK FAILED ({type(err).__name__})"
    url, shown = p.steady(before, clicked, args.step_timeout)
    row = {"step": k, "move": what, "url": url, "clicked_at": clicked, "shown_at": shown,
           "presenter_s": None if shown is None else shown - clicked}  # fmt: skip
    if run.room is None:
        p.page.wait_for_timeout(args.dwell * 1000)
    else:
        proto, browsers = wait_arrivals(run, url, clicked, args.step_timeout)
        p.page.wait_for_timeout(args.dwell * 1000)
        row |= step_outcome(run, url, shown or clicked, proto, browsers)
    row["duration_s"] = time.time() - clicked
    show_step(row, run)
    return row


def step_outcome(run: Run, url: str, shown: float, proto: dict, browsers: dict) -> dict:
    """Latencies from the presenter's ``shown``, who is missing, and what happened on the step
    (whole runs, one elsewhere after arriving, a follower leaving, an error)."""
    after = run.room.events[run.cursor :]
    run.cursor = len(run.room.events)
    runs = [e for e in after if e[0] == "arrived"]
    again = {i for _, i, t, u, _ in runs if i in proto and t > proto[i] and u != url}
    return {
        "protocol_latency_s": {i: t - shown for i, t in proto.items()},
        "browser_latency_s": {i: t - shown for i, t in browsers.items()},
        "missing_protocol": sorted(set(range(len(run.room.followers))) - set(proto)),
        "missing_browsers": sorted(set(range(len(run.browsers))) - set(browsers)),
        "missing_browsers_at": {i: _at(run.browsers[i])
                                for i in set(range(len(run.browsers))) - set(browsers)},
        "missing_runs": {i: [(round(t - shown, 2), u) for kind, j, t, u, _ in after
                             if kind == "arrived" and j == i]
                         for i in set(range(len(run.room.followers))) - set(proto)},
        "missing_status": {i: run.room.followers[i].tally.status
                           for i in set(range(len(run.room.followers))) - set(proto)},
        "runs": len(runs),
        "elsewhere_after_arriving": sorted(again),
        "left": sorted({e[1] for e in after if e[0] == "left"}),
        "errors": [e[5] for e in after if e[0] == "error"],
        "following": run.presenter.following(),
    }  # fmt: skip


def _at(page) -> str:
    """Where a browser follower is now (a step it did not show: its URL says where it is)."""
    with contextlib.suppress(PlaywrightError):
        return canon(page.url)
    return "unreadable"


def show_step(row: dict, run: Run) -> None:
    if run.room is None:
        print(
            f"  {row['step']:>2} {row['move']:<24} {row['url'][:60]:<60} "
            f"shown {row['presenter_s'] or float('nan'):.2f} s",
            flush=True,
        )
        return
    lat = list(row["protocol_latency_s"].values())
    blat = list(row["browser_latency_s"].values())
    print(f"  {row['step']:>2} {row['move']:<24} {row['url'][:48]:<48} "
          f"protocol {len(lat)}/{len(run.room.followers)} max {max(lat, default=0):.2f} s, "
          f"browsers {len(blat)}/{len(run.browsers)} max {max(blat, default=0):.2f} s "
          f"(leader sees {row['following']})"
          + (f"; LEFT {row['left']}" if row["left"] else "")
          + (f"; ERRORS {len(row['errors'])}" if row["errors"] else ""), flush=True)  # fmt: skip


def take_steps(run: Run, n: int, label: str) -> list[dict]:
    """``n`` moves of the cycle from its start; fewer if the server stopped answering (no one
    finished ``WEDGED_AFTER`` steps in a row: the presenter did not settle, or no follower
    arrived)."""
    rows: list[dict] = []
    for k in range(n):
        rows.append(take_step(run, k + 1, CYCLE[k % len(CYCLE)]) | {"phase": label})
        dead = [r["shown_at"] is None or r.get("protocol_latency_s") == {} for r in rows]
        if len(dead) >= WEDGED_AFTER and all(dead[-WEDGED_AFTER:]):
            print(
                f"  WEDGED: {WEDGED_AFTER} steps in a row finished by no one; stopping after "
                f"{k + 1} of {n} steps",
                flush=True,
            )
            break
    return rows


def to_home(run: Run) -> None:
    """Back to Home (not timed), so that a phase's steps start where the cycle does."""
    p = run.presenter
    if canon(p.page.url) != "/":
        with contextlib.suppress(PlaywrightError):
            p.act("Home")
        p.steady("", time.time(), 30)


def join(run: Run, browser, url: str) -> dict:
    """The followers open the follow link (protocol ones spread over 3 s) and catch up with
    the presenter's page: how long until every one arrived."""
    t0 = time.time()
    run.room.start(url + "/?follow=1", spread_s=3.0)
    for _ in range(run.args.browsers):
        context = browser.new_context(viewport=VIEWPORT)
        context.add_init_script(script=SHOWN_LOG)
        page = context.new_page()
        page.goto(url + "/?follow=1", wait_until="commit")
        run.browsers.append(page)
        run.browser_shown.append([])
    here = canon(run.presenter.page.url)
    proto, browsers = wait_arrivals(run, here, t0, run.args.join_timeout)
    run.cursor = len(run.room.events)
    out = {"url": here, "protocol_joined": len(proto),
           "browsers_joined": len(browsers),
           "protocol_join_s": sorted(round(t - t0, 2) for t in proto.values()),
           "browser_join_s": sorted(round(t - t0, 2) for t in browsers.values())}  # fmt: skip
    print(
        f"  joined: protocol {len(proto)}/{len(run.room.followers)}, browsers "
        f"{len(browsers)}/{len(run.browsers)} in {time.time() - t0:.1f} s",
        flush=True,
    )
    return out


def room_phases(run: Run, browser) -> dict:
    """Lead, warm up, the no-follower phases, the followers join, idle and step following,
    then the followers leave."""
    args, p = run.args, run.presenter
    out: dict = {}
    print("leading, and one cycle alone (warm-up, not timed):", flush=True)
    p.lead(run.base)
    out["warmup"] = take_steps(run, len(CYCLE), "warm-up")
    to_home(run)
    with Phase("idle, no followers", run):
        p.page.wait_for_timeout(args.idle * 1000)
    with Phase("stepping, no followers", run):
        out["baseline"] = take_steps(run, len(CYCLE), "no followers")
    to_home(run)
    run.room = ProtocolRoom(run.base, args.followers)
    out["sessions_before_join"] = metrics(run.base)
    with Phase("joining", run):
        out["join"] = join(run, browser, run.base)
    with Phase("idle, following", run):
        p.page.wait_for_timeout(args.idle * 1000)
    idle_events = run.room.events[run.cursor :]
    out["idle_left"] = sorted({e[1] for e in idle_events if e[0] == "left"})
    out["idle_runs"] = sum(e[0] == "arrived" for e in idle_events)
    run.cursor = len(run.room.events)
    with Phase("stepping, following", run):
        out["following"] = run.steps = take_steps(run, args.steps, "following")
    out["leader_count_end"] = p.following()
    out["sessions_end"] = metrics(run.base)
    out["browser_sidebars"] = [_sidebar_line(page) for page in run.browsers]
    out["browser_shown"] = run.browser_shown
    run.room.stop()
    for page in run.browsers:
        page.context.close()
    p.page.wait_for_timeout(6500)  # the room forgets a follower 5 s after its last poll
    out["leader_count_after_leaving"] = p.following()
    out["sessions_after_leaving"] = metrics(run.base)
    return out


def _sidebar_line(page) -> str:
    with contextlib.suppress(PlaywrightError):
        text = page.evaluate(SIDEBAR_TEXT)
        return next((line for line in text.splitlines() if "presenter" in line), "no room line")
    return "unreadable"


# ------------------------------------------------------------------ the summary


def cpu_summary(run: Run, n_followers: int) -> dict:
    """Server CPU seconds per follower per minute, idle and stepping, against the same
    phases without followers; and whether this machine was saturated."""
    ph = run.phases
    rate = {name: 60 * p["cpu_s"]["server"] / p["wall_s"] for name, p in ph.items()}
    idle = (rate["idle, following"] - rate["idle, no followers"]) / n_followers
    base, follow = ph["stepping, no followers"], ph["stepping, following"]
    steps_b, steps_f = len(CYCLE), max(1, len(run.steps))
    own = base["cpu_s"]["server"] * steps_f / steps_b  # the presenter's own steps
    extra_wall = max(0.0, follow["wall_s"] - base["wall_s"] * steps_f / steps_b)
    own += extra_wall * rate["idle, no followers"] / 60
    stepping = (follow["cpu_s"]["server"] - own) / n_followers / (follow["wall_s"] / 60)
    cores = os.cpu_count() or 1
    busy = {name: {k: v for k, v in p["cores_busy"].items()} for name, p in ph.items()}
    ours = {name: b.get("server", 0) + b.get("bench", 0) + b.get("chromium", 0)
            + b.get("driver", 0) for name, b in busy.items()}  # fmt: skip
    saturated = {name: ours[name] >= 0.85 * cores or busy[name].get("machine", 0) >= 0.9 * cores
                 for name in ph}  # fmt: skip
    return {
        "server_cpu_s_per_min": rate,
        "per_follower_per_min_idle": idle,
        "per_follower_per_min_stepping": stepping,
        "cores": cores,
        "cores_busy": busy,
        "ours_cores_busy": ours,
        "saturated": saturated,
        "machine_saturated": any(saturated[n] for n in ("idle, following", "stepping, following")),
    }


def server_log_problems(log_text: str) -> dict:
    lines = log_text.splitlines()
    bad = [ln for ln in lines if re.search(r"Traceback|Uncaught|Exception|\bError\b", ln)]
    return {"lines": len(bad), "first": bad[:10]}


def summarize(run: Run, room: dict, budget: int) -> dict:
    rows, n, k = room["following"], run.args.followers, run.args.browsers
    lat = [x for r in rows for x in r["protocol_latency_s"].values()]
    blat = [x for r in rows for x in r["browser_latency_s"].values()]
    # the same from the presenter's click (its own browser can be slow to draw the step)
    clat = [x + r["presenter_s"] for r in rows if r["presenter_s"] is not None
            for x in r["protocol_latency_s"].values()]  # fmt: skip
    tallies = [f.tally for f in run.room.followers]
    minutes = (run.room.stopped - run.room.started) / 60  # the followers' whole stay
    return {
        "followers": n, "browsers": k, "steps": run.args.steps, "devices": run.args.devices,
        "server_env": run.args.server_env, "steps_taken": len(rows),
        "wedged": len(rows) < run.args.steps,
        "server_unanswered_metrics": [when for when in ("end", "after_leaving")
                                      if "error" in room[f"sessions_{when}"]],
        "protocol_latency_median_s": pct(lat, 50), "protocol_latency_p95_s": pct(lat, 95),
        "protocol_latency_max_s": max(lat, default=None),
        "protocol_from_click_median_s": pct(clat, 50),
        "protocol_from_click_p95_s": pct(clat, 95),
        "browser_latency_median_s": pct(blat, 50), "browser_latency_p95_s": pct(blat, 95),
        "browser_latency_max_s": max(blat, default=None),
        "latency_median_s": pct(lat + blat, 50), "latency_p95_s": pct(lat + blat, 95),
        "protocol_arrived": len(lat), "protocol_expected": n * len(rows),
        "browser_arrived": len(blat), "browser_expected": k * len(rows),
        "presenter_click_to_shown_median_s": pct(
            [r["presenter_s"] for r in rows if r["presenter_s"] is not None], 50),
        "presenter_not_settled": sum(r["shown_at"] is None for r in rows),
        "self_leaves": sum(t.left for t in tallies)
        + sum(LEFT in line for line in room["browser_sidebars"]),
        "followers_that_left": sorted({i for r in rows for i in r["left"]}
                                      | set(room["idle_left"])),
        "browser_sidebars_end": room["browser_sidebars"],
        "errors_seen": sum(len(t.errors) for t in tallies),
        "error_texts": sorted({e for t in tallies for e in t.errors})[:10],
        "elsewhere_after_arriving": sum(len(r["elsewhere_after_arriving"]) for r in rows),
        "whole_runs_while_idle": room["idle_runs"],
        "dropped_connections": sum(t.dropped for t in tallies),
        "protocol_status_end": dict(_count(t.status for t in tallies)),
        "whole_runs_per_follower_step": sum(r["runs"] for r in rows) / max(1, n * len(rows)),
        "polls_per_follower_per_min": sum(t.polls for t in tallies) / max(1, n) / minutes,
        "kib_in_per_follower_per_min": sum(t.bytes_in for t in tallies) / 1024 / max(1, n)
        / minutes,
        "ref_hash": {"hits": sum(t.ref_hits for t in tallies),
                     "misses": sum(t.ref_misses for t in tallies)},
        "leader_count_during": sorted({r["following"] for r in rows}, key=str),
        "leader_count_end": room["leader_count_end"],
        "leader_count_after_leaving": room["leader_count_after_leaving"],
        "sessions": {"before_join": room["sessions_before_join"], "end": room["sessions_end"],
                     "after_leaving": room["sessions_after_leaving"]},
        "join": room["join"],
        "peak_rss_gib": run.rss.peak() / 2**30,
        "peak_rss_following_gib": run.phases["stepping, following"]["peak_rss"] / 2**30,
        "budget_gib": budget / 2**30,
        "peak_rss_over_budget": run.rss.peak() / budget,
        "cpu": cpu_summary(run, n + k),
    }  # fmt: skip


def goals_met(s: dict, args) -> bool:
    """The room's goals (issue 65): every follower-step arrived, and the follow latency over
    all of them, protocol and browsers, within ``--goal-median`` and ``--goal-p95``."""
    median, p95 = s["latency_median_s"], s["latency_p95_s"]
    met = (median is not None and median <= args.goal_median and p95 <= args.goal_p95
           and s["protocol_arrived"] == s["protocol_expected"]
           and s["browser_arrived"] == s["browser_expected"])  # fmt: skip
    print(
        f"goals: every follower-step arrives, median <= {args.goal_median} s, p95 <= "
        f"{args.goal_p95} s over all of them: median "
        + ("n/a" if median is None else f"{median:.2f} s, p95 {p95:.2f} s")
        + (" MET" if met else " NOT MET")
    )
    return met


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def show(s: dict) -> None:
    def ms(x):
        return "n/a" if x is None else f"{x * 1e3:.0f} ms"

    c = s["cpu"]
    print(
        f"\n{s['followers']} protocol followers + {s['browsers']} Chromium followers, "
        f"{s['steps_taken']} of {s['steps']} steps, --devices {s['devices']}"
        + (f", server env {s['server_env']}" if s["server_env"] else "")
    )
    if s["wedged"] or s["server_unanswered_metrics"]:
        print(
            f"SERVER STOPPED ANSWERING: steps taken {s['steps_taken']} of {s['steps']}; "
            f"metrics unanswered at {s['server_unanswered_metrics']}"
        )
    print(
        f"follow latency, protocol: median {ms(s['protocol_latency_median_s'])}, p95 "
        f"{ms(s['protocol_latency_p95_s'])}, max {ms(s['protocol_latency_max_s'])}; arrived "
        f"{s['protocol_arrived']}/{s['protocol_expected']} (from the presenter's click: "
        f"median {ms(s['protocol_from_click_median_s'])}, p95 "
        f"{ms(s['protocol_from_click_p95_s'])})"
    )
    print(
        f"follow latency, browsers: median {ms(s['browser_latency_median_s'])}, p95 "
        f"{ms(s['browser_latency_p95_s'])}, max {ms(s['browser_latency_max_s'])}; arrived "
        f"{s['browser_arrived']}/{s['browser_expected']}"
    )
    print(
        f"self-leaves: {s['self_leaves']}; errors shown: {s['errors_seen']}; dropped "
        f"connections: {s['dropped_connections']}; runs elsewhere after arriving: "
        f"{s['elsewhere_after_arriving']}; server log problem lines: {s['server_log']['lines']}"
    )
    print(
        f"whole runs per follower-step: {s['whole_runs_per_follower_step']:.2f} (one: the page "
        f"it lands on); polls per follower per minute: {s['polls_per_follower_per_min']:.0f}"
    )
    print(
        f"leader's count: during {s['leader_count_during']}, end {s['leader_count_end']}, "
        f"after leaving {s['leader_count_after_leaving']}; server sessions (active): end "
        f"{s['sessions']['end'].get('active')}, after leaving "
        f"{s['sessions']['after_leaving'].get('active')}"
    )
    print(
        f"server peak RSS {s['peak_rss_gib']:.2f} GiB of a {s['budget_gib']:.2f} GiB budget "
        f"({s['peak_rss_over_budget']:.2f}x)"
    )
    print("server CPU s per minute: " + ", ".join(f"{k} {v:.1f}"
          for k, v in c["server_cpu_s_per_min"].items()))  # fmt: skip
    print(
        f"server CPU s per follower per minute: idle {c['per_follower_per_min_idle']:.2f}, "
        f"stepping {c['per_follower_per_min_stepping']:.2f}"
    )
    for name, busy in c["cores_busy"].items():
        print(
            f"  cores busy, {name}: "
            + ", ".join(f"{k} {v:.2f}" for k, v in busy.items())
            + f" (of {c['cores']})"
            + ("  SATURATED" if c["saturated"][name] else "")
        )
    if c["machine_saturated"]:
        print(
            "MACHINE SATURATED while following: these figures measure this machine as much "
            "as the server"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--followers", type=int, default=30, help="protocol followers")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--browsers", type=int, default=2, help="Chromium followers")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--max-bytes", default="2G")
    ap.add_argument("--idle", type=float, default=15.0, help="seconds of each idle phase")
    ap.add_argument("--dwell", type=float, default=1.0, help="seconds on a step after arrivals")
    ap.add_argument("--step-timeout", type=float, default=30.0)
    ap.add_argument("--join-timeout", type=float, default=120.0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--goal-median",
        type=float,
        default=1.0,
        help="seconds: the follow latency's median over every follower-step",
    )
    ap.add_argument("--goal-p95", type=float, default=2.0, help="seconds: and its p95")
    ap.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the server, e.g. "
                    "STREAMLIT_RUNNER_POST_SCRIPT_GC=false (repeatable)")  # fmt: skip
    args = ap.parse_args()
    server_env = SERVER_ENV | dict(e.split("=", 1) for e in args.server_env)
    budget = valueparse.parse_bytes(args.max_bytes, "--max-bytes")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop what was started
    load_before = os.getloadavg()
    proc, base = start_server(["--devices", str(args.devices), "--max-bytes", args.max_bytes,
                               "--presenter-key", KEY], env=server_env)  # fmt: skip
    rss = RssSampler(proc.pid)
    rss.start()
    run = Run(args, proc, base, rss)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + AWAKE)
            try:
                context = browser.new_context(viewport=VIEWPORT)
                context.add_init_script(script=SHOWN_LOG)
                run.presenter = Presenter(context.new_page())
                room = room_phases(run, browser)
            finally:
                if run.room is not None:
                    run.room.stop()
                browser.close()
        alive = proc.poll() is None
    finally:
        rss.stop.set()
        rss.join(timeout=2)
        stop_server(proc)
    log = Path(proc.log.name)  # type: ignore[attr-defined]
    summary = summarize(run, room, budget)
    summary |= {"server_alive_at_end": alive, "server_log_file": os.path.relpath(log),
                "server_log": server_log_problems(log.read_text(errors="replace")),
                "load_average_before_after": [load_before, os.getloadavg()]}  # fmt: skip
    show(summary)
    goals = summary["goals_met"] = goals_met(summary, args)
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "phases": run.phases, **room},
                                   indent=2, default=str))  # fmt: skip
    print(f"load average before {load_before}, after {os.getloadavg()}")
    print(f"written to {os.path.relpath(args.out)}")
    ok = (goals and summary["protocol_arrived"] == summary["protocol_expected"]
          and summary["browser_arrived"] == summary["browser_expected"]
          and not summary["self_leaves"] and not summary["errors_seen"] and alive
          and not summary["wedged"])  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
