"""What a follower's arrival costs the server (issue 65): one whole run of the page it lands on.

A presenter and three followers on one real server, over Streamlit's own websocket protocol
(no browser: what is counted is the server's script runs, as each tab's messages say). Each tab
does what a browser tab does: its page and link as the server says, the poll fragment's timer
(``auto_rerun``), every timer ended when a whole run starts. And each follower hears of every
switch late, as a browser on a busy server does: its timer fires once more, with the page and
link before the switch, just before the switch's first message is read. Such a poll used to run
after the switched run, at the page before it, which tells a browser that page (it clears the
step's page) and made the follower switch again: two whole runs per step, and under thirty
followers many more (benchmarks/follow_room.py). Now Streamlit drops it: its fragment was
retired with the switch.

The presenter leads with the server's key, typed, and walks the tour, the explorer (a page
change, then an edit that reruns only the explorer's fragment: published from where the page
wrote its link, once), Collectives and Home.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from harness import start_server, stop_server

KEY = "follow-reruns-test-key"
FOLLOWERS = 3
STEP_TIMEOUT_S = 60.0
SETTLE_S = 1.5  # after every follower arrived: three polls' time for anything more to run
PRIVATE = frozenset({"follow", "present"})


def canon(path: str, query: str) -> tuple[str, tuple]:
    """A page and link as a step: its path and sorted query, without a person's own keys."""
    keys = sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in PRIVATE)
    return "/" + path.strip("/"), tuple(keys)


@dataclass
class Tab:
    """One browser tab over Streamlit's protocol (no rendering)."""

    base: str
    late: bool = False  # hears of a switch after its timer fired once more (a busy server)
    path: str = "/"
    query: str = ""
    page_hash: str = ""
    pages: dict = field(default_factory=dict)  # page script hash -> URL path
    timers: dict = field(default_factory=dict)  # fragment id -> [interval, next due]
    runs: list = field(default_factory=list)  # (finished at, path, query): whole runs
    wipes: int = 0  # fragment runs at a page other than this tab's: a browser clears its page
    in_run: bool = False
    asked: bool = False  # this tab asked for the whole run now starting (a click, a link)
    pending: bool = False  # a whole run this tab asked for has not finished yet
    widgets: dict = field(default_factory=dict)  # label -> (widget id, fragment id)
    texts: list = field(default_factory=list)  # the alerts' texts of the last runs

    def __post_init__(self):
        self._conn = connect(
            self.base.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit"],
            max_size=2**27,
            open_timeout=60,
        )
        self.ws = self._conn.__enter__()

    def close(self) -> None:
        self._conn.__exit__(None, None, None)

    def open(self, link: str) -> None:
        """Go to ``link`` in this tab's session (a first load, or a page change)."""
        parts = urlsplit(link)
        self.path, self.query = parts.path or "/", parts.query
        self._send(page_name=self.path.strip("/"))

    def act(self, label: str, text: str | None = None, typed: dict | None = None) -> None:
        """Press the button ``label``, or type ``text`` into the text field ``label`` (a run of
        its fragment alone when it is inside one, as a browser sends it), with the texts
        ``typed`` before ({label: text}: a browser sends every field's value)."""
        states = []
        for name, value in {**(typed or {}), label: text}.items():
            state = BackMsg().rerun_script.widget_states.widgets.add()
            state.id = self.widgets[name][0]
            if value is None:
                state.trigger_value = True
            else:
                state.string_value = value
            states.append(state)
        self._send(fragment=self.widgets[label][1], states=states)

    def _send(self, page_name=None, fragment="", states=(), auto=False) -> None:
        msg = BackMsg()
        run = msg.rerun_script
        run.query_string = self.query
        if page_name is not None:
            run.page_name = page_name
        else:
            run.page_script_hash = self.page_hash
        run.fragment_id, run.is_auto_rerun = fragment, auto
        for state in states:
            run.widget_states.widgets.add().CopyFrom(state)
        self.asked = self.asked or not fragment
        self.pending = self.pending or not fragment
        self.ws.send(msg.SerializeToString())

    def pump(self, seconds: float) -> None:
        """Take the server's messages for ``seconds``, sending the timers' polls when due."""
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            for fragment, timer in list(self.timers.items()):
                if now >= timer[1]:
                    timer[1] = now + timer[0]
                    self._send(fragment=fragment, auto=True)
            try:
                data = self.ws.recv(timeout=0.01)
            except TimeoutError:
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            self._take(fwd)

    def _take(self, fwd: ForwardMsg) -> None:
        which = fwd.WhichOneof("type")
        whole = not fwd.metadata.run.fragment_ids
        if which == "new_session" and whole:
            if self.late and not self.asked and self.timers:  # the server switched this tab
                for fragment in self.timers:  # its timer fired before it heard: the old page
                    self._send(fragment=fragment, auto=True)
            self.timers.clear()  # the browser's cleanupAutoReruns
            self.asked, self.in_run, self.texts = False, True, []
            self._page(fwd.new_session.page_script_hash)
        elif which == "new_session":
            self.wipes += fwd.new_session.page_script_hash != self.page_hash
        elif which == "navigation":
            self.pages |= {
                p.page_script_hash: "/" + p.url_pathname for p in fwd.navigation.app_pages
            }
            self._page(fwd.navigation.page_script_hash)
        elif which == "page_info_changed":
            self.query = fwd.page_info_changed.query_string
        elif which == "auto_rerun":
            self.timers.setdefault(
                fwd.auto_rerun.fragment_id,
                [fwd.auto_rerun.interval, time.monotonic() + fwd.auto_rerun.interval],
            )
        elif which == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            self._element(fwd.delta.new_element, fwd.delta.fragment_id)
        elif which == "script_finished" and self.in_run:
            self.in_run = self.pending = False
            self.runs.append((time.monotonic(), self.path, self.query))

    def _page(self, page_hash: str) -> None:
        if page_hash:
            self.page_hash = page_hash
            self.path = self.pages.get(page_hash, self.path)

    def _element(self, el, fragment: str) -> None:
        kind = el.WhichOneof("type")
        if kind in ("button", "text_input"):
            part = getattr(el, kind)
            self.widgets[part.label] = (part.id, fragment)
        elif kind == "alert":
            self.texts.append(el.alert.body)
        elif kind == "exception":
            raise AssertionError(f"{self.path}: {el.exception.type}: {el.exception.message}")

    def here(self) -> tuple[str, tuple]:
        return canon(self.path, self.query)


