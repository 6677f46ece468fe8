"""Hostile share links against a real server: hundreds of crafted URLs over every page and every
query key a page reads, opened in headless Chromium. After EACH link: the server still answers
its health check, the page shows no exception or traceback, and nothing from the URL became an
external image, link, script handler or Markdown/LaTeX markup on the page.

Every failure is collected and reported at the end (one run lists every broken link). A link that
kills the server is identified by replaying the links that were in flight, one at a time, on a
restarted server. Links open in a few browser tabs at once: each load costs Chromium about two
CPU-seconds, so tabs overlap the waits. A summary (links opened, server deaths, exceptions,
seconds per link) is printed and written to artifacts/hostile-links-*.txt. On the 8-device
server the suite opens a quarter of the links, a different quarter as the commits go
(harness/sweeps.py); ``benchmarks/sweeps.py`` opens them all.

Query keys covered: every key each page reads, from its registry entry
(``PageInfo.keys``: the fields of the schemas it reads its link through; a test
of tests/app/test_page_registry.py checks that a page reads no other), and app.py's
``present`` and ``on`` (every page).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import urllib.parse
import urllib.request
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from playwright.sync_api import expect

from harness import MAIN, ROOT, start_server, stclient, stop_server, sweeps
from pmapviz.app.page_registry import APP_KEYS, PAGES
from pmapviz.core.planning import scenarios
from pmapviz.core.ui import shell

pytestmark = pytest.mark.e2e

TABS = int(os.environ.get("PMAPVIZ_LINK_TABS", "3"))
# sessions at once over the protocol on the 8-device server, as many as the browser's tabs: a
# link alone left the server idle a third of the time (63 CPU-s in 104 s for 743 links; three
# at once: 69 s)
SESSIONS = int(os.environ.get("PMAPVIZ_LINK_SESSIONS", "3"))
LINK_TIMEOUT_S = 60.0
QUIET_S = 0.25
ENV = {"PMAPVIZ_DEVICES": "", "PMAPVIZ_PLATFORM": "", "PMAPVIZ_MAX_BYTES": ""}

# ------------------------------------------------------------------ the links

PAGE_KEYS: dict[str, list[str]] = {
    "": list(APP_KEYS),  # home (the default page, "/"); app.py reads them on every page
    # every other page: its own keys, or the app's where it reads none of its own
    **{p.url_path: list(p.keys() or APP_KEYS) for p in PAGES[1:]},
}
# the context a key needs before the page reads it at all
COLLECTIVE_CONTEXT = {"pairs": {"c": "ppermute", "p": "custom"}, "g": {"c": "psum"}}
# the pages that read the explorer's settings, and what makes them use them
EXPLORER_PAGES = {"explorer": {}, "live": {}, "timing": {}, "compiled": {"src": "explorer"}}
KEY_CONTEXT = {
    **{
        (page, key): context
        for page in ("collectives", "compiled")
        for key, context in COLLECTIVE_CONTEXT.items()
    },
    **{
        (page, key): {**src, **({"fn": "expr"} if key in ("args", "body") else {})}
        for page, src in EXPLORER_PAGES.items()
        for key in scenarios.KEYS
        if src or key in ("args", "body")
    },
}

# argument slots past the second are read by the same code as the first two: alone, each of
# their keys is tried on the explorer only (every key of every page still meets the markup)
LATER_SLOTS = {f"{c}{k}" for k in range(2, scenarios.MAX_ARGS) for c in "sda"}


def tried_alone(page: str, key: str) -> bool:
    """Whether ``key`` gets links of its own on ``page`` (else: on the explorer's). The later
    argument slots, and the explorer's keys on the pages that read them through the explorer's
    own schema (scenarios.schema: Live outputs, the Timing lab, the Compiled page), are tried
    alone on the explorer only; on every page, every key still meets each value class of
    EVERY_KEY at once."""
    if page == "explorer":
        return True
    return key not in LATER_SLOTS and not (page in EXPLORER_PAGES and key in scenarios.KEYS)


NON_ASCII_DIGITS = ["¹", "١", "５"]  # plus '²' for every key
BEYOND_INT64 = [str(2**63), str(10**30), str(-(2**64))]
MARKUP = [
    "![x](http://example.invalid/a.png)",
    "[click](http://example.invalid)",
    "<img src=x onerror=alert(1)>",
    "**bold**",
    "$x$",
]
OTHER = ["", "9" * 10_000, "nan", "inf", "-1", " \t 2 \n", "\x00", "2\x00"]
# what every key of a page holds at once, one link a value
EVERY_KEY = ["²", BEYOND_INT64[0], *MARKUP, *OTHER]


@dataclass(frozen=True)
class Link:
    path: str  # "/explorer?..."
    what: str  # a short description for the report


def _link(page: str, params: list[tuple[str, str]] | dict[str, str], what: str) -> Link:
    pairs = list(params.items()) if isinstance(params, dict) else list(params)
    query = urlencode(pairs, quote_via=quote)
    return Link(f"/{page}" + (f"?{query}" if query else ""), what)


def _short(value: str) -> str:
    return repr(value) if len(value) <= 40 else f"{value[:12]!r}... ({len(value):,} chars)"


IN_CODE = "in f's code: "


def code_carried_links() -> list[Link]:
    """Markup carried inside valid code of your own f, where it becomes a dict key of f's
    output, a key f indexes with, or an out_axes mismatch: the texts that name those keys."""
    own = {"fn": "expr", "args": "x", "s0": "4,3", "a0": "0"}
    links = []
    for value in (*MARKUP[:3], "www.example.invalid"):
        key = repr(value)
        for page, params in (
            ("explorer", {**own, "body": f"{{{key}: x, 'b': x}}", "out": "0"}),
            ("explorer", {**own, "body": f"{{{key}: x}}", "out": "{'b': 0}"}),
            ("explorer", {**own, "body": f"x[{key}]", "out": "0"}),
            ("live", {**own, "body": f"{{{key}: x}}", "out": "0"}),
            ("compiled", {**own, "src": "explorer", "body": f"{{{key}: x}}", "out": "0"}),
        ):
            links.append(_link(page, params, IN_CODE + _short(value)))
    return links


def hostile_links(n: int) -> list[Link]:
    """Deterministic: every key of every page alone (the explorer's keys on the explorer)
    with '²', another non-ASCII digit, an integer beyond int64 and a Markdown/HTML or 'other'
    value (rotating); every page with ALL its keys set to '²', to an integer beyond int64, and
    to each Markdown/HTML and each 'other' value (empty, 10k chars, nan, inf, negative,
    whitespace, null bytes); then shapes whose element counts overflow, repeated keys, unknown
    keys, and every tour step."""
    links = []
    i = 0
    for page, keys in PAGE_KEYS.items():
        for key in keys:
            if not tried_alone(page, key):
                continue
            for value in (
                "²",
                NON_ASCII_DIGITS[i % 3],
                BEYOND_INT64[i % 3],
                (MARKUP + OTHER)[i % 13],
            ):
                params = {**KEY_CONTEXT.get((page, key), {}), key: value}
                links.append(_link(page, params, f"{key}={_short(value)}"))
            i += 1
    for page, keys in PAGE_KEYS.items():
        every = list(dict.fromkeys([*keys, "present"])) if page else keys
        for value in EVERY_KEY:
            # a URL of 70 KB is refused by the browser or server before the app sees it: the
            # 10k-character value goes to three keys per link
            step = 3 if len(value) > 1000 else len(every)
            for k in range(0, len(every), step):
                params = {
                    **KEY_CONTEXT.get((page, "g"), {}),
                    **dict.fromkeys(every[k : k + step], value),
                }
                links.append(_link(page, params, f"every key={_short(value)}"))
    overflow = [
        {"fn": "matmul", "s0": f"{n},1073741824,1", "s1": "1,1073741824", "a0": "0", "a1": "None"},
        {"fn": "matmul", "s0": f"{n},4294967296,1", "s1": "1,4294967296", "a0": "0", "a1": "None"},
        {"fn": "double", "s0": f"{2**40},{2**40}", "a0": "0"},
        {"fn": "double", "s0": f"4,{2**62}", "a0": "0"},
        {"fn": "add", "s0": f"{n},1,{2**31}", "s1": f"{n},{2**31},1", "a0": "0", "a1": "0"},
        {"fn": "batched_dot", "s0": f"{n},{2**59},3", "s1": f"{n},{2**59},3"},
    ]
    for page in ("explorer", "live", "timing"):
        for params in overflow:
            links.append(_link(page, params, "overflowing shapes " + params["s0"]))
    links += code_carried_links()
    links += [
        _link("collectives", [("n", "2"), ("n", "²")], "repeated n"),
        _link("collectives", [("m", "²"), ("m", "3")], "repeated m"),
        _link("training", [("batch", "64"), ("batch", str(2**63))], "repeated batch"),
        _link("training", [("steps", str(10**30)), ("steps", str(2**64))], "repeated steps"),
        _link("tour", [("step", "2"), ("step", "²")], "repeated step"),
        _link(
            "explorer",
            [("fn", "add"), ("fn", "matmul"), ("s0", "2"), ("s0", "²")],
            "repeated fn, s0",
        ),
        _link(
            "timing",
            [("sizes", "64"), ("sizes", "²"), ("ks", "1"), ("ks", "١")],
            "repeated sizes, ks",
        ),
        _link("cluster", [("p", "2"), ("p", str(10**30))], "repeated p"),
        _link("", {"zzz": "1", "__proto__": "x", "constructor": "y"}, "unknown keys"),
        _link("explorer", {"s9": "1,2", "a7": "3", "d5": "float32", "fn2": "x"}, "unknown keys"),
        _link("live", {"s2": f"{n},8", "a2": "0", "d2": "float64"}, "unknown keys"),
        _link("timing", {"sizes_dot": "64", "impls": "pmap,evil,,"}, "unknown keys"),
        _link("collectives", {"c": "psum", "unknown": "\x00"}, "unknown keys"),
        _link("timing", {"sizes": f"64,{2**63},²,-64", "ks": f"1,{10**30},１"}, "list values"),
        _link("collectives", {"c": "psum", "g": f"0 1 | {2**63} ²"}, "groups beyond int64"),
        _link(
            "collectives",
            {"c": "ppermute", "p": "custom", "pairs": f"0->{2**63}, ²->1"},
            "pairs beyond int64",
        ),
    ]
    links += [_link("tour", {"step": str(s)}, f"step={s}") for s in range(1, 11)]
    return links + tree_links(n)


def tree_links(n: int) -> list[Link]:
    """Your own f with dict / tuple arguments: prefixes that do not fit, leaves too large,
    trees too deep or too long, hostile expressions, and all of it planned for 4,096."""
    f = {"fn": "expr", "args": "x, p", "body": "jnp.tanh(x @ p['w'] + p['b'])", "s0": f"{n},4,5"}
    trees = [
        ({"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "None"}, "replicated dict"),
        ({"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "{'w': None}"}, "prefix missing a key"),
        ({"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "{'w': None, 'b': 0}"}, "leaf too small"),
        ({"s1": f"{{'w': (5, {2**62}), 'b': ({2**62},)}}", "a1": "None"}, "leaves overflow"),
        ({"s1": f"{{'w': (5, 2), 'b': ({2**63},)}}", "a1": "None"}, "leaf beyond int64"),
        ({"s1": "(" * 40 + "2" + ")" * 40, "a1": "None"}, "deep tree"),
        ({"s1": "{" * 300, "a1": "{" * 300}, "unclosed braces"),
        ({"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "(" + "0, " * 200 + ")"}, "long prefix"),
        ({"s1": "{'__class__': (5, 2)}", "a1": "None", "body": "p['__class__']"}, "dunder key"),
        ({"s1": "{'w': (5, 2)}", "a1": "None", "body": "x.__class__.__bases__"}, "escape"),
        ({"s1": "{'w': (5, 2)}", "a1": "None", "body": "x ** 10**100"}, "huge power"),
        ({"s1": "((5, 2), (2,))", "a1": "(None, 0)", "body": "x @ p[0] + p[1]"}, "tuple arg"),
        (
            {"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "None", "out": "{'s': 0}"},
            "out_axes prefix of an array",
        ),
        ({"s1": "{'w': (5, 2), 'b': (2,)}", "a1": "None", "pn": "4096"}, "4,096 devices"),
    ]
    return [
        _link(page, {**f, **params}, f"tree: {what}")
        for page in ("explorer", "live")
        for params, what in trees
    ]


def small_server_links(n: int) -> list[Link]:
    """For a server with few devices and a small budget: every tour step, the overflowing
    shapes, and the numeric keys that depend on the device count."""
    kinds = ("step=", "overflowing", "repeated", "list values")
    picked = [lk for lk in hostile_links(n) if lk.what.startswith(kinds)]
    picked += [
        _link("collectives", {"n": str(n), "m": "64"}, "n = devices"),
        _link("collectives", {"n": str(n + 1)}, "n = devices + 1"),
        _link(
            "timing",
            {"ks": ",".join(map(str, range(1, n + 1))), "sizes": "64,1024"},
            "every device count",
        ),
        _link("training", {"k": str(n), "batch": str(n * 7 + 1)}, "batch not divisible"),
        _link("live", {"fn": "double", "s0": f"{n},1250000,3"}, "10M elements"),
        _link(
            "live",
            {"fn": "batched_dot", "s0": f"{n},{10**7 // n},3", "s1": f"{n},{10**7 // n},3"},
            "10M pairs, over a small budget",
        ),
    ]
    return picked


# ------------------------------------------------------------------ running them

_CHECK = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const text = (app || document.body).innerText || '';
    const injected = [];
    for (const el of document.querySelectorAll('*')) {
        for (const attr of el.getAttributeNames()) {
            const v = el.getAttribute(attr) || '';
            const tag = `<${el.tagName} ${attr}=${v.slice(0, 60)}>`;
            const fetches = /^(src|href|srcset|xlink:href|data|action|formaction|poster|style)$/i;
            if ((fetches.test(attr) && /example\\.invalid/i.test(v)) || /^on/i.test(attr))
                injected.push(tag);
        }
        if (el.tagName === 'IMG' && el.getAttribute('src') === 'x') injected.push('<img src=x>');
    }
    for (const el of document.querySelectorAll('strong, b, em, i')) {
        if (el.textContent.trim() === 'bold' && !el.closest('[data-testid="stCode"]'))
            injected.push('**bold** rendered as <' + el.tagName.toLowerCase() + '>');
    }
    for (const el of document.querySelectorAll('annotation')) {
        if (el.textContent.trim() === 'x') injected.push('$x$ rendered as LaTeX');
    }
    return {
        exceptions: document.querySelectorAll('[data-testid="stException"]').length,
        traceback: text.includes('Traceback') || text.includes('File "/'),
        lastResort: text.includes('ran into an unexpected problem'),
        injected: [...new Set(injected)],
        excerpt: [...document.querySelectorAll('[data-testid="stException"]')]
            .map(e => e.innerText.split('\\n').filter(l => l.trim()).slice(0, 2).join(' | '))
            .join(' || ').slice(0, 300),
    };
}"""


# harness._SETTLED, but an exception also counts as finished: a page that raises before its
# title has no <h1> and would otherwise wait out the whole timeout
_SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !!document.querySelector('[data-testid="stMain"] h1, [data-testid="stException"]')
        && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]')
        && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
               .every(c => c.querySelector('.main-svg'));
}"""


_STATE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return `script ${app ? app.getAttribute('data-test-script-state') : 'no app'}, `
        + `h1 ${!!document.querySelector('[data-testid="stMain"] h1')}, `
        + `stale ${document.querySelectorAll('[data-stale="true"]').length}, `
        + `url ${location.href.length} chars`;
}"""


