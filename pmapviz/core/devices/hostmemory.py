"""The host's memory: how much there is and is available, a process's resident size, and its
growth while an action runs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class HostMemory:
    """The host's RAM in bytes: total, and available now."""

    total: int
    available: int  # what the OS says is available now (MemAvailable)


def host_memory() -> HostMemory:
    """The host's RAM: total and available now, from /proc/meminfo (4 GiB if unreadable)."""
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    fallback = 4 * 1024**3
    return HostMemory(found.get("MemTotal", fallback), found.get("MemAvailable", fallback))


def rss_bytes() -> int | None:
    """This process's resident memory now (``/proc/self/statm``), or None where unreadable.
    On a TPU it counts the chip's memory windows the runtime maps in (see :class:`Startup`):
    read it as growth over a baseline, never as the process's own use."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


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
