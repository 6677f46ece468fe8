"""A lesson: the presenter's path through a workshop (every step the room followed, with its
settings), as a file an attendee opens at home to replay it step by step, exercises included.

The file is JSON, versioned (:data:`FORMAT`, :data:`VERSION`), bounded (:data:`MAX_BYTES`,
:data:`MAX_STEPS`, each query as a room's step bounds it) and never evaluated: :func:`read`
parses it with ``json.loads``, then checks every step as a link is checked, through the page's
own schemas (the settings layer), on the device count it was recorded on. A file from another
version, or one that was changed, gets one clear line (:class:`LessonError`), never a
traceback and never a half-read lesson.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pmapviz.core.base import room, settings
from pmapviz.core.base.pageinfo import PageInfo
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import deviceset

FORMAT = "pmapviz-lesson"
VERSION = 1
MAX_BYTES = 256 * 1024
MAX_STEPS = 500
MAX_DEVICES = 4096
COALESCE_S = 1.0  # a step the room left within this, for another on the same page: an edit
# a session's own keys, never part of a lesson (presenter mode, following, the device set)
OWN_KEYS = frozenset({*room.PRIVATE_KEYS, settings.PRESENT_KEY, deviceset.URL_KEY})
DAMAGED = "This lesson file was changed or damaged"


class LessonError(SettingError):
    """A lesson that cannot be read: one line that says why and what to do."""


@dataclass(frozen=True)
class Lesson:
    """The steps of a workshop, in order, and the device count they were recorded on."""

    steps: tuple[room.Step, ...]
    devices: int

    def to_dict(self) -> dict:
        """The file's JSON."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "devices": self.devices,
            "steps": [{"page": s.page, "query": s.query_dict()} for s in self.steps],
        }

    def to_text(self) -> str:
        """The file's text."""
        return json.dumps(self.to_dict(), indent=1) + "\n"


def own_step(step: room.Step) -> room.Step:
    """``step`` without a session's own keys (presenter mode, following, the device set)."""
    return room.Step(step.page, tuple((k, v) for k, v in step.query if k not in OWN_KEYS))


def from_path(path: Iterable[tuple[float, room.Step]], devices: int) -> Lesson:
    """The lesson of a room's path (``room.Room.path()``): each step without a session's own
    keys; a step left within :data:`COALESCE_S` for another on the same page was an edit in
    progress (typing a shape), and only where it ended is kept."""
    kept: list[tuple[float, room.Step]] = []
    for at, step in path:
        step = own_step(step)
        if kept and kept[-1][1].page == step.page and at - kept[-1][0] < COALESCE_S:
            kept.pop()
        if not kept or kept[-1][1] != step:
            kept.append((at, step))
    return Lesson(tuple(s for _, s in kept)[-MAX_STEPS:], devices)


def read(data: str | bytes, pages: Sequence[PageInfo]) -> Lesson:
    """The lesson in ``data`` (a lesson file's text), each step checked through its page's
    schemas (``pages``: the app's). Raises :class:`LessonError`."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_BYTES:
        raise LessonError(
            f"This file is {len(raw):,} bytes; a pmapviz lesson is at most {MAX_BYTES:,}: it is "
            "not a lesson. Open the lesson file the presenter gave you."
        )
    try:
        found = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        raise LessonError(
            "This file is not a pmapviz lesson (a lesson is the JSON a presenter saves from "
            "the room). Open the lesson file the presenter gave you."
        )
    version = found.get("version")
    if version != VERSION:
        said = version if isinstance(version, int) and not isinstance(version, bool) else "?"
        raise LessonError(
            f"This lesson file is from another version of pmapviz (lesson format {said}); "
            f"this pmapviz reads format {VERSION}. Record the lesson again with this version."
        )
    devices = found.get("devices")
    if not isinstance(devices, int) or isinstance(devices, bool) or not 1 <= devices <= MAX_DEVICES:
        raise LessonError(f"{DAMAGED}: its device count is missing or out of range.")
    return Lesson(_steps(found.get("steps"), pages, devices), devices)


def _steps(steps: object, pages: Sequence[PageInfo], devices: int) -> tuple[room.Step, ...]:
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise LessonError(f"{DAMAGED}: it holds no list of 1 to {MAX_STEPS} steps.")
    return tuple(_step(k, s, pages, devices) for k, s in enumerate(steps, start=1))


def _step(k: int, step: object, pages: Sequence[PageInfo], devices: int) -> room.Step:
    """Step ``k`` of a lesson file, checked as a link to its page is."""
    if not isinstance(step, dict) or set(step) != {"page", "query"}:
        raise LessonError(f"{DAMAGED}: its step {k} is not a page and its settings.")
    page, query = step["page"], step["query"]
    by_path = {p.url_path: p for p in pages} | ({"": pages[0]} if pages else {})
    if not isinstance(page, str) or page not in by_path:
        raise LessonError(f"{DAMAGED}: its step {k} names no page of this app.")
    info = by_path[page]
    if (
        not isinstance(query, dict)
        or len(query) > room.MAX_QUERY_KEYS
        or not all(isinstance(v, str) and len(v) <= room.MAX_VALUE for v in query.values())
    ):
        raise LessonError(f"{DAMAGED}: step {k}'s settings ({info.title}) are not a link's.")
    unknown = sorted(set(query) - set(info.keys(devices)))
    if unknown:
        raise LessonError(
            f"{DAMAGED}: step {k} ({info.title}) has {len(unknown)} setting(s) the page does "
            "not have. Open the lesson the presenter gave you, or record it again."
        )
    for schema in info.schemas(devices):
        _, notes = schema.from_query(query)
        if notes:
            said = notes[0].split(" Using the default")[0]
            raise LessonError(f"{DAMAGED}: step {k} ({info.title}): {said}")
    return room.Step(page, tuple(sorted(query.items())))