@dataclass
class Failure:
    link: Link
    symptom: str


@dataclass
class Report:
    opened: int = 0
    deaths: int = 0
    exceptions: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


class ServerDied(Exception):
    pass


class LinkRunner:
    """Opens links on a server of its own, restarting it when a link kills it."""

    def __init__(self, browser, server_args: list[str], server: tuple | None = None):
        """``server``: (process, url) of a running server started with ``server_args``, to
        use instead of a new one (it is stopped by close() all the same); or (None, url), a
        server it does not own (the e2e session's): never stopped, nor restarted when a link
        kills it (the links left are then not opened)."""
        self.browser = browser
        self.args = server_args
        self.proc, self.url = server or start_server(server_args, env=ENV)
        self.report = Report()
        self.context = browser.new_context(viewport={"width": 1200, "height": 800})
        self.pages = []
        self.dialogs: dict[int, list[str]] = {}

    def close(self) -> None:
        self.context.close()
        if self.proc is not None:
            stop_server(self.proc)

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def _page(self, k: int):
        while len(self.pages) <= k:
            p = self.context.new_page()
            idx = len(self.pages)
            self.dialogs[idx] = []

            def on_dialog(d, idx=idx):
                self.dialogs[idx].append(f"{d.type}({d.message[:40]!r})")
                d.dismiss()

            p.on("dialog", on_dialog)
            self.pages.append(p)
        return self.pages[k]

    def healthy(self) -> bool:
        if self._exited():
            return False
        try:
            with urllib.request.urlopen(self.url + "/_stcore/health", timeout=10) as r:
                return r.status == 200
        except OSError:
            return False

    def _log_tail(self) -> str:
        port = self.url.rsplit(":", 1)[1]
        log = ROOT / "artifacts" / f"server-{port}.log"
        try:
            lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        for words in (("what()", "overflow", "abort", "fatal"), ("error",)):
            keep = [ln for ln in lines if any(w in ln.lower() for w in words)]
            if keep:
                return keep[-1].strip()[:300]
        return lines[-1].strip()[:300] if lines else ""

    def _restart(self) -> None:
        for p in self.pages:
            with contextlib.suppress(Exception):  # a page of a dead server
                p.goto("about:blank")
        stop_server(self.proc)
        self.proc, self.url = start_server(self.args, env=ENV)

    def _check(self, k: int, link: Link, settled: bool, started: float) -> None:
        page = self.pages[k]
        r = self.report
        r.opened += 1
        r.seconds.append(time.perf_counter() - started)
        if not self.healthy():
            raise ServerDied(link.path)
        try:
            got = page.evaluate(_CHECK)
        except Exception as err:  # noqa: BLE001
            r.failures.append(Failure(link, f"page could not be inspected: {err}"[:200]))
            return
        if not settled:
            r.failures.append(
                Failure(
                    link, f"did not finish within {LINK_TIMEOUT_S:.0f} s ({page.evaluate(_STATE)})"
                )
            )
        if got["exceptions"] or got["traceback"]:
            r.exceptions += 1
            r.failures.append(
                Failure(link, f"exception on the page: {got['excerpt'] or 'a traceback'}")
            )
        if got["lastResort"]:  # app.py caught a crash: no link may cause one
            r.failures.append(Failure(link, "app.py's last resort caught an error"))
        if got["injected"]:
            r.failures.append(Failure(link, "injected from the URL: " + ", ".join(got["injected"])))
        if self.dialogs[k]:
            r.failures.append(Failure(link, "a script ran: " + ", ".join(self.dialogs[k])))
            self.dialogs[k].clear()

    def _batch(self, queue: deque, tabs: int) -> list[Link]:
        """Open the queue's links, `tabs` at a time. Returns [] when done, or the links that were
        in flight when the server died (the rest stay queued)."""
        slots: list[dict | None] = [None] * tabs
        while queue or any(slots):
            for k in range(tabs):
                page = self._page(k)
                s = slots[k]
                if s is None:
                    if not queue:
                        continue
                    link = queue.popleft()
                    s = slots[k] = {"link": link, "t0": time.perf_counter(), "since": None}
                    try:
                        page.goto(self.url + link.path, wait_until="commit", timeout=30_000)
                    except Exception as err:  # noqa: BLE001 (checked below, like any other link)
                        s["t0"] -= LINK_TIMEOUT_S
                        s["goto"] = str(err).splitlines()[0][:120]
                    continue
                now = time.perf_counter()
                try:
                    ok = page.evaluate(_SETTLED)
                except Exception:  # noqa: BLE001 (navigating)
                    ok = False
                if ok and s["since"] is None:
                    s["since"] = now
                elif not ok:
                    s["since"] = None
                done = ok and now - s["since"] >= QUIET_S
                if done or now - s["t0"] > LINK_TIMEOUT_S:
                    if "goto" in s:
                        self.report.failures.append(Failure(s["link"], "not opened: " + s["goto"]))
                    try:
                        self._check(k, s["link"], done or "goto" in s, s["t0"])
                    except ServerDied:
                        return [x["link"] for x in slots if x is not None]
                    slots[k] = None
            if self._exited():
                return [x["link"] for x in slots if x is not None]
            time.sleep(0.02)
        return []

    def run(self, links: list[Link], tabs: int = TABS) -> Report:
        queue = deque(links)
        while queue:
            suspects = self._batch(queue, tabs)
            if not suspects:
                break
            if self.proc is None:  # not ours to restart: what was in flight is reported
                self.report.deaths += 1
                self.report.failures += [
                    Failure(link, "the server died (one of the links in flight)")
                    for link in suspects
                ]
                break
            # replay what was in flight one at a time on a fresh server, to find the killer
            self._restart()
            for link in suspects:
                if self._batch(deque([link]), 1):
                    self.report.deaths += 1
                    self.report.failures.append(
                        Failure(link, f"the server died ({self._log_tail() or 'no log line'})")
                    )
                    self._restart()
        return self.report


