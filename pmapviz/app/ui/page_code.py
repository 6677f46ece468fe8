"""Streamlit's parses of the app's scripts, under :data:`pmapviz.core.base.pythonast.LOCK`.
Streamlit parses a script (``ast.parse``, for its "magic") each time it compiles one: app.py and
each page on its first run, and all of them again after it drops its compiled scripts, which it
does whenever the last session leaves (``WebsocketSessionManager``) or a file changes. On
CPython 3.11 such a parse must not meet another thread's (see :mod:`pmapviz.core.base.pythonast`),
so :func:`guard` makes every one of them take the lock that pmapviz's own parses take.
"""

from __future__ import annotations

from streamlit.runtime.scriptrunner import magic

from pmapviz.core.base import pythonast

_GUARDED = "_pmapviz_under_parser_lock"


def guard() -> bool:
    """From now on in this process, Streamlit parses a script only while holding the parser's
    lock; True when this call put the guard in place (once a process: every later call finds
    it). The first run's compile of app.py comes before it, when no other parse can run."""
    if getattr(magic.add_magic, _GUARDED, False):
        return False
    streamlits = magic.add_magic

    def add_magic(code: str, script_path: str):
        with pythonast.LOCK:
            return streamlits(code, script_path)

    setattr(add_magic, _GUARDED, True)
    magic.add_magic = add_magic
    return True
