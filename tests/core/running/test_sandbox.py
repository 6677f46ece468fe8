"""Your own f in a process of its own (pmapviz.core.running.sandbox): the same answer as a run here,
stopped
at the limit with nothing left running, its memory held in the pool and given back."""

import contextlib
import os
import signal
import threading
import time

import psutil
import pytest

from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import pmapcompile, pmaprun, processends, sandbox
from tests import fakes
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
    # Stopped, and the warm worker's pid gone below (a worker outlives its runs), prove the run
    # was cut short by a kill; the bound only says the kill came near the limit. Its slack is
    # wide: a fresh clone's loaded 2-core run once took 4.3 s from call to Stopped here.
    assert time.monotonic() - start < 1 + 0.5 + 6
    assert "largest axis is 250" in str(err.value)
    assert not fresh_worker.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the process is gone, not only abandoned
    assert memorypool.admission().free() == memorypool.admission().capacity  # and its memory back
    again = sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60)
    assert again.passed and fresh_worker.pid() != pid  # the next run starts a new one


def _children() -> set[int]:
    """What a sandbox fault could leave among this test process's descendants: sandbox
    workers and zombies (a worker not reaped is one). Another test's processes in this xdist
    worker (a server, a probe that a background thread started) come and go meanwhile."""
    left = set()
    for c in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if c.status() == psutil.STATUS_ZOMBIE or "pmapviz.app.sandboxworker" in c.cmdline():
                left.add(c.pid)
    return left


def _one_line(err: BaseException, pid: int) -> str:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text and 'File "' not in text, text
    assert f"The sandbox worker (pid {pid})" in text, text
    return text


def _whole_pool() -> bool:
    return memorypool.admission().free() == memorypool.admission().capacity


@pytest.mark.parametrize(
    "sig, words",
    [
        (signal.SIGKILL, "was killed by SIGKILL during a live run of your own f"),
        (signal.SIGSEGV, "crashed with SIGSEGV (a segmentation fault) during a live run"),
    ],
    ids=["SIGKILL", "SIGSEGV"],
)
def test_a_worker_killed_mid_run_says_which_signal_and_the_next_run_works(fresh_worker, sig, words):
    before = _children()
    fresh_worker.ensure(N)
    pid = fresh_worker.pid()
    slow = expr.program("x", SLOW)
    p = plan(slow, [(N, 250)], n_devices=N)
    timer = threading.Timer(0.5, os.kill, (pid, sig))  # mid-run: the run takes seconds
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(sandbox.WorkerFailed) as err:
            sandbox.run_plan(slow, p, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=60)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5  # told at once, not at the time limit
    assert words in _one_line(err.value, pid)
    assert "run again" in str(err.value)
    assert not psutil.pid_exists(pid) and not _children() - before  # reaped: not even a zombie
    assert _whole_pool()
    small = expr.program("x", "x + 1")
    sp = plan(small, [(N, 4)], n_devices=N)
    again = sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60)
    assert again.passed and fresh_worker.pid() not in (None, pid)


def test_a_worker_stopped_mid_run_is_killed_at_the_time_limit_and_reaped(fresh_worker, monkeypatch):
    monkeypatch.setattr(sandbox, "GRACE_S", 0.5)
    before = _children()
    fresh_worker.ensure(N)
    pid = fresh_worker.pid()
    slow = expr.program("x", SLOW)
    p = plan(slow, [(N, 250)], n_devices=N)
    timer = threading.Timer(0.3, os.kill, (pid, signal.SIGSTOP))  # frozen: answers nothing
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(sandbox.Stopped) as err:
            sandbox.run_plan(slow, p, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=1)
    finally:
        timer.cancel()
    assert 1.5 <= time.monotonic() - start < 1.5 + 1.5
    text = _one_line(err.value, pid)
    assert "stopped by SIGSTOP" in text and "after 2 s, the 1 s time limit" in text
    assert not psutil.pid_exists(pid) and not _children() - before
    assert _whole_pool()
    small = expr.program("x", "x + 1")
    sp = plan(small, [(N, 4)], n_devices=N)
    assert sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60).passed


