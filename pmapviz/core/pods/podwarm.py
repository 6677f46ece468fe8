"""A pod compile made before anyone asks (a server warming the Pods page's default at start),
and a page's wait for it.

:func:`start` runs ``podcompile.compile_for`` in a thread of its own: like the page's compile,
it holds :data:`podcompile.COMPILE_BYTES` of the server's memory pool and takes the compile
turn, and its report is kept for the next ``compile_for`` of the same program. A page that asks
for that program while it compiles :func:`wait` s for it instead of compiling it a second time
beside it (two compiles of one program on two cores: each as slow as both). A warm-up that
fails says nothing: the page compiles again and says why.
"""

from __future__ import annotations

import threading

from pmapviz.core.pods import podcompile
from pmapviz.core.pods.podprograms import PodProgram

WAIT_S = 120.0  # a page waits at most this long for a warm-up's compile, then compiles itself
_LOCK = threading.Lock()
_FLIGHTS: dict[tuple, threading.Event] = {}  # in flight or done, once per process and program


def key(program: PodProgram, topology: str) -> tuple:
    """What a warm-up and a page's request are matched by."""
    return (program.key, program.label, program.batch, topology)


def start(program: PodProgram, topology: str) -> threading.Thread | None:
    """``program`` compiled for ``topology`` in a thread of its own, once per process (None if
    it was started before). Not a daemon: a stop ends it with the server
    (``stopping.end_everything_at_exit``), never halfway through the interpreter's exit."""
    with _LOCK:
        if key(program, topology) in _FLIGHTS:
            return None
        done = _FLIGHTS[key(program, topology)] = threading.Event()

    def compile_it() -> None:
        try:
            podcompile.compile_for(program, topology)
        except Exception:  # noqa: BLE001, S110  (the page compiles it again and says why)
            pass
        finally:
            done.set()

    thread = threading.Thread(target=compile_it, name="pmapviz-pod-warm-up")
    thread.start()
    return thread


def wait(program: PodProgram, topology: str, timeout_s: float = WAIT_S) -> bool:
    """Until a warm-up's compile of ``program`` for ``topology`` has ended (at once if there is
    none). Whether one was waited for."""
    with _LOCK:
        done = _FLIGHTS.get(key(program, topology))
    if done is None or done.is_set():
        return False
    return done.wait(timeout_s)
