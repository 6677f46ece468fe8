"""A file written whole or not at all: the text goes to a temporary file beside the target
(``.NAME.XXXXXXXX.tmp``, hidden), is flushed to the disk, then renamed over the target in one
step (``os.replace``). A full disk, a folder that went away or a process killed halfway leaves
the previous file as it was (or no file where there was none), never half a file.

A process killed in the middle (SIGKILL, a power cut) can leave its hidden temporary file
beside the target: its name says what it was (``.bench.json.k3x9q1ab.tmp``), nothing of
pmapviz reads it, and deleting it is safe. Any other failure removes it before
:class:`NotWritten` is raised. A device or a pipe named as the file (``/dev/stdout``) is
written in place: it cannot be replaced, and has no previous file to keep.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

CHUNK = 1 << 20  # bytes per os.write: a large report is written in pieces, each checked
TEMP_SUFFIX = ".tmp"

_FIXES = {
    errno.ENOSPC: "free some space there or name a file on another disk",
    errno.EDQUOT: "free some of your quota or name a file on another disk",
    errno.EFBIG: (
        "it is over the file size limit (ulimit -f) or the disk's: raise it or use another disk"
    ),
    errno.EROFS: "name a file on a disk that can be written",
    errno.EACCES: "name a file in a folder you can write to",
    errno.EPERM: "name a file in a folder you can write to",
    errno.ENOENT: "its folder is gone: create it again or name another file",
}


class NotWritten(OSError):
    """A file that was not written: which, why, what is left of the previous one, the fix.
    ``str()`` is one line for the user (callers prefix the flag that named the file)."""

    def __init__(self, path: Path, cause: OSError, had_previous: bool):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path, self.cause, self.had_previous = path, cause, had_previous

    def __str__(self) -> str:
        kept = "the previous file is intact" if self.had_previous else "there was no previous file"
        fix = _FIXES.get(self.errno or 0, "try again or name another file")
        return f"{self.path} was not written ({self.strerror}): {kept}; {fix}."


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` whole or not at all (see the module). Returns the file
    written; raises :class:`NotWritten` (an OSError) and leaves the previous file intact."""
    return write_bytes(path, text.encode(encoding))


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all: a temporary file in the same folder,
    flushed (``os.fsync``), renamed into place. A link is followed (its target is replaced);
    the file keeps the previous file's permissions, or gets the usual ones (0666 less the
    umask) where it is new. Raises :class:`NotWritten` with the previous file intact."""
    target = Path(os.path.realpath(Path(path).expanduser()))
    had_previous = target.exists()
    if had_previous and not target.is_file():  # /dev/null, a pipe: a stream, not replaced
        return _write_in_place(Path(path), target, data)
    try:
        fd, temp = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX
        )
    except OSError as err:
        raise NotWritten(Path(path), err, had_previous) from err
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
            os.fchmod(fd, _mode_for(target))
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise NotWritten(Path(path), err, had_previous) from err
    except BaseException:  # KeyboardInterrupt, SystemExit: no temporary file left either
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise
    _sync_folder(target.parent)
    return Path(path)


def _write_in_place(path: Path, target: Path, data: bytes) -> Path:
    """A device or a pipe (``--json /dev/stdout``) is written as it is: renaming a file over
    it would replace the device itself. It has no previous content to keep."""
    try:
        fd = os.open(target, os.O_WRONLY)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as err:
        raise NotWritten(path, err, had_previous=False) from err
    return path


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (``os.write`` may write fewer than asked)."""
    view = memoryview(data)
    while view:
        done = os.write(fd, view[:CHUNK])
        if done <= 0:  # a disk that takes nothing without saying why
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        view = view[done:]


def _mode_for(target: Path) -> int:
    """The previous file's permissions, else 0666 less the umask (mkstemp makes 0600)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """This process's umask, read without changing it where Linux says it (os.umask can only
    be read by setting it, which another thread could see)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (the folder's entry); not possible everywhere."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