@pytest.mark.parametrize(
    "body, shape, said",
    [
        ("x + 1", (N, 2**25), "Unable to allocate"),  # the inputs: numpy's MemoryError
        ("jnp.sort(jnp.einsum('a,b->ab', x, x)).sum()", (N, 2**13), "RESOURCE_EXHAUSTED"),  # XLA
    ],
    ids=["numpy", "xla"],
)
def test_a_run_past_the_address_space_limit_is_one_line_with_the_budget(
    fresh_worker, body, shape, said
):
    """The estimate missed (the run claims 1 MiB): the worker's own limit, the server's
    --max-bytes beyond its start-up size, stops the allocation inside the worker."""
    before = _children()
    with fakes.host_budget(512 * 2**20):
        fresh_worker.ensure(N)
        pid = fresh_worker.pid()
        prog = expr.program("x", body)
        p = plan(prog, [shape], n_devices=N)
        with pytest.raises(sandbox.OutOfMemory) as err:
            sandbox.run_plan(prog, p, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=60)
        text = _one_line(err.value, pid)
        assert "ran out of memory during a live run of your own f" in text
        assert "it is limited to 512M (--max-bytes, the server's memory budget)" in text
        assert "of address space beyond its start-up size" in text and said in text
        assert not psutil.pid_exists(pid) and not _children() - before
        assert _whole_pool()
        small = expr.program("x", "x + 1")
        sp = plan(small, [(N, 4)], n_devices=N)
        assert sandbox.run_plan(small, sp, _need(small, sp), "arange", 0, limit_s=60).passed


def test_an_abort_inside_xla_at_the_limit_is_the_same_one_line(fresh_worker, monkeypatch):
    """1 MiB of room and none for threads: LLVM cannot start the compiler's threads and
    aborts the worker (SIGABRT, "pthread_create failed"); the user reads the limit, not that."""
    monkeypatch.setattr(processends, "THREAD_ROOM", 0)
    monkeypatch.setattr(processends, "address_room", lambda: (2**20, "1M (--max-bytes, a test)"))
    before = _children()
    fresh_worker.ensure(N)
    pid = fresh_worker.pid()
    prog = expr.program("x", "jnp.sort(x * 3)")
    p = plan(prog, [(N, 1000)], n_devices=N)
    with pytest.raises(sandbox.OutOfMemory) as err:
        sandbox.run_plan(prog, p, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=60)
    text = _one_line(err.value, pid)
    assert "ran out of memory" in text and "limited to 1M (--max-bytes, a test)" in text
    assert not psutil.pid_exists(pid) and not _children() - before and _whole_pool()


def test_a_worker_that_dies_between_runs_is_reaped_and_said(fresh_worker):
    fresh_worker.ensure(N)
    pid = fresh_worker.pid()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while fresh_worker.alive() and time.monotonic() < deadline:  # until the kernel has ended it
        time.sleep(0.02)
    with pytest.raises(sandbox.WorkerFailed) as err:
        fresh_worker.ask(("live",), 5)
    assert "was killed by SIGKILL before a run of your own f started" in _one_line(err.value, pid)
    assert _whole_pool() and not psutil.pid_exists(pid)
    fresh_worker.ensure(N)
    second = fresh_worker.pid()
    os.kill(second, signal.SIGKILL)
    deadline = time.monotonic() + 5  # a busy machine ends it later than in 0.2 s (a CI run)
    while fresh_worker.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    # the idle watch reaps it at once (this process's own watch thread, started by an earlier
    # test, may have got there first: then this call finds nothing left to stop)
    fresh_worker.stop_if_idle()
    assert _whole_pool() and not psutil.pid_exists(second)
    fresh_worker.ensure(N)
    frozen = fresh_worker.pid()
    os.kill(frozen, signal.SIGSTOP)
    time.sleep(0.2)
    fresh_worker.ensure(N)  # a stopped worker is replaced, not left to the time limit
    assert fresh_worker.pid() not in (None, frozen) and not psutil.pid_exists(frozen)


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
