"""Streamlit's compiled page scripts, made once per process before any page runs, under
:data:`pmapviz.core.base.pythonast.LOCK`. Streamlit compiles a page's script on its first visit
(``ast.parse``, for its "magic"), which on CPython 3.11 must not meet another thread's parse
(see :mod:`pmapviz.core.base.pythonast`); made here first, every later visit reads the compiled
script from Streamlit's cache and parses nothing.
"""

from __future__ import annotations

from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from pmapviz.core.base import pythonast

_WARMED: set[str] = set()  # page script paths compiled by this process (under the lock)


def warm(paths: list[str]) -> int:
    """Compile each page script not compiled yet into Streamlit's cache (the one its runs
    read), all under the parser's lock; how many were compiled now. Outside a script run (no
    context), nothing."""
    if _WARMED.issuperset(paths):  # every run after the first: no lock taken
        return 0
    manager = getattr(get_script_run_ctx(), "pages_manager", None)
    if manager is None:
        return 0
    done = 0
    with pythonast.LOCK:  # also makes a second session's first run wait for the first's
        for path in paths:
            if path not in _WARMED:
                manager.get_page_script_byte_code(path)
                _WARMED.add(path)
                done += 1
    return done