# ------------------------------------------------------------------ over the protocol
MARKUP_SIGNS = ("example.invalid", "**bold**", "$x$", "<img", "onerror")
TEXT_KINDS = ("markdown", "alert", "heading", "caption", "text", "toast")


def protocol_problems(page: stclient.Page, link: Link) -> list[str]:
    """What a browser would show wrongly for this link, from the elements the server sent:
    an exception or traceback, or user markup outside inline code (it would render)."""
    found = []
    if not page.finished:
        found.append(f"did not finish within {LINK_TIMEOUT_S:.0f} s")
    if page.exceptions:
        found.append("exception on the page: " + page.exceptions[0][:200])
    for text in page.texts(*TEXT_KINDS):
        if "Traceback" in text or 'File "/' in text:
            found.append("a traceback in the text: " + text[:120])
        if text == shell.UNEXPECTED:  # app.py caught a crash: no link may cause one
            found.append("app.py's last resort caught an error")
        loose = stclient.outside_code(text)
        sent = urllib.parse.unquote(link.path)
        found += [
            f"user markup {sign!r} outside code: {text[:120]}"
            for sign in MARKUP_SIGNS
            if sign in loose and sign in sent
        ]
    return found


class ProtocolRunner(LinkRunner):
    """Opens each link as a new session over the browser's own websocket protocol (no
    rendering): the server, the page's script and every element are real. Checks health after
    each link and restarts the server if a link kills it."""

    def __init__(self, server_args: list[str]):
        self.args = server_args
        self.proc, self.url = start_server(server_args, env=ENV)
        self.report = Report()
        self.pages = []

    def close(self) -> None:
        stop_server(self.proc)

    def _restart(self) -> None:
        stop_server(self.proc)
        self.proc, self.url = start_server(self.args, env=ENV)

    def _open(self, link: Link) -> tuple[list[str], float]:
        """What is wrong with the page ``link`` opens in a new session, and its seconds."""
        t0 = time.perf_counter()
        try:
            page = stclient.open_link(self.url, link.path, timeout=LINK_TIMEOUT_S)
            problems = protocol_problems(page, link)
        except Exception as err:  # noqa: BLE001  (a dropped connection: checked below)
            problems = [f"the connection failed: {str(err).splitlines()[0][:120]}"]
        return problems, time.perf_counter() - t0

    def _record(self, link: Link, problems: list[str], seconds: float) -> None:
        r = self.report
        r.opened += 1
        r.seconds.append(seconds)
        if problems is None:  # the server died under this link
            r.deaths += 1
            r.failures.append(Failure(link, f"the server died ({self._log_tail()})"))
            self._restart()
            return
        r.exceptions += any(p.startswith("exception") for p in problems)
        r.failures += [Failure(link, p) for p in problems]

    def run(self, links: list[Link], tabs: int = 1) -> Report:
        """``tabs`` sessions at a time, in waves: the server's health is checked after each
        wave; a wave after which it is dead is replayed one link at a time on a restarted
        server, health checked after each, so the link that kills it is named."""
        queue, alone = deque(links), deque()
        with ThreadPoolExecutor(tabs) as pool:
            while queue or alone:
                if alone:
                    wave = [alone.popleft()]
                else:
                    wave = [queue.popleft() for _ in range(min(tabs, len(queue)))]
                opened = list(pool.map(self._open, wave))
                if len(wave) > 1 and not self.healthy():  # one of them killed it: each alone
                    self._restart()
                    alone.extend(wave)
                    continue
                for link, (problems, seconds) in zip(wave, opened, strict=True):
                    self._record(link, problems if self.healthy() else None, seconds)
        return self.report


