"""Results the room shares: a computation behind a Run button, run once for everyone who asks
for it with the same settings, and kept for the next who asks.

A result is keyed by its page, its canonical settings (the ones a link carries, plus the
widgets a link does not carry but the run reads) and the device set it ran on (:class:`Key`).
:meth:`SharedResults.get` is single-flight: the first caller for a key computes it; every
caller for the same key meanwhile waits for that computation and gets the same result, so
thirty attendees pressing Run queue one run behind the server's memory budget, not thirty.
A computation that fails is not kept: its error reaches the callers that waited for it,
except one that belongs to the caller that started it alone (its own Stop, or its page's
rerun, a ``BaseException``), after which the next waiter runs it itself.

Kept results are bounded in number, in bytes (measured by walking the result,
:func:`nbytes_of`) and in age, oldest use evicted first, and every kept result holds its
bytes in the server's memory pool (:func:`pmapviz.core.budgets.memorypool.reserve`) for as
long as it is kept: a result the pool has no room for right now is handed to its callers but
not kept. No Streamlit here: the page's side is :mod:`pmapviz.core.ui.shared_run`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass

from pmapviz.core.base import queues
from pmapviz.core.budgets import memorypool
from pmapviz.core.budgets.memorymodel import BudgetError, Need

MAX_ENTRIES = 32  # results kept at once (a workshop's pages hold a few each)
MAX_BYTES = 64 * 2**20  # their bytes together (a live run's result is tens of KB)
MAX_AGE_S = 3600.0  # a kept result older than this is run again
WAIT_SLICE_S = 0.25  # how often a waiter hears how long it has waited
WAIT_TIMEOUT_S = 900.0  # a waiter gives up on a computation that runs longer than this
HOLD_LABEL = "a result shared by the room"


@dataclass(frozen=True)
class Key:
    """What makes two runs the same: the page, its canonical settings, the device set."""

    page: str
    settings: tuple[tuple[str, str], ...]
    devices: str

    @classmethod
    def of(cls, page: str, settings: Mapping[str, object], devices: str) -> Key:
        """A key from a page's settings as a link writes them (any order, values as text)."""
        return cls(page, tuple(sorted((str(k), str(v)) for k, v in settings.items())), devices)


@dataclass(frozen=True)
class Shared:
    """A finished computation, as every caller of its key gets it."""

    value: object
    key: Key
    finished: float  # when it finished, wall clock (time.time())
    seconds: float  # how long it ran, its wait for memory included
    by: str  # who started it, in words ("the presenter", "another session")
    owner: str  # the id of the session that started it ("" when not known)
    nbytes: int  # what keeping it costs (nbytes_of)


class _Flight:
    """A computation under way: its callers wait on ``done``."""

    def __init__(self, by: str, owner: str, started: float):
        self.by, self.owner, self.started = by, owner, started
        self.done = threading.Event()
        self.entry: Shared | None = None
        self.error: Exception | None = None


class _Kept:
    def __init__(self, entry: Shared, hold):
        self.entry, self.hold = entry, hold


def pool_hold(nbytes: int):
    """Hold ``nbytes`` of the server's memory pool without waiting (a grant to release), or
    None when the pool has no room for it now or never could."""
    try:
        return memorypool.reserve(Need.host_only(nbytes), HOLD_LABEL, timeout=0.0)
    except (BudgetError, queues.WaitTimeout, queues.NeverFits):
        return None


