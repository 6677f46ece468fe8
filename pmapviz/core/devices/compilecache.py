"""JAX's persistent compilation cache: where compiled programs are kept between processes, so a
restarted server and the CLI do not compile the same programs again.

On by default in a per-user folder (``$XDG_CACHE_HOME/pmapviz/jax``, else
``~/.cache/pmapviz/jax``); ``--compile-cache DIR`` or ``PMAPVIZ_COMPILE_CACHE=DIR`` names
another, ``off`` turns it off. Every program is kept however fast it compiled (JAX's default
keeps only those over a second, which none of pmapviz's are), and its source lines are part of
the key, so the Compiled page never shows a line from an older copy of the code. The Timing lab
compiles programs named afresh (:func:`renamed`) and keeps them out of the cache
(:func:`kept_out`): its compile column is a compile. JAX
bounds the folder's size only with the ``filelock`` package, which pmapviz does not require:
programs here are kilobytes each; delete the folder to empty it.

Faults of the disk: a folder that cannot be made or written, or a disk with less than 64 MiB
free, keeps the cache off with one line saying why and what to do (:func:`enable`, shown by the
sidebar, ``devices`` and ``doctor``). Once on, JAX itself survives a failed write (a disk that
fills: the entry may be left cut short) and a damaged entry (read, found broken, compiled
afresh), but warns in two lines for every program and keeps the damaged entry, so every
later process fails on it again. Here each is said once in one line on stderr (:func:`note`
keeps it), the damaged entries are removed, and after a failed write nothing more is written.

JAX is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import re
import shutil
import sys
import tempfile
import threading
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from pmapviz.core.base.pathparse import parse_new_folder

ENV = "PMAPVIZ_COMPILE_CACHE"
_FRESH = itertools.count()
FLAG = "--compile-cache"
OFF = ("off", "none", "no", "0", "false")
MIN_FREE_BYTES = 64 * 2**20  # less free than this on the cache's disk: a full disk, cache off
PROBE_BYTES = 4096  # the small file written and removed to find whether the folder takes one
FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame's first bytes
MAX_CHECKED = 20_000  # entries read to find damaged ones, once per process at the first fault
STOPPED = 1e9  # the minimum compile time once writing failed: nothing is kept any more
_STATE: dict = {"folder": None, "note": None, "later": None}
_SAID: set[str] = set()  # "writing", "reading": each said once per process
_LOCK = threading.Lock()


def default_folder(env: dict[str, str] | os._Environ = os.environ) -> str:
    """The per-user cache folder: ``$XDG_CACHE_HOME/pmapviz/jax``, else ``~/.cache/...``."""
    base = env.get("XDG_CACHE_HOME", "").strip() or str(Path("~/.cache").expanduser())
    return str(Path(base) / "pmapviz" / "jax")


def parse(text: str | None, name: str, env: dict[str, str] | os._Environ = os.environ):
    """``--compile-cache`` / ``PMAPVIZ_COMPILE_CACHE`` as typed -> the folder (absolute), or
    None for off; empty or absent: :func:`default_folder`. SettingError names a bad path."""
    raw = (text or "").strip()
    if raw.lower() in OFF:
        return None
    if not raw:
        return default_folder(env)
    return parse_new_folder(raw, name)


def enable(folder: str | None, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Point JAX's persistent cache at ``folder`` (None: leave it off); call before the first
    compile. Returns a one-line note for the user when the folder cannot be made, cannot be
    written or sits on a full disk (:func:`folder_problem`): the cache then stays off. Later
    write or read failures (the disk fills, an entry is damaged) are said once each on stderr
    (:func:`note` keeps the line), never as JAX's warning per program."""
    _STATE.update(folder=None, note=None, later=None)
    if folder is None:
        return None
    problem = folder_problem(folder, min_free)
    if problem:
        _STATE["note"] = (
            f"JAX's compilation cache is off: {problem}; give another folder with {FLAG} DIR "
            f"(or {ENV}=DIR), or {FLAG} off."
        )
        return _STATE["note"]
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_include_metadata_in_key", True)
    _STATE["folder"] = folder
    _watch_jax_warnings()
    return None


