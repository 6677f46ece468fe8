"""pmapviz.core.base.stopping: a process asked to end ends, with every process it started,
whatever its threads are doing."""

import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from pmapviz.core.base import stopping
from tests.conftest import ROOT


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_children_and_theirs_end_a_stopped_one_too():
    """A child, its own child, and a child stopped with SIGSTOP (a hung worker) all end. In a
    process of its own: ending this test process's children would end other tests' workers."""
    code = textwrap.dedent("""
        import os, signal, subprocess, sys, time
        import psutil
        from pmapviz.core.base import stopping
        sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
        spawn = f"import subprocess; subprocess.Popen({sleep!r}); import time; time.sleep(60)"
        subprocess.Popen([sys.executable, "-c", spawn])
        hung = subprocess.Popen(sleep)
        os.kill(hung.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while len(psutil.Process().children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        family = [p.pid for p in psutil.Process().children(recursive=True)]
        ended = stopping.end_children(grace_s=1.0)
        print(len(family), sorted(ended) == sorted(family), " ".join(map(str, family)))
    """)
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    count, same, *pids = r.stdout.split()
    assert (count, same) == ("3", "True"), r.stderr
    assert not [pid for pid in map(int, pids) if _alive(pid)]


def test_a_process_whose_thread_computes_on_ends_at_once_with_its_children():
    """Python waits for every non-daemon thread before it exits (a script thread in the middle
    of a 66 s computation held a stopped server alive); hooked, it ends within a second."""
    code = textwrap.dedent("""
        import subprocess, sys, threading, time
        from pmapviz.core.base import stopping
        stopping.end_everything_at_exit()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        threading.Thread(target=time.sleep, args=(60,)).start()  # a run that goes on
        print(child.pid, flush=True)
    """)
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    took = time.perf_counter() - t
    child = int(r.stdout.split()[0])
    assert r.returncode == 0 and not _alive(child), r.stderr
    assert took < 10  # not 60 s: the thread does not hold the process


def test_hooking_twice_hooks_once():
    code = (
        "from pmapviz.core.base import stopping; "
        "print(stopping.end_everything_at_exit(), stopping.end_everything_at_exit())"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert r.stdout.split() == ["True", "False"]


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_stop_names_its_signal_and_exits_as_a_shell_expects(sig, code):
    stop = stopping.Stop(sig)
    assert isinstance(stop, KeyboardInterrupt) and str(stop) == sig.name and stop.exit_code == code
