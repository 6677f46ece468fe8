"""Follow the presenter: the room of one server process, with no Streamlit.

One browser leads. It got there by opening the server's one-time **lead link** (printed on the
server's terminal, as Jupyter prints its token link: :meth:`Room.invite`, :meth:`Room.redeem`)
or by typing the server's **presenter key** (made at start, or set with ``--presenter-key`` /
``PMAPVIZ_PRESENTER_KEY``; shown only on the server's terminal, never on a page). Either way
it is given the room's **leader pass** (:meth:`Room.admit`), which its browser keeps (a cookie)
so that a reload leads again. One pass at a time: a newer one (the next lead link opened, or
the key typed elsewhere) replaces it, "Stop leading" revokes it, it lasts ``PASS_TTL_S`` at
most, and a server restart forgets it (it lives in this process only).

What the leader leads with is a :class:`Step`: the page it is on and its link's query (its
settings, tour step and device set, never the key, a token or its presenter mode). Followers
poll :func:`latest` (a version number, then the step) and apply the step as they would apply
any link: through the page's schemas, the one settings layer, so a step can carry nothing a
link could not. The room also knows when the leader was last heard (:meth:`Room.leader_seen`):
a leader whose page closed, or that went silent ``LEADER_SILENCE_S``, is away, and followers
say so.
"""

from __future__ import annotations

import hmac
import secrets
import string
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pmapviz.core.base.valueparse import SettingError

ENV_KEY = "PMAPVIZ_PRESENTER_KEY"
FOLLOW_KEY = "follow"  # the follow link's query key: /?follow=1
LEAD_KEY = "lead"  # the lead link's query key: /?lead=<token> (taken out of the URL at once)
FLAG = "--presenter-key"
MIN_KEY, MAX_KEY = 8, 128
KEY_CHARS = frozenset(string.ascii_letters + string.digits + "-_.~")
# a step's query holds this many keys at most, each value this long (a link's own bounds are
# the schemas'; these only keep one presenter from filling the server's memory)
MAX_QUERY_KEYS, MAX_VALUE = 64, 4096
# never led: the key itself, and what each person chooses for their own screen
MAX_FOLLOWERS = 4096  # followers remembered for the count (a bound, not a limit on the room)
FOLLOWER_SILENCE_S = 5.0  # a follower silent this long is no longer counted
MAX_PATH = 1024  # steps of the room's path kept (a day's workshop is a few hundred)
PRIVATE_KEYS = frozenset({"present", FOLLOW_KEY, LEAD_KEY, "key", "presenter_key"})
MAX_TOKEN = 128  # a lead link's token or a pass longer than this is not compared at all
PASS_TTL_S = 12 * 3600.0  # a leader pass lasts a workshop's day at most (its cookie as long)
# the leader polls every 0.5 s (room_panel.POLL_S): silent this long (three polls missed) it is
# away; a follower polling as often says so within LEADER_SILENCE_S + its poll <= 2 s
LEADER_SILENCE_S = 1.5
MAX_LEADER_SESSIONS = 16  # a leader's tabs remembered for its presence (a bound, not a limit)


def parse_key(text: str, where: str = FLAG) -> str:
    """A presenter key as typed: 8 to 128 letters, digits or ``-_.~`` (URL-safe, so no
    character can be mangled between terminal and browser). Raises :class:`SettingError`."""
    text = str(text).strip()
    if not MIN_KEY <= len(text) <= MAX_KEY or not set(text) <= KEY_CHARS:
        raise SettingError(
            f"{where} must be {MIN_KEY} to {MAX_KEY} letters, digits or -_.~ "
            f"(got {len(text)} characters), e.g. {where} {new_key()}"
        )
    return text


def new_key() -> str:
    """A fresh key: 16 URL-safe characters from the OS's random source (96 bits)."""
    return secrets.token_urlsafe(12)


def new_token() -> str:
    """A lead link's token or a leader pass: 32 URL-safe characters (192 random bits)."""
    return secrets.token_urlsafe(24)


