"""Follow the presenter: the room of one server process, with no Streamlit.

One browser leads: it proved it holds the server's presenter key (made at start, or set with
``--presenter-key`` / ``PMAPVIZ_PRESENTER_KEY``; shown only on the server's terminal and in
the sidebar of a browser on the server's own machine). What it leads with is a :class:`Step`:
the page it is on and its link's query (its settings, tour step and device set, never the key
or its presenter mode). Followers poll :func:`latest` (a version number, then the step) and
apply the step as they would apply any link: through the page's schemas, the one settings
layer, so a step can carry nothing a link could not.
"""

from __future__ import annotations

import hmac
import secrets
import string
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pmapviz.core.base.valueparse import SettingError

ENV_KEY = "PMAPVIZ_PRESENTER_KEY"
FOLLOW_KEY = "follow"  # the follow link's query key: /?follow=1
FLAG = "--presenter-key"
MIN_KEY, MAX_KEY = 8, 128
KEY_CHARS = frozenset(string.ascii_letters + string.digits + "-_.~")
# a step's query holds this many keys at most, each value this long (a link's own bounds are
# the schemas'; these only keep one presenter from filling the server's memory)
MAX_QUERY_KEYS, MAX_VALUE = 64, 4096
# never led: the key itself, and what each person chooses for their own screen
MAX_FOLLOWERS = 4096  # followers remembered for the count (a bound, not a limit on the room)
FOLLOWER_SILENCE_S = 5.0  # a follower silent this long is no longer counted
PRIVATE_KEYS = frozenset({"present", FOLLOW_KEY, "key", "presenter_key"})


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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def proves(self, typed: object) -> bool:
        """Whether ``typed`` is this room's key (a constant-time compare)."""
        if not isinstance(typed, str) or not typed:
            return False
        return hmac.compare_digest(typed.strip().encode(), self.key.encode())

    def lead(self, typed: object, step: Step) -> bool:
        """Publish ``step`` if ``typed`` proves the key; a new version only when it changed.
        Returns whether the key was proved."""
        if not self.proves(typed):
            return False
        with self._lock:
            if step != self.step:
                self.step, self.version = step, self.version + 1
        return True

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
    """What the server's terminal says of the key: the only place besides the sidebar of a
    browser on this machine that shows it."""
    return (
        f"pmapviz: presenter key {key} (type it in the sidebar's 'Lead the room' to lead from "
        "another machine; attendees open the follow link)"
    )


def _to_terminal(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
