"""The host's memory and a block's own growth in it (pmapviz.core.devices.hostmemory)."""

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pmapviz.core.devices import hostmemory


def test_host_growth_is_the_blocks_own_memory_not_the_process_rss():
    before = hostmemory.rss_bytes()
    assert before and before > 10 * 2**20
    with hostmemory.HostGrowth() as g:
        block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
        block.sum()
        del block
    assert 60 * 2**20 <= g.peak_bytes < 200 * 2**20  # the block, not the ~0.5 GB process
    with hostmemory.HostGrowth() as quiet:
        pass
    assert quiet.peak_bytes < 16 * 2**20


def test_host_memory_is_what_psutil_says_here():
    """A real oracle: psutil's count on this machine (and, on Linux, /proc/meminfo's total)."""
    import psutil

    before = psutil.virtual_memory()
    ours = hostmemory.host_memory()
    after = psutil.virtual_memory()
    assert ours.total == before.total == after.total
    slack = 256 * 2**20  # other processes allocate and free between the three reads
    low, high = sorted((before.available, after.available))
    assert low - slack <= ours.available <= high + slack and ours.available <= ours.total
    if os.path.exists("/proc/meminfo"):
        text = Path("/proc/meminfo").read_text(encoding="ascii")
        meminfo = dict(line.split(":", 1) for line in text.splitlines())
        assert ours.total == int(meminfo["MemTotal"].split()[0]) * 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux's own page count")
def test_rss_is_the_resident_size_linux_counts():
    with open("/proc/self/statm", encoding="ascii") as f:
        statm = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    assert abs(hostmemory.rss_bytes() - statm) < 4 * 2**20


class _MacProcess:
    """psutil.Process on macOS: no cpu_affinity; RSS from the kernel's task info."""

    def __init__(self, pid=None):
        self.pid = pid

    def memory_info(self):
        return SimpleNamespace(rss=123_456_789)


def test_a_mac_or_windows_host_gets_psutils_numbers_not_a_guess(monkeypatch):
    """Where there is no /proc, the host used to be taken to have 4 GiB and no RSS."""
    import psutil

    monkeypatch.setattr(hostmemory, "_PROCESS", {})
    monkeypatch.setattr(psutil, "Process", _MacProcess)
    monkeypatch.setattr(
        psutil, "virtual_memory", lambda: SimpleNamespace(total=36 * 2**30, available=9 * 2**30)
    )
    assert hostmemory.host_memory() == hostmemory.HostMemory(36 * 2**30, 9 * 2**30)
    assert hostmemory.rss_bytes() == 123_456_789

    class Refused(_MacProcess):  # Windows, for a process this user may not read
        def memory_info(self):
            raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(hostmemory, "_PROCESS", {})
    monkeypatch.setattr(psutil, "Process", Refused)
    assert hostmemory.rss_bytes() is None
    with hostmemory.HostGrowth() as g:
        pass
    assert g.peak_bytes is None
