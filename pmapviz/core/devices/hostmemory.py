"""The host's memory: how much there is and is available, a process's resident size, and its
growth while an action runs. Every figure is psutil's, so it is the same on Linux, macOS and
Windows (psutil is imported where a figure is read: 10-30 ms that ``--help`` does not pay).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HostMemory:
    """The host's RAM in bytes: total, and available now."""

    total: int
    available: int  # what the OS says is available now (Linux: MemAvailable)


def host_memory() -> HostMemory:
    """The host's RAM: total and available now (``psutil.virtual_memory()``)."""
    import psutil

    memory = psutil.virtual_memory()
    return HostMemory(int(memory.total), int(memory.available))


def rss_bytes() -> int | None:
    """This process's resident memory now (``psutil.Process().memory_info().rss``), or None
    where the OS does not say. On a TPU it counts the chip's memory windows the runtime maps in
    (see :class:`Startup`): read it as growth over a baseline, never as the process's own
    use."""
    import psutil

    try:
        return int(_this_process().memory_info().rss)
    except (psutil.Error, OSError):
        return None


_PROCESS: dict[int, Any] = {}  # pid -> its psutil.Process: a forked child finds its own


def _this_process() -> Any:
    """This process as psutil sees it, made once per pid (``HostGrowth`` samples the RSS
    every 2 ms, and making one costs twice what reading it does)."""
    import psutil

    pid = os.getpid()
    mine = _PROCESS.get(pid)
    if mine is None:
        mine = _PROCESS[pid] = psutil.Process(pid)
    return mine


class HostGrowth:
    """The peak growth of this process's RSS during a block (``with HostGrowth() as g:``,
    then ``g.peak_bytes``): sampled every ``interval`` s on a thread and at both ends, over
    the RSS at its start. Other sessions' work in the same process counts too; where RSS
    cannot be read, ``peak_bytes`` is None."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.start: int | None = None
        self.peak: int | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        now = rss_bytes()
        if now is not None and self.peak is not None:
            self.peak = max(self.peak, now)

    def _watch(self) -> None:
        while not self._done.wait(self.interval):
            self._sample()

    def __enter__(self) -> HostGrowth:
        self.start = self.peak = rss_bytes()
        if self.start is not None:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="pmapviz-rss")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    @property
    def peak_bytes(self) -> int | None:
        """How far the RSS rose above its value at the start, at its highest."""
        if self.start is None or self.peak is None:
            return None
        return max(0, self.peak - self.start)
