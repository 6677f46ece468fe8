"""Paths a person names (a folder to read, a file to write), checked before any work starts,
each refusal one line that says what to do instead."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import quote

MAX_PATH = 4096


def _path_text(text: Any, name: str) -> str:
    raw = str(text if text is not None else "").strip()
    if not raw or len(raw) > MAX_PATH or any(not ch.isprintable() for ch in raw):
        raise SettingError(
            f"{name} {quote(raw)} is not a path: give a file or folder name "
            f"({MAX_PATH} characters at most, no control characters)."
        )
    return raw


def parse_folder(text: Any, name: str) -> str:
    """An existing folder (e.g. the reports folder named at start-up) -> its absolute path."""
    path = Path(_path_text(text, name)).expanduser()
    if not path.is_dir():
        raise SettingError(f"{name} {quote(str(path), 80)} is not an existing folder.")
    return str(path.resolve())


def parse_new_folder(text: Any, name: str) -> str:
    """A folder to keep files in, made when first used (e.g. a cache) -> its absolute path;
    refused when something that is not a folder is already there."""
    path = Path(_path_text(text, name)).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise SettingError(f"{name} {_path_shown(path)} is a file: name a folder.")
    return str(path)


def _path_shown(path: Any, limit: int = 100) -> str:
    """A path as inline code (see :func:`quote`), its end kept: the file name says the most."""
    s = str(path)
    return quote(s if len(s) <= limit else "..." + s[-limit:], limit + 3)


def parse_output_path(text: Any, name: str, example: str = "report.json") -> Path:
    """A file to write (e.g. ``--report PATH``) -> its ``Path``, checked before any work starts:
    not a folder (``example`` is the file name suggested inside it), not a link that loops, an
    existing file writable, a new one's folder existing and writable. ``-`` (stdout) is the
    caller's to handle. Writing can still fail later (a full disk): callers catch OSError."""
    path = Path(_path_text(text, name)).expanduser()
    shown = f"{name} {_path_shown(path)}"
    try:
        problem = _output_problem(path, example)
    except OSError as err:  # e.g. a folder on the way that this user may not look into
        problem = f" cannot be checked ({err.strerror}): name a file in a folder you can write to."
    if problem:
        raise SettingError(shown + problem)
    return path


def _output_problem(path: Path, example: str) -> str | None:
    """What keeps ``path`` from being written, said after the flag and path; None if nothing."""
    real = Path(os.path.realpath(path))  # where the write lands, through any links
    if real.is_dir():
        return f" is a folder: give a file name inside it, e.g. {_path_shown(path / example)}."
    try:
        real.stat()
    except OSError as err:
        if err.errno == errno.ELOOP:
            return " is a link that loops: name another file."
    if real.exists():
        if not os.access(real, os.W_OK):
            return (
                " exists and is not writable by this user: make it writable (chmod u+w) "
                "or name another file."
            )
        return None
    folder = real.parent
    if not folder.exists():
        return (
            f": its folder does not exist: create {_path_shown(folder)} first, or name a "
            "file in a folder that exists."
        )
    if not folder.is_dir():
        return f": {_path_shown(folder)} is a file, not a folder: name a file inside a folder."
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f": its folder {_path_shown(folder)} is not writable by this user: name a file "
            "in a folder you can write to."
        )
    return None
