"""Fair locks and a fair pool: one-at-a-time access to a shared resource (:class:`FairLock`)
and shares of one memory budget (:class:`Pool`), each with a visible queue that never waits forever.

A server process has a few things only one session should use at once: the benchmark (two
timings at once disturb each other), the local cluster (ports, memory), later the profiler.
:class:`FairLock` hands them out first come, first served. A caller waits in short slices; on
each slice it learns its place in the queue (1 = next) so a page can show it, and it gives up with
:class:`WaitTimeout` when its timeout passes or :class:`Cancelled` when ``should_stop()``
turns true. :meth:`FairLock.held_for` says how long the current holder has had its turn::

    with TURNS.acquire(timeout=120, should_stop=stop, on_wait=show):
        ...  # the resource is ours until the block ends

``on_wait(position, waited_s, message)`` gets the waiter's place (1 = next), the seconds it
has waited and what to show, the queue's own words (:meth:`FairLock.wait_message`,
:meth:`Pool.wait_message`), so one display serves every queue an action passes through.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

SLICE_S = 0.25  # how often a waiter wakes to report its position and check should_stop
MAX_TIMEOUT_S = 24 * 3600.0


class WaitTimeout(TimeoutError):
    """The caller's timeout passed before its turn came; the message says what it waited for."""

    def __init__(self, message: str, position: int, waited_s: float):
        super().__init__(message)
        self.position, self.waited_s = position, waited_s


class Cancelled(RuntimeError):
    """``should_stop()`` turned true while the caller was waiting."""

    def __init__(self, message: str, position: int, waited_s: float):
        super().__init__(message)
        self.position, self.waited_s = position, waited_s


class _Held:
    """Something held from an owner (a turn, a share): release it, or leave the ``with``
    block, when done. Idempotent."""

    _owner: FairLock | Pool
    released: bool

    def release(self) -> None:
        """Give it back to its owner; later calls do nothing."""
        if not self.released:
            self.released = True
            self._owner._release(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Turn(_Held):
    """The caller's turn: release it (or leave the ``with`` block) when done. Idempotent."""

    def __init__(self, owner: FairLock):
        self._owner = owner
        self.released = False


class FairLock:
    """First come, first served access to one resource (see the module doc). Thread-safe."""

    def __init__(
        self, what: str, slice_s: float = SLICE_S, clock: Callable[[], float] = time.monotonic
    ):
        self.what = what  # e.g. "benchmark": used in messages
        self._slice = slice_s
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()  # waiting tickets, oldest first
        self._holder: Turn | None = None
        self._since = 0.0
        self._mine = threading.local()  # the turn ``with turns:`` took, per thread

    # ------------------------------------------------------------------ queries
    def held_for(self) -> float | None:
        """Seconds the current holder has had its turn, or None when nobody holds it."""
        with self._cond:
            return None if self._holder is None else self._clock() - self._since

    def waiting(self) -> int:
        """How many callers are in the queue now."""
        with self._cond:
            return len(self._queue)

    def wait_message(self, position: int, waited_s: float | None = None) -> str:
        """What to show the waiter at ``position`` (1 = next): its place, the holder's time."""
        held = self.held_for()
        ran = f"; it has run for {_secs(held)}" if held is not None else ""
        ahead = "" if position <= 1 else f" ({position - 1} ahead of you)"
        waited = f" You have waited {_secs(waited_s)}." if waited_s else ""
        return (
            f"Waiting for another session's {self.what}: you are number {position} in the "
            f"queue{ahead}{ran}.{waited}"
        )

    # ------------------------------------------------------------------ taking a turn
    def acquire(
        self,
        timeout: float = 120.0,
        should_stop: Callable[[], bool] | None = None,
        on_wait: Callable[[int, float], None] | None = None,
    ) -> Turn:
        """Wait for the turn (FIFO) for at most ``timeout`` seconds; see the module doc.

        ``on_wait(position, waited_s, message)`` is called on every slice while waiting (never
        while holding the internal lock), so it may update a page or raise to abandon it.
        """
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout >= 0):
            raise ValueError(f"timeout must be a finite number of seconds, got {timeout!r}")
        timeout = min(float(timeout), MAX_TIMEOUT_S)
        ticket = object()
        start = self._clock()
        with self._cond:
            self._queue.append(ticket)
        try:
            while True:
                turn, position = self._try_take(ticket)
                if turn is not None:
                    return turn
                waited = self._clock() - start
                if should_stop is not None and should_stop():
                    raise Cancelled(
                        f"Stopped while waiting for another session's {self.what} "
                        f"(after {_secs(waited)}).",
                        position,
                        waited,
                    )
                if waited >= timeout:
                    raise WaitTimeout(self._timeout_message(position, waited), position, waited)
                if on_wait is not None:
                    on_wait(position, waited, self.wait_message(position, waited))
                with self._cond:
                    if self._holder is not None or self._queue[0] is not ticket:
                        self._cond.wait(min(self._slice, max(0.0, timeout - waited)))
        finally:
            with self._cond:
                if ticket in self._queue:  # gave up (timeout, stop, or on_wait raised)
                    self._queue.remove(ticket)
                    self._cond.notify_all()

    def __enter__(self) -> Turn:
        """``with turns:`` takes a turn with the default timeout."""
        self._mine.turn = self.acquire()
        return self._mine.turn

    def __exit__(self, *exc) -> None:
        self._mine.turn.release()

    def _try_take(self, ticket: object) -> tuple[Turn | None, int]:
        with self._cond:
            position = self._queue.index(ticket) + 1
            if self._holder is None and position == 1:
                self._queue.popleft()
                self._holder = Turn(self)
                self._since = self._clock()
                return self._holder, 0
            return None, position

    def _release(self, turn: Turn) -> None:
        with self._cond:
            if self._holder is turn:
                self._holder = None
                self._cond.notify_all()

    def _timeout_message(self, position: int, waited: float) -> str:
        held = self.held_for()
        ran = f" (it has run for {_secs(held)})" if held is not None else ""
        return (
            f"Gave up after waiting {_secs(waited)} for another session's {self.what}{ran}; "
            f"you were number {position} in the queue. Try again in a moment."
        )


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


