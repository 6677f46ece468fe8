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

JAX is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pmapviz.core.base.pathparse import parse_new_folder

ENV = "PMAPVIZ_COMPILE_CACHE"
_FRESH = itertools.count()
FLAG = "--compile-cache"
OFF = ("off", "none", "no", "0", "false")


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


def enable(folder: str | None) -> str | None:
    """Point JAX's persistent cache at ``folder`` (None: leave it off); call before the first
    compile. Returns a note for the user when the folder cannot be made (the cache stays off)."""
    if folder is None:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        return f"JAX's compilation cache is off: {folder} cannot be made ({err.strerror})."
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_include_metadata_in_key", True)
    return None


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