FETCHING = MARKUP[:3]  # the payloads that would fetch from example.invalid or run a handler


def browser_links() -> list[Link]:
    """Chromium's share, where the DOM itself shows whether anything rendered: every page with
    every key it reads holding the three fetching payloads at once (image, link, HTML with a
    handler). (The protocol test sends each payload on a link of its own in every key, and a
    rotating payload to each key alone; a page load costs Chromium about 1.5 CPU-s, so here
    they travel together. Your own f's code carrying them as the keys of its output is drawn in
    Chromium on every page that runs it by tests/e2e/test_text_fields_e2e.py's
    test_dict_keys_of_your_own_f_render_as_text_on_every_page_that_runs_it.)"""
    together = " ".join(FETCHING)
    links = []
    for page, keys in PAGE_KEYS.items():
        every = list(dict.fromkeys([*keys, "present"])) if page else keys
        params = {**KEY_CONTEXT.get((page, "g"), {}), **dict.fromkeys(every, together)}
        links.append(_link(page, params, f"every key={_short(together)}"))
    return links


def summarize(name: str, report: Report, wall: float, tabs: int = TABS) -> str:
    per = sum(report.seconds) / max(1, len(report.seconds))
    each = wall / max(1, report.opened)
    head = (
        f"{name}: {report.opened} links opened in {wall:.0f} s ({each:.2f} s each with "
        f"{tabs} tabs; {per:.2f} s per link in its tab); server deaths "
        f"{report.deaths}; links with an exception {report.exceptions}; failures "
        f"{len(report.failures)}"
    )
    lines = [head] + [
        f"  {f.link.path[:160]}  [{f.link.what}]: {f.symptom}" for f in report.failures
    ]
    text = "\n".join(lines)
    out = ROOT / "artifacts" / f"hostile-links-{name}.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")
    print(text)
    return text