def folder_problem(folder: str, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Why JAX could not keep programs in ``folder``, in words (None: it can): the folder
    cannot be made, a small file cannot be written and removed in it (not writable, a full
    disk or quota), or its disk has less than ``min_free`` bytes free."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        return f"{folder} cannot be made ({err.strerror or err})"
    try:
        _probe(folder)
    except OSError as err:
        why = err.strerror or str(err)
        if err.errno in FULL_DISK:
            return f"{folder} is on a full disk ({why})"
        return f"{folder} is not writable ({why})"
    try:
        free = shutil.disk_usage(folder).free
    except OSError as err:
        return f"{folder} cannot be checked ({err.strerror or err})"
    if free < min_free:
        return (
            f"{folder} is on a full disk ({free / 2**20:.1f} MiB free; it needs at least "
            f"{min_free / 2**20:.0f} MiB)"
        )
    return None


def _probe(folder: str) -> None:
    """Write and remove a small hidden file in ``folder``; OSError where it cannot. Not
    flushed to the disk (``fsync`` cost 50 ms at every start here): a full local disk
    refuses the write itself, and :func:`folder_problem` checks the free space besides."""
    fd, path = tempfile.mkstemp(dir=folder, prefix=".pmapviz-probe-", suffix=".tmp")
    try:
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
        finally:
            os.close(fd)
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)


def note() -> str | None:
    """The one line that says the cache is off or failing, and why (the start-up's, else the
    first later failure's); None while it works or is off on request."""
    return _STATE["later"] or _STATE["note"]


def summary() -> str:
    """The cache in one line (the doctor's report): on, in which folder, with how many
    programs; off on request; or off or failing, and why (:func:`note`)."""
    if note():
        return note()
    folder = _STATE["folder"]
    if folder is None:
        return f"JAX's compilation cache is off ({FLAG} off or {ENV}=off)."
    try:
        kept = sum(1 for name in os.listdir(folder) if name.endswith("-cache"))
    except OSError as err:
        return f"JAX's compilation cache in {folder} cannot be listed ({err.strerror or err})."
    return f"JAX's compilation cache is on: {folder} ({kept} program(s) kept)."


_JAX_CACHE_WARNING = re.compile(
    r"Error (?P<verb>reading|writing) persistent compilation cache entry for "
    r"'(?P<module>[^']*)': (?P<error>.*)",
    re.DOTALL,
)


