"""Streamlit's compiled page scripts, made once per process before any page runs, under
:data:`pmapviz.core.base.pythonast.LOCK`. Streamlit compiles a page's script on its first visit
(``ast.parse``, for its "magic"), which on CPython 3.11 must not meet another thread's parse
(see :mod:`pmapviz.core.base.pythonast`); made here first, every later visit reads the compiled
script from Streamlit's cache and parses nothing.
"""

from __future__ import annotations

import threading

from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from pmapviz.core.base import pythonast

_WARMED: set[str] = set()  # page script paths compiled by this process
_TURN = threading.Lock()


def warm(paths: list[str]) -> int:
    """Compile each page script not compiled yet into Streamlit's cache (the one its runs
    read); how many were compiled now. Outside a script run (no context), nothing."""
    ctx = get_script_run_ctx()
    manager = getattr(ctx, "pages_manager", None)
    if manager is None:
        return 0
    done = 0
    with _TURN:
        for path in paths:
            if path in _WARMED:
                continue
            with pythonast.LOCK:
                manager.get_page_script_byte_code(path)
            _WARMED.add(path)
            done += 1
    return done
