"""Your own f in a process of its own (pmapviz.core.running.sandbox): the same answer as a run here,
stopped
at the limit with nothing left running, its memory held in the pool and given back."""

import os
import signal
import threading
import time

import pytest

from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
SLOW = "jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()"  # seconds at (N, 250)


def _need(prog, p) -> memorymodel.Need:
    return pmaprun.estimate_bytes(p, prog, pmapcompile.compile_plan(prog, p))


@pytest.fixture
def fresh_worker():
    """Each test starts without a warm worker and leaves none behind."""
    sandbox._WORKER.stop()
    yield sandbox._WORKER
    sandbox._WORKER.stop()


def test_own_f_goes_to_the_worker_and_the_catalog_stays(monkeypatch):
    assert sandbox.applies(expr.program("x", "x * 2"))
    assert not sandbox.applies(functions.get("add"))
    monkeypatch.setenv(sandbox.OFF, "off")
    assert not sandbox.applies(expr.program("x", "x * 2"))


def test_the_worker_answers_as_a_run_here_does(fresh_worker):
    prog = expr.program("x, y", "jnp.tanh(x) @ y.T")
    p = plan(prog, [(N, 3, 5), (N, 4, 5)], n_devices=N, dtypes=["float32"] * 2)
    here = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p), "random", seed=7)
    there = sandbox.run_plan(prog, p, _need(prog, p), "random", 7, limit_s=60)
    assert there.passed and there.out_shape == here.out_shape == (N, 3, 4)
    assert there.rows == here.rows  # every device's slices and blocks, the same values
    assert there.max_abs_diff == here.max_abs_diff
    assert fresh_worker.pid() not in (None, os.getpid())  # it ran in another process


def test_a_run_past_the_limit_is_stopped_and_nothing_is_left(fresh_worker, monkeypatch):
    monkeypatch.setattr(sandbox, "GRACE_S", 0.5)
    small = expr.program("x", "x + 1")
    sp = plan(small, [(N, 4)], n_devices=N)
    sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60)  # warm
    pid, free = fresh_worker.pid(), memorypool.admission().free()
    assert free < memorypool.admission().capacity  # the warm worker's memory is held
    slow = expr.program("x", SLOW)
    p = plan(slow, [(N, 250)], n_devices=N)
    start = time.monotonic()
    with pytest.raises(sandbox.Stopped, match="ran past the 1 s limit") as err:
        sandbox.run_plan(slow, p, _need(small, sp), "arange", 0, limit_s=1)
    assert time.monotonic() - start < 1 + 0.5 + 1.5
    assert "largest axis is 250" in str(err.value)
    assert not fresh_worker.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the process is gone, not only abandoned
    assert memorypool.admission().free() == memorypool.admission().capacity  # and its memory back
    again = sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60)
    assert again.passed and fresh_worker.pid() != pid  # the next run starts a new one


def test_a_worker_that_dies_mid_run_is_a_clear_error(fresh_worker):
    small = expr.program("x", "x + 1")
    sp = plan(small, [(N, 4)], n_devices=N)
    sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60)
    os.kill(fresh_worker.pid(), signal.SIGKILL)
    time.sleep(0.2)
    with pytest.raises(sandbox.WorkerFailed, match="gone"):
        sandbox._WORKER.ask(("live",), 5, "stopped")
    assert sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60).passed


def test_need_counts_the_worker_until_it_is_warm(fresh_worker):
    prog = expr.program("x", "x + 1")
    p = plan(prog, [(N, 4)], n_devices=N)
    run = _need(prog, p)
    assert sandbox.need(prog, run).total == run.total + memoryestimates.worker_bytes(N)
    assert sandbox.need(functions.get("add"), run) == run
    sandbox.run_plan(prog, p, run, "arange", 0, limit_s=60)
    assert sandbox.need(prog, run) == run  # warm: its memory is already held


def test_run_here_stops_waiting_at_the_limit_and_holds_memory_till_the_end(monkeypatch):
    monkeypatch.setattr(sandbox, "GRACE_S", 0.2)
    release = threading.Event()
    need = memorymodel.Need.host_only(10 * 2**20)
    free = memorypool.admission().free()
    with pytest.raises(sandbox.Stopped, match="ran past the 1 s limit"):
        sandbox.run_here(release.wait, need, limit_s=1)
    assert memorypool.admission().free()[0] == free[0] - need.total  # held while it still runs
    release.set()
    deadline = time.monotonic() + 5
    while memorypool.admission().free() != free and time.monotonic() < deadline:
        time.sleep(0.02)
    assert memorypool.admission().free() == free
    assert sandbox.run_here(lambda: 42, need, limit_s=1) == 42
    with pytest.raises(ZeroDivisionError):
        sandbox.run_here(lambda: 1 / 0, need, limit_s=1)
