"""The room's count of one server process: per exercise, how many attendees tried it, how many
solved it, and the commonest ways the others are stuck, by kind.

Anonymous by construction. An attendee is an opaque token (a hash of their session's id, never
shown); what is kept of them is one mark per exercise, whether they solved it and the *kind*
of their latest wrong attempt (:attr:`pmapviz.features.exercises.verdicts.Judgement.kind`: JAX's
error class and the rule it broke, built from fixed words, never from what they typed). An
attendee's second attempt replaces their first, so no one changes any count but their own.
Bounded (:data:`MAX_ATTENDEES` marks per exercise, the longest quiet dropped first), kept in
this process only: the counts vanish with the server.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from pmapviz.features.exercises import exercisebook
from pmapviz.features.exercises.verdicts import Judgement

MAX_ATTENDEES = 2048  # marks kept per exercise (a bound, not a limit on the room)
TOP = 3  # the commonest kinds a summary names


@dataclass(frozen=True)
class Mark:
    """What the count keeps of one attendee for one exercise."""

    solved: bool
    kind: str  # their latest wrong attempt's kind ("" once solved)
    at: float  # when they last tried (time.monotonic)


@dataclass(frozen=True)
class Summary:
    """One exercise's count: attendees working on it (who tried), how many solved it, and the
    commonest kinds of the others' latest attempts, most common first."""

    working: int
    solved: int
    stuck: tuple[tuple[str, int], ...]

    def line(self) -> str:
        """'14 of 20 solved, 4 stuck on IndivisibleError (mapped axis 10 > 8 devices)'."""
        if not self.working:
            return "No attempts yet."
        head = f"{self.solved} of {self.working} solved"
        if not self.stuck:
            return head
        kind, count = self.stuck[0]
        return f"{head}, {count} stuck on {kind}"

    def to_dict(self) -> dict:
        """As JSON: working, solved, stuck (kind and count)."""
        return {
            "working": self.working,
            "solved": self.solved,
            "stuck": [{"kind": k, "count": c} for k, c in self.stuck],
        }


class Tally:
    """Marks per exercise (only the exercises it was made with), one per attendee."""

    def __init__(self, exercises: Iterable[str]):
        self._marks: dict[str, OrderedDict[str, Mark]] = {e: OrderedDict() for e in exercises}
        self._lock = threading.Lock()

    def record(self, exercise: str, attendee: str, judged: Judgement) -> bool:
        """Count ``attendee``'s attempt at ``exercise``; whether it counted (an attempt not
        checked, or at an exercise this tally does not know, counts nowhere). Solved stays
        solved: a later wrong try of someone who solved it is their own exploring."""
        marks = self._marks.get(exercise)
        if marks is None or not judged.checked:
            return False
        with self._lock:
            before = marks.pop(attendee, None)
            solved = judged.solved or (before is not None and before.solved)
            marks[attendee] = Mark(solved, "" if solved else judged.kind, time.monotonic())
            while len(marks) > MAX_ATTENDEES:
                marks.popitem(last=False)
        return True

    def summary(self, exercise: str, top: int = TOP) -> Summary:
        """The count of ``exercise`` now."""
        with self._lock:
            marks = list(self._marks.get(exercise, {}).values())
        stuck = Counter(m.kind for m in marks if not m.solved and m.kind)
        return Summary(len(marks), sum(m.solved for m in marks), tuple(stuck.most_common(top)))

    def forget(self) -> None:
        """Every count back to none (a new workshop on the same server)."""
        with self._lock:
            for marks in self._marks.values():
                marks.clear()


_TALLY: list[Tally] = []
_MADE = threading.Lock()


def tally() -> Tally:
    """This process's tally of every exercise (:data:`exercisebook.EXERCISES`), made on first
    use."""
    with _MADE:
        if not _TALLY:
            _TALLY.append(Tally(exercisebook.BY_KEY))
        return _TALLY[0]
