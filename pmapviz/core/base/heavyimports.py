"""Heavy libraries and start-up work, once per process.

1. **One import rule: pandas is whole before any page runs.** Plotly peeks at
   ``sys.modules["pandas"]`` while it validates a figure's data; a pandas still being imported
   by another thread is in ``sys.modules`` half made, and Plotly then failed with "partially
   initialised module 'pandas'" (a page's first chart while a warm-up imported pandas in the
   background: ``tests/pages/test_live_and_collectives.py::test_every_collective_renders``
   alone failed 3 runs of 3). So nothing imports pandas in the background: :func:`ready`
   imports it under one lock, and the dashboard calls it before every page (a no-op once
   done), ``pmapviz serve`` before the server takes requests, and every table and the
   notebook views through :func:`pandas`. It costs ~0.4 s once, on a process's first page
   (``streamlit run``) or its start (``pmapviz serve``); the first page starts it in a thread
   (:func:`begin`) while JAX starts, and waits for it before any page code runs.
2. **The start-up heap leaves the garbage collector's view.** Streamlit's full
   ``gc.collect(2)`` after every script run (``runner.postScriptGC``) is off in this app's
   server settings (a room of followers polling ran 60 a second and stalled the server), but
   Python's own generation-2 collections still walk every long-lived object: with JAX,
   Streamlit, Plotly and pandas loaded, ~180,000 of them, 30-100 ms of CPU each time.
   ``gc.freeze()`` moves every object alive now (modules, classes, JAX's tables) to a
   permanent generation that collections skip; objects created later are still
   collected after each run, so a run's reference cycles are freed as before. It runs in the
   background after the first page (:func:`start`), and imports nothing.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from types import ModuleType

HEAVY = ("pandas",)  # imported by ready(), whole, before any page runs
_IMPORT = threading.Lock()  # held for the whole import: a second caller waits for a whole module
_READY = threading.Event()
_START = threading.Lock()
_started: list[threading.Thread] = []
_begun: list[threading.Thread] = []


def ready() -> None:
    """Every module of :data:`HEAVY` imported whole (the first caller imports them; callers
    meanwhile wait; afterwards this returns at once)."""
    if _READY.is_set():
        return
    with _IMPORT:
        for name in HEAVY:
            importlib.import_module(name)
        _READY.set()


def begin() -> threading.Thread | None:
    """:func:`ready`'s import started in a thread of its own, while the caller starts JAX (whose
    backend starts in native code, beside it), once per process; the caller still calls
    :func:`ready` before any page code runs, which waits for the import to end. None where it
    is done or under way."""
    with _START:
        if _READY.is_set() or _IMPORT.locked() or _begun:
            return None
        thread = threading.Thread(target=ready, name="pmapviz-import-pandas", daemon=True)
        _begun.append(thread)
    thread.start()
    return thread


def pandas() -> ModuleType:
    """pandas, whole."""
    ready()
    return sys.modules["pandas"]


def freeze_start_up_heap() -> int:
    """Collect what is garbage now, then freeze every object still alive (see the module's
    docstring). Returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def start(delay_s: float = 0.0) -> threading.Thread | None:
    """Freeze the start-up heap in a daemon thread, once per process,
    ``delay_s`` seconds from now (the page that called this is sent first). Returns the thread
    this call started, or None if an earlier call started one."""
    with _START:
        if _started:
            return None
        thread = threading.Timer(delay_s, freeze_start_up_heap)
        thread.name, thread.daemon = "pmapviz-heavyimports", True
        _started.append(thread)
    thread.start()
    return thread