def test_link_list_is_large_deterministic_and_covers_every_key():
    links = hostile_links(8)
    assert len(links) >= 300
    assert links == hostile_links(8)
    for page, keys in PAGE_KEYS.items():
        for key in keys:
            has = [lk.path for lk in links if lk.path.startswith(f"/{page}?")]
            for value in EVERY_KEY:
                assert any(f"{key}={quote(value, safe='')}" in h for h in has), (page, key, value)
            alone = [lk.path for lk in links if lk.what.startswith(f"{key}=")]
            owner = page if tried_alone(page, key) else "explorer"
            for values in (["²"], NON_ASCII_DIGITS, BEYOND_INT64):  # alone, on its own page
                assert any(
                    h.startswith(f"/{owner}?") and f"{key}={quote(v, safe='')}" in h
                    for v in values
                    for h in alone
                ), (page, key, values)
    paths = {lk.path.split("?")[0] for lk in links}
    assert paths == {"/", *(f"/{p.url_path}" for p in PAGES[1:])}  # every page (Home: "/")


@pytest.mark.timeout(900)  # about 630 links (73 s for 848 on 2 cores)
def test_hostile_links_never_break_a_page_or_the_server():
    """The crafted links (over 300) on a real --devices 8 server, each a new session over the
    browser's protocol; health and the page's elements checked after every one. The suite
    opens one part of them (harness/sweeps.py: every fourth link, which fourth rotating with
    the commits); PMAPVIZ_SWEEP=all opens them all (benchmarks/sweeps.py)."""
    part, every = sweeps.part(), hostile_links(8)
    links = part.take(every)
    runner = ProtocolRunner(["--devices", "8", "--max-bytes", "1G"])
    t0 = time.perf_counter()
    try:
        report = runner.run(links, tabs=SESSIONS)
    finally:
        runner.close()
    text = summarize("8-devices", report, time.perf_counter() - t0, tabs=SESSIONS)
    text = f"{part}: {len(links)} of {len(every)} links\n{text}"
    assert report.opened == len(links) >= 300 // part.parts, text
    assert not report.failures, text


