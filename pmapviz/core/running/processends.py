"""How a process ended, in words a person can act on: the signal that ended it (SIGKILL,
a crash), a memory limit it ran into, a hang that the time limit ended; and the address-space
limit the sandbox's worker runs under (the server's memory budget beyond its start-up size).
Used by the sandbox's worker (:mod:`pmapviz.core.running.sandbox`) and the cluster's launches."""

from __future__ import annotations

import signal

from pmapviz.core.base.valuetext import first_line, fmt_bytes, quote, size_flag
from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import jaxstartup

SIGNAL_WORDS = {
    "SIGKILL": "was killed by SIGKILL",
    "SIGSEGV": "crashed with SIGSEGV (a segmentation fault)",
    "SIGABRT": "crashed with SIGABRT (it aborted)",
    "SIGBUS": "crashed with SIGBUS (a bus error)",
    "SIGFPE": "crashed with SIGFPE (an arithmetic fault)",
    "SIGILL": "crashed with SIGILL (an illegal instruction)",
    "SIGTERM": "was ended by SIGTERM",
    "SIGINT": "was interrupted by SIGINT",
    "SIGHUP": "was ended by SIGHUP (its terminal closed)",
    "SIGPIPE": "was ended by SIGPIPE (a pipe it wrote to was closed)",
}
CRASHES = {"SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL"}
# what a process under an address-space limit prints when an allocation fails (Python, XLA,
# the C++ runtime, LLVM starting a thread, the loader mapping a library)
OUT_OF_MEMORY = (
    "MemoryError",
    "RESOURCE_EXHAUSTED",
    "out of memory",
    "bad_alloc",
    "Cannot allocate memory",
    "pthread_create failed",
    "failed to map segment",
)


def signal_name(returncode: int | None) -> str | None:
    """'SIGKILL' for a process's ``returncode`` -9; None when it was not ended by a signal."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def ended_words(returncode: int | None) -> str:
    """How a process ended, from its ``returncode``: 'was killed by SIGKILL', 'crashed with
    SIGSEGV (a segmentation fault)', 'exited with status 1'."""
    name = signal_name(returncode)
    if name is not None:
        return SIGNAL_WORDS.get(name, f"was ended by {name}")
    if returncode is None:
        return "stopped answering (it closed its pipe)"
    return "exited" if returncode == 0 else f"exited with status {returncode}"


def is_stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, SIGTSTP, a debugger), not running."""
    import psutil

    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def ran_out_of_memory(text: str) -> bool:
    """Whether ``text`` (an error, the end of a log) says an allocation failed."""
    low = text.lower()
    return any(words.lower() in low for words in OUT_OF_MEMORY)


def memory_line(text: str) -> str | None:
    """The last line of ``text`` that says an allocation failed (None when none does): a
    worker that aborts may print more after it (a fatal-error dump of its threads)."""
    return next((ln.strip() for ln in reversed(text.splitlines()) if ran_out_of_memory(ln)), None)


def last_line(text: str) -> str:
    """The last line of ``text`` that is not blank ("" when none is)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------- the worker's memory limit
THREAD_ROOM = 256 * 2**20  # address space new threads reserve (stacks, arenas), not memory


def address_room() -> tuple[int, str]:
    """How much address space the worker may map beyond what it had mapped when it said
    ready: the server's host memory budget (one action may use all of it), and that amount
    with where it comes from, in the operator's words (``512M (--max-bytes, the server's
    memory budget)``). The limit itself adds :data:`THREAD_ROOM` for the threads a run
    starts."""
    budget = memorypool.budget().host
    if jaxstartup.applied_settings().max_bytes:
        return budget, f"{_size(budget)} (--max-bytes, the server's memory budget)"
    return budget, (
        f"{_size(budget)} (the server's memory budget: a quarter of the free host memory; "
        "set it with --max-bytes)"
    )


def _size(n: int) -> str:
    """Bytes as an operator writes them: 3G, 512M (exact binary units), else '3.00 GB'."""
    return size_flag(n) if n % 2**20 == 0 else fmt_bytes(n)


def limit_address_space(pid: int) -> tuple[int, str] | None:
    """Cap the worker's address space (``RLIMIT_AS``) at what it maps now plus
    :func:`address_room` and :data:`THREAD_ROOM`: past it an allocation fails inside the
    worker (a MemoryError, XLA's RESOURCE_EXHAUSTED) instead of the machine running out.
    The room and its words, or None where no limit could be set (not Linux)."""
    import resource

    import psutil

    room = address_room()
    try:
        mapped = psutil.Process(pid).memory_info().vms
        limit = mapped + room[0] + THREAD_ROOM
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except (AttributeError, OSError, ValueError, psutil.Error):
        return None
    return room


def is_memory_error(err: BaseException) -> bool:
    """Whether ``err`` says memory ran out (a MemoryError, or words that say so)."""
    return isinstance(err, MemoryError) or ran_out_of_memory(first_line(err))


def died_words(pid, code: int | None, when: str, said: str) -> str:
    """The one line for a worker that died: which process, how it ended, what it said."""
    name = signal_name(code)
    words = f" (it said {quote(said, 160)})" if said and name is None else ""
    if name == "SIGKILL":
        words = ", not by pmapviz (by an operator, or by the system short of memory)"
    again = (
        "; if it crashes again, XLA fails on this f: try smaller inputs or write f another way"
        if name in CRASHES
        else ""
    )
    return (
        f"The sandbox worker (pid {pid}) {ended_words(code)} {when}{words}. Nothing of it is "
        f"left running and its memory is back in the pool: run again to start a fresh one{again}."
    )


def memory_words(pid, when: str, room, said: str, how: str = "") -> str:
    """The one line for a worker that ran out of memory: its limit, what it said."""
    limit = (
        f": it is limited to {room[1]} of address space beyond its start-up size" if room else ""
    )
    how = f" and {how}" if how else ""
    return (
        f"The sandbox worker (pid {pid}) ran out of memory{how} {when}{limit}; it said "
        f"{quote(said, 120)}. It was ended and its memory is back in the pool: make the inputs "
        "smaller, or ask the operator for a larger --max-bytes."
    )


def hung_words(pid: int, limit: float, grace_s: float) -> str:
    """The one line for a worker stopped (SIGSTOP) or hung, ended at its time limit."""
    return (
        f"The sandbox worker (pid {pid}) stopped responding (it was stopped by SIGSTOP) and was "
        f"ended after {limit + grace_s:.0f} s, the {limit:.0f} s time limit (--max-seconds) plus "
        f"{grace_s:.0f} s: nothing of it is left running and its memory is back in the pool. "
        "Run again to start a fresh one."
    )
