"""Start-up work the first page does not need: done once per process, in the background, after
the first page has been drawn.

1. **pandas.** It takes ~0.3 s to import on a 2-core machine, about a tenth of a cold start,
   and only tables need it (Streamlit imports it lazily inside ``st.dataframe`` and
   ``st.table``). Two sessions importing it at once from their own script threads raced (a
   partially initialised module, seen by ``benchmarks/load.py``), so every import of pandas in
   this process goes through one lock: :func:`pandas`, called by ``ui.tables.show`` and
   ``ui.tables.static`` before Streamlit converts anything.
2. **The start-up heap leaves the garbage collector's view.** Streamlit runs a full
   ``gc.collect(2)`` after every script run, fragments included (``runner.postScriptGC``).
   With JAX, Streamlit, Plotly and pandas loaded, that walks ~180,000 long-lived objects:
   30-100 ms of CPU per explorer edit, more than the edit itself, on a machine whose two cores
   the browser shares. ``gc.freeze()`` moves every object alive now (modules, classes, JAX's
   tables) to a permanent generation that collections skip; objects created later are still
   collected after each run, so a run's reference cycles are freed as before.
"""

from __future__ import annotations

import gc
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


def freeze_start_up_heap() -> int:
    """Collect what is garbage now, then freeze every object still alive (see the module's
    docstring). Returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _warm() -> None:
    pandas()
    freeze_start_up_heap()


def start(delay_s: float = 0.0) -> threading.Thread | None:
    """Import pandas, then freeze the start-up heap, in a daemon thread, once per process,
    ``delay_s`` seconds from now (the page that called this is sent first). Returns the thread
    this call started, or None if an earlier call started one."""
    with _START:
        if _started:
            return None
        thread = threading.Timer(delay_s, _warm)
        thread.name, thread.daemon = "pmapviz-heavyimports", True
        _started.append(thread)
    thread.start()
    return thread