def _same(given: object, secret: str) -> bool:
    """Whether ``given`` is ``secret``: text of a bounded length, compared in constant time."""
    if not isinstance(given, str) or not given or len(given) > MAX_TOKEN:
        return False
    return hmac.compare_digest(given.strip().encode(), secret.encode())


@dataclass(frozen=True)
class Step:
    """Where the presenter is: a page's URL path ("" for Home) and its link's query."""

    page: str
    query: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(page: str, query: Mapping[str, object]) -> Step:
        """The step for ``page`` with ``query`` (a session's query params), without the
        private keys, bounded in size; values as text, keys in order."""
        kept = [
            (str(k), str(v)[:MAX_VALUE])
            for k, v in query.items()
            if str(k) not in PRIVATE_KEYS and not isinstance(v, list)
        ]
        return Step(str(page)[:200], tuple(sorted(kept))[:MAX_QUERY_KEYS])

    def query_dict(self) -> dict[str, str]:
        """The query as a dict, for ``st.query_params``."""
        return dict(self.query)


@dataclass
class Room:
    """The server's room: its key, the presenter's latest step and how often it changed."""

    key: str
    version: int = 0
    step: Step | None = None
    _seen: dict[str, float] = field(default_factory=dict, repr=False)  # follower -> last poll
    # the room's path: every step led, with when (bounded: the latest MAX_PATH)
    _path: deque[tuple[float, Step]] = field(
        default_factory=lambda: deque(maxlen=MAX_PATH), repr=False
    )
    _invite: str | None = field(default=None, repr=False)  # the lead link's unspent token
    _invited: bool = field(default=False, repr=False)  # the first lead link was made
    _pass: str | None = field(default=None, repr=False)  # the leader's pass, and until when
    _pass_until: float = field(default=0.0, repr=False)
    # the leader's sessions (a reload is a new one) -> when each was last heard
    _leaders: dict[str, float] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def proves(self, typed: object) -> bool:
        """Whether ``typed`` is this room's key (a constant-time compare)."""
        if not isinstance(typed, str) or not typed:
            return False
        return hmac.compare_digest(typed.strip().encode(), self.key.encode())

    def lead(self, typed: object, step: Step) -> bool:
        """Publish ``step`` if ``typed`` is the leader's pass (or the key itself); a new
        version only when it changed. Returns whether it may lead. (Its presence is what its
        session's polls say: :meth:`heard_leader`.)"""
        if not (self.holds(typed) or self.proves(typed)):
            return False
        with self._lock:
            if step != self.step:
                self.step, self.version = step, self.version + 1
                self._path.append((time.monotonic(), step))
        return True

    # -- who leads: the one-time lead link, the leader's pass, and its presence ---------------

    def invite(self) -> str:
        """A fresh one-time lead-link token (the one before it, if unspent, opens nothing)."""
        with self._lock:
            self._invite, self._invited = new_token(), True
            return self._invite

    def first_invite(self) -> str | None:
        """The first lead link's token, once per room (None after: it was made already)."""
        with self._lock:
            if self._invited:
                return None
            self._invite, self._invited = new_token(), True
            return self._invite

    def redeem(self, token: object) -> str | None:
        """Open the lead link: the leader's pass if ``token`` is the unspent one-time token
        (which is spent now, and the pass before replaced), else None (spent, or never)."""
        with self._lock:
            if self._invite is None or not _same(token, self._invite):
                return None
            self._invite = None
            return self._new_pass()

    def admit(self, typed: object) -> str | None:
        """The leader's pass for whoever typed the key (None for a wrong one)."""
        if not self.proves(typed):
            return None
        with self._lock:
            return self._new_pass()

    def _new_pass(self) -> str:
        self._pass, self._pass_until = new_token(), time.monotonic() + PASS_TTL_S
        self._leaders.clear()  # the sessions of the pass before lead no more
        return self._pass

    def holds(self, given: object) -> bool:
        """Whether ``given`` is the leader's pass, still valid (a constant-time compare)."""
        current = self._pass
        if current is None or time.monotonic() > self._pass_until:
            return False
        return _same(given, current)

    def pass_left_s(self) -> float:
        """Seconds the leader's pass has left (its cookie's lifetime), 0 when none."""
        return max(0.0, self._pass_until - time.monotonic()) if self._pass else 0.0

    def revoke(self, given: object) -> None:
        """``given`` leads no more ("Stop leading"): the room has no leader from now."""
        with self._lock:
            if self.holds(given):
                self._pass = None
                self._leaders.clear()

    def heard_leader(self, given: object, session: str) -> bool:
        """The leader's ``session`` polled (its pass is ``given``): it is present. Returns
        whether ``given`` still leads (False: replaced by a newer pass, revoked or expired)."""
        if not self.holds(given):
            return False
        with self._lock:
            self._leaders[str(session)] = time.monotonic()
            if len(self._leaders) > MAX_LEADER_SESSIONS:  # the longest silent goes
                del self._leaders[min(self._leaders, key=self._leaders.get)]
        return True

    def leader_seen(self, connected: Callable[[str], bool] | None = None) -> float | None:
        """Seconds since a leader's session was last heard (None: none heard since the
        pass was given, or none ``connected`` any more: its page closed or reloaded)."""
        now, heard = time.monotonic(), dict(self._leaders)
        ages = [now - t for s, t in heard.items() if connected is None or connected(s)]
        return min(ages) if ages and self._pass is not None else None

    def leader_present(
        self, within_s: float | None = None, connected: Callable[[str], bool] | None = None
    ) -> bool:
        """Whether a leader's session (still ``connected``) was heard in the last
        ``within_s`` seconds (LEADER_SILENCE_S)."""
        seen = self.leader_seen(connected)
        return seen is not None and seen <= (LEADER_SILENCE_S if within_s is None else within_s)

    def path(self) -> tuple[tuple[float, Step], ...]:
        """Every step the room was led to, in order, with when (``time.monotonic``): the
        workshop as it went, for a lesson (the latest MAX_PATH steps)."""
        with self._lock:
            return tuple(self._path)

    def latest(self, follower: str | None = None) -> tuple[int, Step | None]:
        """(version, step) now: followers compare the version first, which costs nothing.
        ``follower`` (a session's id) counts it as following (see :meth:`following`)."""
        with self._lock:
            if follower is not None:
                self._heard(follower, time.monotonic())
            return self.version, self.step

    def _heard(self, follower: str, now: float) -> None:
        self._seen[follower] = now
        if len(self._seen) > MAX_FOLLOWERS:  # the longest silent go first
            for gone in sorted(self._seen, key=self._seen.get)[: len(self._seen) // 2]:
                del self._seen[gone]

    def forget(self, follower: str) -> None:
        """``follower`` follows no more (it stopped following)."""
        with self._lock:
            self._seen.pop(follower, None)

    def following(self, within_s: float = FOLLOWER_SILENCE_S) -> int:
        """How many sessions polled in the last ``within_s`` seconds."""
        now = time.monotonic()
        with self._lock:
            return sum(1 for t in self._seen.values() if now - t <= within_s)


_ROOM: list[Room] = []
_MADE = threading.Lock()


def room(key: str | None = None, announce=None) -> Room:
    """This process's room, made on first use with ``key`` (None: a fresh one, announced on
    the server's terminal by ``announce(text)``, stderr by default)."""
    with _MADE:
        if not _ROOM:
            made = Room(key or new_key())
            _ROOM.append(made)
            if key is None:
                (announce or _to_terminal)(terminal_line(made.key))
        return _ROOM[0]


def terminal_line(key: str) -> str:
    """What the server's terminal says of the key: the only place that shows it."""
    return (
        f"pmapviz: presenter key {key} (to lead from any browser, type it under the sidebar's "
        "'Lead or follow the room'; attendees open the follow link)"
    )


def lead_link_line(links: list[str], first: bool = True) -> str:
    """What the server's terminal says of a lead link (``links``: the same link at each
    address the server answers at; the first one opened spends it)."""
    where = " or ".join(links)
    said = "lead link" if first else "the lead link was opened; the next one"
    return (
        f"pmapviz: {said} (opens once; the browser that opens it leads the room, and keeps "
        f"leading across reloads): {where}"
    )


def _to_terminal(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