_REGISTRY: dict[str, FairLock] = {}
_REGISTRY_LOCK = threading.Lock()


def resource(name: str, what: str | None = None) -> FairLock:
    """The process-wide :class:`FairLock` for ``name`` ("benchmark", "cluster", ...)."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            _REGISTRY[name] = FairLock(what or name)
        return _REGISTRY[name]


# ---------------------------------------------------------------- a shared capacity
class NeverFits(ValueError):
    """An amount larger than the whole capacity: waiting would never end."""


class Grant(_Held):
    """A share of a :class:`Pool`: release it (or leave the ``with`` block) when done."""

    def __init__(self, owner: Pool, amount: tuple[int, ...], label: str, since: float):
        self._owner, self.amount, self.label, self.since = owner, amount, label, since
        self.released = False


class Pool:
    """A capacity shared by many holders at once (bytes of memory: one number per kind, e.g.
    host and device), handed out first come, first served: a waiter goes when it is first in the
    queue and its amount fits in what is free, so a big action is never starved by small ones behind
    it. Waits in slices like :class:`FairLock` (``on_wait(position, waited_s, message)``), gives up
    with :class:`WaitTimeout` or :class:`Cancelled`. ``describe(amount)`` writes an
    amount in words for the messages. Thread-safe."""

    def __init__(
        self,
        what: str,
        capacity: tuple[int, ...],
        describe: Callable[[tuple[int, ...]], str] = str,
        slice_s: float = SLICE_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.what, self.capacity, self.describe = what, tuple(capacity), describe
        self._slice, self._clock = slice_s, clock
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._held: list[Grant] = []

    def held(self) -> list[tuple[str, tuple[int, ...], float]]:
        """(label, amount, seconds held) of every current holder, oldest first."""
        with self._cond:
            now = self._clock()
            return [(g.label, g.amount, now - g.since) for g in self._held]

    def free(self) -> tuple[int, ...]:
        """What is free now, one number per kind (the capacity less every current share)."""
        with self._cond:
            return self._free()

    def _free(self) -> tuple[int, ...]:
        return tuple(c - sum(g.amount[k] for g in self._held) for k, c in enumerate(self.capacity))

    def waiting(self) -> int:
        """How many callers are in the queue now."""
        with self._cond:
            return len(self._queue)

    def wait_message(self, position: int, waited_s: float | None, amount: tuple[int, ...]) -> str:
        """What to show a waiter needing ``amount``: its place, what is free and what holds it."""
        running = (
            "; ".join(f"{label} ({self.describe(a)}, {_secs(s)})" for label, a, s in self.held())
            or "nothing"
        )
        ahead = "" if position <= 1 else f" ({position - 1} ahead of you)"
        waited = f" You have waited {_secs(waited_s)}." if waited_s else ""
        return (
            f"Waiting for {self.what}: this needs {self.describe(amount)}, and "
            f"{self.describe(self.free())} of {self.describe(self.capacity)} is free now. "
            f"Running: {running}. You are number {position} in the queue{ahead}."
            f"{waited}"
        )

    def acquire(
        self,
        amount: tuple[int, ...],
        label: str,
        timeout: float = 120.0,
        should_stop: Callable[[], bool] | None = None,
        on_wait: Callable[[int, float], None] | None = None,
    ) -> Grant:
        """Wait (FIFO) until ``amount`` fits, for at most ``timeout`` seconds; NeverFits at
        once when it is larger than the whole capacity."""
        amount = tuple(int(a) for a in amount)
        if any(a > c for a, c in zip(amount, self.capacity, strict=True)):
            raise NeverFits(
                f"{label} needs {self.describe(amount)}; all of {self.what} is "
                f"{self.describe(self.capacity)}."
            )
        ticket, start = object(), self._clock()
        with self._cond:
            self._queue.append(ticket)
        try:
            while True:
                grant, position = self._try_take(ticket, amount, label)
                if grant is not None:
                    return grant
                waited = self._clock() - start
                if should_stop is not None and should_stop():
                    raise Cancelled(
                        f"Stopped while waiting for {self.what} (after {_secs(waited)}).",
                        position,
                        waited,
                    )
                if waited >= timeout:
                    raise WaitTimeout(
                        f"Gave up after waiting {_secs(waited)} for {self.what}: this needs "
                        f"{self.describe(amount)}, and other sessions held the rest; you were "
                        f"number {position} in the queue. Try again in a moment.",
                        position,
                        waited,
                    )
                if on_wait is not None:
                    on_wait(position, waited, self.wait_message(position, waited, amount))
                with self._cond:
                    self._cond.wait(min(self._slice, max(0.0, timeout - waited)))
        finally:
            with self._cond:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                    self._cond.notify_all()

    def _try_take(
        self, ticket: object, amount: tuple[int, ...], label: str
    ) -> tuple[Grant | None, int]:
        with self._cond:
            position = self._queue.index(ticket) + 1
            fits = all(a <= f for a, f in zip(amount, self._free(), strict=True))
            if position == 1 and fits:
                self._queue.popleft()
                grant = Grant(self, amount, label, self._clock())
                self._held.append(grant)
                self._cond.notify_all()  # the next in line may fit too
                return grant, 0
            return None, position

    def _release(self, grant: Grant) -> None:
        with self._cond:
            if grant in self._held:
                self._held.remove(grant)
                self._cond.notify_all()
