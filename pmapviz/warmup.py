"""Imports the first page does not need: done once per process, in the background, after the
first page has been drawn, and waited for by whatever needs them.

pandas takes ~0.3 s to import on a 2-core machine, about a tenth of a cold start, and only
tables need it (Streamlit imports it lazily inside ``st.dataframe`` and ``st.table``). Two
sessions importing it at once from their own script threads raced (a partially initialised
module, seen by ``benchmarks/load.py``), so every import of pandas in this process goes
through one lock: :func:`pandas`, called by ``ui.dataframe`` and ``ui.table`` before Streamlit
converts anything.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_IMPORT = threading.Lock()  # held for the whole import: a second caller waits for a whole module
_START = threading.Lock()
_started: list[threading.Thread] = []


def pandas() -> ModuleType:
    """pandas, fully imported (waits for a background import under way)."""
    with _IMPORT:
        return importlib.import_module("pandas")


def start(delay_s: float = 0.0) -> threading.Thread | None:
    """Import pandas in a daemon thread, once per process, ``delay_s`` seconds from now (so the
    page that called this is sent first). Returns the thread this call started, or None if an
    earlier call started one."""
    with _START:
        if _started:
            return None
        thread = threading.Timer(delay_s, pandas)
        thread.name, thread.daemon = "pmapviz-warmup", True
        _started.append(thread)
    thread.start()
    return thread
