"""The host's memory and a block's own growth in it (pmapviz.core.devices.hostmemory)."""

import numpy as np

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
