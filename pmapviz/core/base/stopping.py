"""Stop means stop: a process asked to end (SIGTERM, Ctrl-C) ends, with every process it
started, within seconds, whatever it was computing.

Why it did not: Streamlit's signal handler stops the server and returns from its main
thread, and then Python waits, before anything else, for every non-daemon thread, the
script thread of a run in the middle of a JAX computation included (66 s for a live run of
your own f). The sandbox worker and the cluster's processes, children of the server, were
to be stopped by ``atexit`` handlers, which run only after that wait: 5 s after SIGTERM the
server and its worker were both alive. A CLI command killed by SIGTERM, which Python does not
handle by default, died at once and left its children orphaned.

So: :func:`end_everything_at_exit` hooks the interpreter's shutdown at its first step, before
the wait for threads (``threading._register_atexit``, what ``concurrent.futures`` uses to
stop its workers): every child process is ended (SIGTERM, then SIGKILL after a second), and
if a thread would still hold the process, it ends now (``os._exit``) once the output is
flushed. :func:`sigterm_as_interrupt` makes SIGTERM end a CLI command as Ctrl-C does.
Children are found by the process tree (psutil), so none is missed however it was started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

import psutil

CHILD_GRACE_S = 1.0  # a child asked to end (SIGTERM) has this long before SIGKILL
THREAD_GRACE_S = 0.5  # a thread still running at exit has this long before the process ends
_HOOKED: list[bool] = []
_HOOK = threading.Lock()


def end_children(grace_s: float = CHILD_GRACE_S) -> list[int]:
    """End every process this one started, and theirs: SIGTERM, then SIGKILL after
    ``grace_s``; each is reaped. Returns their pids (as they were found)."""
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.send_signal(signal.SIGCONT)  # a stopped child must run to take its SIGTERM
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    return [c.pid for c in children]


def _busy_threads() -> list[threading.Thread]:
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def _at_exit() -> None:
    """The interpreter's first step of shutdown: end the children; end the process if a
    thread would hold it."""
    end_children()
    deadline = time.monotonic() + THREAD_GRACE_S
    while _busy_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    if _busy_threads():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(0)


def end_everything_at_exit() -> bool:
    """Hook this process's shutdown once (see the module's docstring). Returns whether this
    call hooked it."""
    with _HOOK:
        if _HOOKED:
            return False
        threading._register_atexit(_at_exit)  # noqa: SLF001 (the stdlib's own hook, 3.9+)
        _HOOKED.append(True)
        return True


class Stop(KeyboardInterrupt):
    """A stop asked by a signal: Ctrl-C (SIGINT), SIGTERM or SIGHUP."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal's number."""
        return 128 + self.signum


def _interrupt(signum: int, frame: object) -> None:
    raise Stop(signum)


def signals_as_interrupt() -> None:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Stop` (a KeyboardInterrupt) in the main
    thread, so a command's own ``finally`` blocks run (only from the main thread; elsewhere
    this does nothing)."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _interrupt)