# a long walk (tests/rotation.py): every run opens a part of the hostile links (above) and
# checks markup in every key as text in AppTest (tests/pages/test_fuzz.py)
@pytest.mark.rotates(cpu_s=32)
@pytest.mark.timeout(600)
def test_markup_links_render_as_text_in_chromium(browser, server):
    """In the browser, on the e2e session's server: every page with Markdown/HTML in all its
    keys; the DOM must show no injected image, link, bold text, formula or script. (What
    renders does not depend on the device count: the links open on the session's four.)"""
    runner = LinkRunner(browser, [], server=(None, server))
    t0 = time.perf_counter()
    links = browser_links()
    try:
        report = runner.run(links)
    finally:
        runner.close()
    text = summarize("browser", report, time.perf_counter() - t0)
    assert report.opened == len(links) == len(PAGE_KEYS)
    assert not report.failures, text


# the tour's buttons pressed on the small server, and what each press must draw: two processes
# do not fit 64 MB (the budget's one-line refusal), the timing does
PRESSED = (
    (8, "Launch 2 processes", "2 worker processes need about"),
    (9, "Time x * 2 + 1", "Measured at"),
)


@pytest.mark.timeout(600)
def test_hostile_links_on_three_devices_and_a_small_budget():
    """--devices 3 (nothing divides evenly) and the smallest budget; also presses the tour's
    step 8 (launch two processes) and step 9 (time on 1 and on all devices) buttons, in a
    session over the protocol, and checks what they drew like any link's page."""
    runner = ProtocolRunner(["--devices", "3", "--max-bytes", "64M"])
    t0 = time.perf_counter()
    try:
        report = runner.run(small_server_links(3))
        for step, button, answer in PRESSED:
            link = Link(f"/tour?step={step}", f"tour step {step}, press {button!r}")
            session = stclient.Session(runner.url, timeout=LINK_TIMEOUT_S * 2)
            try:
                session.open(link.path)
                pressed = session.press(button)
            finally:
                session.close()
            problems = protocol_problems(pressed, link) if runner.healthy() else None
            if problems is not None and not any(answer in t for t in pressed.texts()):
                problems.append(f"the press drew no {answer!r}")
            runner._record(link, problems, pressed.seconds)
    finally:
        runner.close()
    text = summarize("3-devices", report, time.perf_counter() - t0, tabs=1)
    assert not report.failures, text


