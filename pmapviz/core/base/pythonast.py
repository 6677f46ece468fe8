"""Python's own parser, one thread at a time. CPython 3.11 (3.11.7 here) keeps the depth count
of its AST conversion in the interpreter, not the thread: two threads in ``ast.parse`` at once
(a garbage collection inside one lets the other run) can make either raise ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905). On a server that is one
session parsing your own f while another's first visit makes Streamlit parse a page script:
the hostile-links test met it as "this page ran into an unexpected problem" on the explorer,
about one run in six. Every parse in this process goes through :data:`LOCK`: pmapviz's own
(:func:`parse`), and Streamlit's of the app's scripts, whenever it compiles them again
(``pmapviz.app.ui.page_code.guard``).
"""

from __future__ import annotations

import ast
import threading

LOCK = threading.Lock()


def parse(text: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(text, mode=mode)``, while no other thread of this process parses."""
    with LOCK:
        return ast.parse(text, mode=mode)
