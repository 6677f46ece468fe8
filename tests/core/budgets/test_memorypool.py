"""The server's memory budget: read from device memory on an accelerator, shared by its
actions, which wait for their share."""

import time

import pytest

from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from tests.fakes import actions_held, host_budget


def test_the_server_budget_reads_device_memory_on_an_accelerator(fake_devices):
    """With fake H200s (memory_stats from the fixture): a quarter of the free device memory."""
    with fake_devices("gpu"):
        b = memorypool.budget()
        assert b.device == (112_583_507_968 - 4_194_304) // 4
        assert "bytes_limit - bytes_in_use" in b.device_source
        lines = memorypool.budget_lines(b, devicefacts.device_memory())
        assert lines[0].startswith("Host memory budget for the whole server")
        assert lines[1].startswith("Device memory budget for the whole server")
        assert lines[2] == (
            "Device memory now (memory_stats, the fullest, `cuda:0`): 0.00 GiB "
            "in use of 104.9 GiB, peak 0.01 GiB."
        )
    assert memorypool.budget().device is None  # back on CPU devices: one pool


def test_the_budget_is_the_servers_actions_wait_for_their_share():
    """Issue 26: every action could use the whole budget at once (8 sessions peaked at 3x).
    Now a live run waits, in the queue, while others hold the memory it needs, and runs once
    they give it back; an action that could never fit is refused at once."""
    import threading

    from pmapviz.core.running import pmapcompile, pmaprun

    with host_budget(256 * 2**20):
        budget = memorypool.budget()
        assert budget.host == 256 * 2**20
        prog = functions.get("double")
        p = plan(prog, [(8, 1000)], n_devices=8)
        compiled = pmapcompile.compile_plan(prog, p)
        held = memorypool.reserve(  # an empty pool has room at once: never wait here
            memorymodel.Need(240 * 2**20, 240 * 2**20), "another session's run", timeout=5
        )
        seen, out = [], []
        worker = threading.Thread(
            target=lambda: out.append(
                pmaprun.run_plan(
                    prog, p, compiled, on_wait=lambda pos, w, message: seen.append(message)
                )
            )
        )
        worker.start()
        wait = time.monotonic() + 5
        while not seen and time.monotonic() < wait:
            time.sleep(0.01)
        assert seen and not out, "the live run did not wait for its share"
        assert "Waiting for memory: this needs" in seen[0]
        assert "another session's run (252 MB" in seen[0] and "of 268 MB is free" in seen[0]
        held.release()
        worker.join(30)
        assert out and out[0].passed and actions_held() == []
        with pytest.raises(memorymodel.BudgetError, match="the memory budget is 268 MB"):
            memorypool.reserve(memorymodel.Need(300 * 2**20, 300 * 2**20), "a run")