@pytest.fixture(scope="module")
def room_server():
    env = {k: "" for k in ("PMAPVIZ_DEVICES", "PMAPVIZ_PLATFORM", "PMAPVIZ_PRESENTER_KEY")}
    proc, url = start_server(["--devices", "4", "--presenter-key", KEY], env=env)
    try:
        yield url
    finally:
        stop_server(proc)


def _pump_all(tabs, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for tab in tabs:
            tab.pump(0.02)


def _until(tabs, done, timeout_s: float = STEP_TIMEOUT_S, why=None) -> None:
    end = time.monotonic() + timeout_s
    while not done() and time.monotonic() < end:
        _pump_all(tabs, 0.1)
    assert done(), why() if why else [(t.here(), t.runs[-1:]) for t in tabs]


def _lead(leader: Tab, tabs) -> None:
    leader.open("/")
    _until(tabs, lambda: leader.runs)
    leader.act("Presenter key", KEY)
    _until(tabs, lambda: len(leader.runs) > 1)
    leader.act("Lead the room", typed={"Presenter key": KEY})
    _until(tabs, lambda: any(t.startswith("You lead the room") for t in leader.texts))


def _moves(leader: Tab):
    """The presenter's moves: what each does."""
    yield lambda: leader.open("/tour?step=1")
    yield lambda: leader.act("Next")
    yield lambda: leader.open("/explorer")
    yield lambda: leader.act("shape of x", "4, 6, 5")  # the explorer's fragment alone
    yield lambda: leader.open("/collectives")
    yield lambda: leader.open("/")


def test_a_followers_arrival_costs_one_whole_run_of_the_page_it_lands_on(room_server):
    leader = Tab(room_server)
    followers = [Tab(room_server, late=True) for _ in range(FOLLOWERS)]
    tabs = [leader, *followers]
    try:
        _lead(leader, tabs)
        for f in followers:
            f.open("/?follow=1")
        _until(tabs, lambda: all(f.runs and f.here() == leader.here() for f in followers))
        _pump_all(tabs, SETTLE_S)
        counts, wipes = [], sum(f.wipes for f in followers)
        for move in _moves(leader):
            before, marks = leader.here(), [len(f.runs) for f in followers]
            move()
            _until(tabs, lambda b=before: leader.here() != b and not leader.pending)
            step = leader.here()
            _until(
                tabs,
                lambda m=marks, s=step: _all_landed(followers, m, s),
                why=lambda m=marks, s=step: (s, _landed(followers, m)),
            )
            _pump_all(tabs, SETTLE_S)
            for f, k in zip(followers, marks, strict=True):
                landed = [canon(p, q) for _, p, q in f.runs[k:]]
                counts.append((step, landed))
        assert [c for c in counts if c[1] != [c[0]]] == []  # one whole run each, on the step
        assert sum(f.wipes for f in followers) == wipes == 0  # no poll ran at a page passed
    finally:
        for tab in tabs:
            with contextlib.suppress(ConnectionClosed):
                tab.close()


def _landed(followers, marks) -> list[list]:
    """The steps each follower ran since its mark."""
    return [[canon(p, q) for _, p, q in f.runs[k:]] for f, k in zip(followers, marks, strict=True)]


def _all_landed(followers, marks, step) -> bool:
    """Whether every follower ran ``step`` since its mark."""
    return all(step in runs for runs in _landed(followers, marks))