def _watch_jax_warnings() -> None:
    """Route JAX's cache warnings (one per program, each two lines, on every compile while
    the disk is full or an entry damaged) to :func:`_on_cache_warning`: one line per kind
    of failure per process. Every other warning is shown as before. Installed once."""
    shown = warnings.showwarning
    if getattr(shown, "_pmapviz_cache", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        found = _JAX_CACHE_WARNING.match(str(message))
        if found is None:
            return shown(message, category, filename, lineno, file, line)
        said = _on_cache_warning(found["verb"], found["error"])
        if said:
            print(f"pmapviz: {said}", file=sys.stderr, flush=True)
        return None

    show._pmapviz_cache = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def _on_cache_warning(verb: str, error: str) -> str | None:
    """A failed cache write or read, from JAX's warning text: the line to say, the first
    time for each of the two (None after). Either way the entries JAX cannot read (cut short
    by a full disk, overwritten) are removed, so later processes miss them and compile
    afresh instead of failing on them again. After a failed write, nothing more is written
    in this process (a full disk would cut every later entry short too); reads go on."""
    folder = _STATE["folder"] or "the cache folder"
    with _LOCK:
        if verb in _SAID:
            return None
        _SAID.add(verb)
    removed = remove_damaged(folder)
    if verb == "writing":
        _stop_writing()
        code, why = _reason(error)
        cut = " (the entry it cut short was removed)" if removed else ""
        fix = "free space there" if code in FULL_DISK else f"make {folder} writable"
        line = (
            f"JAX's compilation cache stopped keeping programs: writing to {folder} failed "
            f"({why}){cut}; programs are compiled afresh; {fix}, or start with {FLAG} DIR or "
            f"{FLAG} off."
        )
    elif removed:
        line = (
            f"JAX's compilation cache had {removed} damaged entr{'y' if removed == 1 else 'ies'}"
            f" in {folder}: removed, and compiled afresh; the cache works on."
        )
    else:
        line = (
            f"JAX's compilation cache has a damaged entry in {folder} (it could not be read): "
            f"that program was compiled afresh; delete {folder} to empty the cache."
        )
    _STATE["later"] = _STATE["later"] or line
    return line


def remove_damaged(folder: str, limit: int = MAX_CHECKED) -> int:
    """Remove the entries of ``folder`` that JAX could not read (their compressed data is
    cut short or not JAX's): each is read and decompressed as JAX would, at most ``limit``
    of them. Returns how many were removed (0 where JAX's reader is not where this JAX
    version had it). Removing an entry only ever costs a compile."""
    try:
        from jax._src.compilation_cache import decompress_executable  # private: checked
    except ImportError:
        return 0
    removed = 0
    with contextlib.suppress(OSError):
        names = [n for n in os.listdir(folder) if n.endswith("-cache")][:limit]
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as entry:
                    data = entry.read()
            except OSError:
                continue  # gone meanwhile, or unreadable: JAX would say so itself
            if _damaged(data, decompress_executable):
                with contextlib.suppress(OSError):
                    os.remove(path)
                    removed += 1
    return removed


def _damaged(data: bytes, decompress: Callable[[bytes], bytes]) -> bool:
    """Whether no JAX could read this entry: not this JAX (``decompress``), nor a JAX that
    compresses the other way (zlib, or a zstd frame: a folder shared by two environments
    keeps both, under keys of their own)."""
    for read in (decompress, zlib.decompress):
        try:
            read(data)
        except Exception:  # noqa: BLE001, S112 - zlib.error, zstd's: whatever cannot be read
            continue
        return False
    return not data.startswith(ZSTD_MAGIC)


def _reason(error: str) -> tuple[int | None, str]:
    """``OSError: [Errno 28] No space left on device`` -> ``(28, "No space left on device")``;
    without an errno, its words after the type."""
    found = re.search(r"\[Errno (\d+)\]", error)
    if found:
        return int(found[1]), os.strerror(int(found[1]))
    text = error.split(": ", 1)[-1].strip()
    return None, (text.splitlines()[0][:120] if text else "an error")


def _stop_writing() -> None:
    """No more cache writes in this process: every program now counts as too quick to keep
    (a thread inside :func:`kept_out` keeps its own setting until it leaves)."""
    import jax

    jax.config.update("jax_persistent_cache_min_compile_time_secs", STOPPED)


def folder_in_use() -> str | None:
    """The folder JAX keeps compiled programs in now, or None when the cache is off."""
    import jax

    return jax.config.jax_compilation_cache_dir or None


def renamed(fn: Callable) -> Callable:
    """``fn`` under a name of its own: the persistent cache keys a program by its text, names
    included, so this one misses it and compiling it is a compile (the Timing lab's compile
    column). JAX's choice to use the cache is made once per process, so a switch per thread
    (``jax_enable_compilation_cache``) could not do this."""
    fresh_name = f"{getattr(fn, '__name__', 'f')}_fresh{next(_FRESH)}"

    @functools.wraps(fn)
    def fresh(*args, **kwargs):
        return fn(*args, **kwargs)

    fresh.__name__ = fresh.__qualname__ = fresh_name
    return fresh


@contextlib.contextmanager
def kept_out() -> Iterator[None]:
    """In this thread, compiled programs are not written to the persistent cache (a
    measurement's one-off programs, :func:`renamed`, would only fill it)."""
    from jax._src import config

    with config.persistent_cache_min_compile_time_secs(1e9):
        yield
