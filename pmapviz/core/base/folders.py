"""Bounded folder walks: what a path typed on a command line or a report name may look at.

A walk goes level by level from its root, never through a linked folder (which may lead out,
or loop), and stops at a depth, a count of entries and a number of seconds, saying which
(``trace /`` answers within seconds; a reports folder lists a bounded number of files).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Walk:
    """How far a walk went: entries looked at, levels opened, and why it stopped early (None
    when it saw every entry down to its depth)."""

    looked: int = 0
    levels: int = 0
    stopped: str | None = None


def entries(
    root: str, walk: Walk, depth: int, most: int, seconds: float = math.inf
) -> Iterator[os.DirEntry]:
    """Every entry under ``root``, level by level, at most ``depth`` levels down, ``most``
    entries and ``seconds`` seconds in all; ``walk`` (updated as it goes) says how far."""
    deadline = time.monotonic() + seconds
    folders = [root]
    while folders:
        if walk.levels == depth:
            walk.stopped = f"it looks {depth} levels down at most"
            return
        walk.levels, deeper = walk.levels + 1, []
        for folder in folders:
            try:
                with os.scandir(folder) as listing:
                    for entry in listing:
                        if walk.looked >= most:
                            walk.stopped = "the most it looks at"
                            return
                        if time.monotonic() > deadline:
                            walk.stopped = f"it looks for {seconds:g} s at most"
                            return
                        walk.looked += 1
                        yield entry
                        if own_folder(entry):
                            deeper.append(entry.path)
            except OSError:
                continue  # unreadable: nothing there
        folders = deeper


def own_folder(entry: os.DirEntry) -> bool:
    """A real subfolder, not a link to one (which may lead out, or loop)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def is_file(entry: os.DirEntry) -> bool:
    """A file, or a link to one (False for a link that loops or leads nowhere)."""
    try:
        return entry.is_file()
    except OSError:
        return False