FORCE_ERROR_APP = """
import runpy
import streamlit as st

_title = getattr(st, "_pmapviz_title", st.title)  # the original, on every rerun
st._pmapviz_title = _title


def _title_or_raise(*args, **kwargs):
    if st.query_params.get("pmapviz_force_error"):
        raise RuntimeError("forced by the test")
    return _title(*args, **kwargs)


st.title = _title_or_raise
runpy.run_path({app!r}, run_name="__main__")
"""


@pytest.mark.timeout(300)
def test_a_forced_exception_shows_no_file_paths(browser, tmp_path):
    """The app as shipped (its .streamlit/config.toml) must not show tracebacks or server paths
    when a page raises. The exception is forced by a wrapper around the real app.py that makes
    st.title raise when ?pmapviz_force_error is set; pages and config are the real ones."""
    for name in ("pages", "pmapviz", ".streamlit"):
        if (ROOT / name).exists():
            (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "app.py").write_text(FORCE_ERROR_APP.format(app=str(ROOT / "app.py")))
    env = {**ENV, "PYTHONPATH": str(ROOT)}
    proc, url = start_server(["--devices", "2"], env=env, script="app.py", cwd=tmp_path)
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        page = context.new_page()
        page.goto(url + "/collectives?pmapviz_force_error=1")
        app = page.locator('[data-testid="stApp"]')
        # the router's one clear message, once the script has finished
        alerts = page.locator('[data-testid="stAlert"]')
        expect(alerts.filter(has_text="unexpected problem")).to_have_count(1, timeout=120_000)
        expect(app).to_have_attribute("data-test-script-state", "notRunning")
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        # the page's area (the sidebar shows how this server was started, as typed: a path)
        text = page.locator(MAIN).inner_text()
        leaks = [
            s
            for s in ('File "/', "Traceback", str(ROOT), str(tmp_path), "site-packages")
            if s in text
        ]
        assert not leaks, f"the error shows {leaks}:\n{text[:1500]}"
    finally:
        context.close()
        stop_server(proc)
    log = Path(proc.log.name).read_text()  # the operator's terminal has what the page hides
    assert "pmapviz: a page failed (RuntimeError)" in log and "Traceback" in log, log[-2000:]
    assert "forced by the test" in log
    shutil.rmtree(tmp_path, ignore_errors=True)