class SharedResults:
    """The process's shared results (see the module doc). Thread-safe. ``hold(nbytes)``
    accounts a kept result's bytes (a releasable grant, or None: not kept); ``clock`` is the
    wall clock results are stamped and aged with."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_age_s: float = MAX_AGE_S,
        hold: Callable[[int], object] | None = pool_hold,
        clock: Callable[[], float] = time.time,
        slice_s: float = WAIT_SLICE_S,
    ):
        self.max_entries, self.max_bytes, self.max_age_s = max_entries, max_bytes, max_age_s
        self._hold, self._clock, self._slice = hold, clock, slice_s
        self._lock = threading.Lock()
        self._kept: OrderedDict[Key, _Kept] = OrderedDict()  # oldest use first
        self._flights: dict[Key, _Flight] = {}
        self.computed = 0  # computations run (each key's once while it is kept)
        self.served = 0  # results handed to a caller that did not compute them

    # ------------------------------------------------------------------ reading
    def peek(self, key: Key) -> Shared | None:
        """The kept result for ``key``, or None (nothing kept, or too old); never computes."""
        with self._lock:
            entry = self._fresh(key)
            if entry is not None:
                self.served += 1
            return entry

    def running(self, key: Key) -> bool:
        """Whether a computation for ``key`` is under way now."""
        with self._lock:
            return key in self._flights

    def join(
        self,
        key: Key,
        on_wait: Callable[[int, float, str], None] | None = None,
        timeout: float = WAIT_TIMEOUT_S,
    ) -> Shared | None:
        """The kept result for ``key``, or the one under way, waited for (as :meth:`get`'s
        waiters); None when there is neither (or its caller stopped it): never computes."""
        with self._lock:
            entry = self._fresh(key)
            if entry is not None:
                self.served += 1
                return entry
            flight = self._flights.get(key)
        if flight is None:
            return None
        return self._wait(flight, on_wait, time.monotonic(), timeout)

    def held_bytes(self) -> int:
        """The bytes the kept results hold now."""
        with self._lock:
            return sum(k.entry.nbytes for k in self._kept.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def _fresh(self, key: Key) -> Shared | None:
        kept = self._kept.get(key)
        if kept is None:
            return None
        if self._clock() - kept.entry.finished > self.max_age_s:
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return kept.entry

    # ------------------------------------------------------------------ computing once
    def get(
        self,
        key: Key,
        compute: Callable[[], object],
        *,
        by: str = "",
        owner: str = "",
        on_wait: Callable[[int, float, str], None] | None = None,
        timeout: float = WAIT_TIMEOUT_S,
    ) -> tuple[Shared, bool]:
        """(the result for ``key``, whether this call computed it): the kept one, the one
        under way (waiting for it, ``on_wait(1, waited_s, message)`` every slice, as a
        queue's waiter hears), or ``compute()`` run here, once for every caller meanwhile."""
        start = time.monotonic()
        while True:
            with self._lock:
                entry = self._fresh(key)
                if entry is not None:
                    self.served += 1
                    return entry, False
                flight = self._flights.get(key)
                mine = flight is None
                if mine:
                    flight = self._flights[key] = _Flight(by, owner, self._clock())
            if mine:
                return self._fly(key, flight, compute), True
            entry = self._wait(flight, on_wait, start, timeout)
            if entry is not None:
                return entry, False
            # its caller stopped it (a Stop, its page's rerun): the next one runs it

    def _fly(self, key: Key, flight: _Flight, compute: Callable[[], object]) -> Shared:
        t0 = time.monotonic()
        try:
            value = compute()
        except BaseException as err:
            with self._lock:
                del self._flights[key]
            if isinstance(err, Exception) and not isinstance(err, queues.Cancelled):
                flight.error = err  # the settings' own error: every waiter's too
            flight.done.set()
            raise
        entry = Shared(
            value,
            key,
            self._clock(),
            time.monotonic() - t0,
            flight.by,
            flight.owner,
            nbytes_of(value),
        )
        with self._lock:
            del self._flights[key]
            self.computed += 1
            self._keep(entry)
        flight.entry = entry
        flight.done.set()
        return entry

    def _wait(self, flight: _Flight, on_wait, start: float, timeout: float) -> Shared | None:
        while not flight.done.wait(self._slice):
            waited = time.monotonic() - start
            if waited >= timeout:
                raise queues.WaitTimeout(
                    f"Gave up after waiting {waited:.0f} s for the same run, which "
                    f"{flight.by or 'another session'} started; try again in a moment.",
                    1,
                    waited,
                )
            if on_wait is not None:
                on_wait(1, waited, self.wait_message(flight, waited))
        if flight.error is not None:
            raise flight.error
        if flight.entry is not None:
            with self._lock:
                self.served += 1
        return flight.entry

    def wait_message(self, flight: _Flight, waited_s: float) -> str:
        """What a waiter is told: whose run of the same settings it waits for, and how long."""
        ran = max(0.0, self._clock() - flight.started)
        return (
            f"The same run, with these settings on these devices, is under way: "
            f"{flight.by or 'another session'} started it {ran:.0f} s ago. It runs once for "
            f"everyone who asks, and you get its result (you have waited {waited_s:.0f} s)."
        )

    # ------------------------------------------------------------------ keeping
    def _keep(self, entry: Shared) -> None:
        """Keep ``entry`` (under the lock), evicting the oldest uses to make room, when it
        fits the bounds and the memory pool holds its bytes; else it is not kept."""
        self._drop(entry.key)
        if entry.nbytes > self.max_bytes or self.max_entries < 1:
            return
        while self._kept and (
            len(self._kept) >= self.max_entries or self._bytes() + entry.nbytes > self.max_bytes
        ):
            self._drop(next(iter(self._kept)))
        hold = self._hold(entry.nbytes) if self._hold is not None else True
        if hold is not None:
            self._kept[entry.key] = _Kept(entry, hold)

    def _bytes(self) -> int:
        return sum(k.entry.nbytes for k in self._kept.values())

    def _drop(self, key: Key) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None and hasattr(kept.hold, "release"):
            kept.hold.release()

    def clear(self) -> None:
        """Forget every kept result (and give their bytes back to the pool)."""
        with self._lock:
            for key in list(self._kept):
                self._drop(key)


def nbytes_of(value: object) -> int:
    """The bytes ``value`` holds in this process: every object it reaches through containers,
    dataclass fields and attributes, each counted once (``sys.getsizeof``; a numpy array's
    data included)."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif is_dataclass(obj):
            stack.extend(getattr(obj, f.name) for f in fields(obj))
        elif hasattr(obj, "nbytes") and hasattr(obj, "base"):  # a numpy array or view
            total += 0 if obj.base is None else int(obj.nbytes)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
    return total


_SHARED = SharedResults()


def shared() -> SharedResults:
    """This server process's shared results (every session's)."""
    return _SHARED
