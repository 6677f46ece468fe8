"""An attendee's attempt: paced, judged once per distinct answer, counted.

* paced: each attendee gets :data:`BURST` attempts judged at once and one more every
  :data:`EVERY_S` seconds; an attempt beyond is not judged and counts nowhere (10,000 attempts
  a minute from one client cost the server a dictionary lookup each, and change no count);
* judged once: the same parsed answer on the same devices is judged once and kept
  (:data:`KEPT` answers), so a room typing the same fix runs JAX once;
* counted: in this process's :func:`pmapviz.features.exercises.tally.tally`, under an opaque
  token of the attendee's session (:func:`attendee`: a hash of a random secret it keeps).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from pmapviz.core.devices import devicefacts
from pmapviz.features.exercises import exercisebook, tally, verdicts
from pmapviz.features.exercises.exercisebook import Exercise
from pmapviz.features.exercises.verdicts import Judgement

BURST, EVERY_S = 6, 1.0  # attempts judged at once per attendee, then one a second
MAX_PACED = 4096  # attendees whose pace is remembered (the longest quiet forgotten first)
KEPT = 512  # judgements kept, by exercise, devices and parsed answer
TOO_FAST = (
    "Too many attempts in a short time: this one was not checked. Wait a second and press "
    "Check again."
)

_LOCK = threading.Lock()
_PACE: OrderedDict[str, tuple[float, float]] = OrderedDict()  # attendee -> (tokens, when)
_KEPT: OrderedDict[tuple, Judgement] = OrderedDict()


def attendee(secret: str) -> str:
    """The count's token for a session: a hash of a secret the session keeps (the secret
    itself is kept nowhere else)."""
    return hashlib.sha256(f"pmapviz-exercise:{secret}".encode()).hexdigest()[:16]


def paced(who: str, now: float | None = None) -> bool:
    """Whether ``who`` may have an attempt judged now (and, if so, one is used)."""
    now = time.monotonic() if now is None else now
    with _LOCK:
        tokens, when = _PACE.pop(who, (float(BURST), now))
        tokens = min(float(BURST), tokens + (now - when) / EVERY_S)
        allowed = tokens >= 1.0
        _PACE[who] = (tokens - 1.0 if allowed else tokens, now)
        while len(_PACE) > MAX_PACED:
            _PACE.popitem(last=False)
    return allowed


def attempt(
    exercise: Exercise, texts: Mapping[str, Any], who: str, n: int, now: float | None = None
) -> Judgement:
    """``who``'s attempt (the texts of its settings) at ``exercise`` on ``n`` devices, at
    ``now`` (``time.monotonic``'s): judged (or not, when too fast, or where the exercise needs
    more devices), and counted."""
    if (missing := exercise.missing(n)) is not None:
        return verdicts.not_checked(missing)
    if not paced(who, now):
        return verdicts.not_checked(TOO_FAST)
    judged = judged_once(exercise, texts, n)
    tally.tally().record(exercise.key, who, judged)
    return judged


def judged_once(exercise: Exercise, texts: Mapping[str, Any], n: int) -> Judgement:
    """The attempt judged, from the kept judgements where the same parsed answer was judged on
    the same devices (a judgement not checked now is not kept)."""
    values, refused = exercisebook.parse(exercise, texts)
    if refused is not None:
        return refused
    devices = tuple(d.id for d in devicefacts.local_devices_for_work()[:n])
    key = (exercise.key, n, devices, tuple(sorted(values.items())))
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    judged = exercise.check(values, n)
    if judged.checked:
        with _LOCK:
            _KEPT[key] = judged
            while len(_KEPT) > KEPT:
                _KEPT.popitem(last=False)
    return judged
