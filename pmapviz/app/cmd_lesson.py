"""``python -m pmapviz lesson``: a workshop's lesson file (the replay an attendee opens on the
Guided tour), written from a recorded path and read back.

``pmapviz lesson --out FILE --links PATH`` writes the lesson of a path given as links, one a
line (``/tour?step=4``, ``/explorer?fn=add&s0=8,3``: what "Share this view" gives), or
``--link LINK`` repeated; ``pmapviz lesson FILE`` reads one and prints each step's link. Every
step is checked through its page's schemas, as a link is; a file from another version, or one
that was changed, is one line on stderr and exit status 2. It lives with the app because it
reads every page's schemas (:mod:`pmapviz.app.page_registry`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from pmapviz.app import page_registry
from pmapviz.core.base import atomicfile, pathparse, room
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import _settings, _start
from pmapviz.features.exercises import lessonfile
from pmapviz.features.exercises.lessonfile import LessonError


def _lesson_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("lesson", nargs="?", help="a lesson file to read back: each step's link")
    p.add_argument("--out", metavar="FILE", help="write the lesson of the path given (-: stdout)")
    p.add_argument(
        "--links", metavar="PATH", help="the recorded path: a text file, one link a line"
    )
    p.add_argument(
        "--link", action="append", default=[], metavar="LINK", help="one step's link (repeat)"
    )


def cmd_lesson(args: argparse.Namespace) -> int:
    """Write a lesson (--out) from links, or read one back (its steps' links)."""
    if bool(args.out) == bool(args.lesson):
        raise LessonError("Give a lesson file to read, or --out FILE with the path's links.")
    if args.lesson:
        lesson = lessonfile.read(_read(args.lesson), page_registry.PAGES)
        if args.json:
            print(json.dumps(lesson.to_dict(), indent=2))
        else:
            print(
                f"A lesson of {len(lesson.steps)} step(s), recorded on {lesson.devices} device(s):"
            )
            for k, step in enumerate(lesson.steps, start=1):
                print(f"{k:>3}. {link_of(step)}")
        return 0
    _start(_settings(args), args)
    links = (_read(args.links).decode(errors="replace").splitlines() if args.links else []) + list(
        args.link
    )  # the path's file first, then each --link
    steps = [step_of(link) for link in links if link.strip()]
    if not steps:
        raise LessonError("No steps: give the path's links with --links PATH or --link LINK.")
    made = lessonfile.Lesson(tuple(steps), devicefacts.facts().local_count)
    text = lessonfile.read(made.to_text(), page_registry.PAGES).to_text()  # checked as read
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    target = pathparse.parse_output_path(args.out, "--out", "lesson.json")
    try:
        atomicfile.write_text(target, text)
    except atomicfile.NotWritten as err:  # checked before; a full disk now
        raise LessonError(f"The lesson was not written: {err}") from err
    print(f"wrote a lesson of {len(steps)} step(s) to {target}")
    return 0


def step_of(link: str) -> room.Step:
    """A step from a link as "Share this view" gives it (scheme and host are ignored)."""
    parts = urlsplit(link.strip())
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return lessonfile.own_step(room.Step.of(parts.path.strip("/"), query))


def link_of(step: room.Step) -> str:
    """A step's link, as it opens its page."""
    query = urlencode(step.query_dict())
    return f"/{step.page}" + (f"?{query}" if query else "")


def _read(name: str) -> bytes:
    """A file's first bytes, enough to tell a lesson that is too long."""
    path = Path(name)
    try:
        with path.open("rb") as f:
            return f.read(lessonfile.MAX_BYTES + 1)
    except OSError as err:
        raise LessonError(f"Cannot read {name}: {err.strerror or err}.") from err
