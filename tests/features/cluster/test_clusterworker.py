"""The cluster worker dies with its parent, even a SIGKILLed one (Linux)."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import ROOT

CHILD = (
    "import sys, time; from pmapviz.features.cluster.clusterworker import die_with_parent; "
    "die_with_parent(int(sys.argv[1])); print('armed', flush=True); "
    "time.sleep(60)"
)
PARENT = (
    "import os, subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
    f"{CHILD!r}, str(os.getpid())]); print(p.pid, flush=True); time.sleep(60)"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_child_is_killed_when_its_parent_is_sigkilled():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        assert parent.stdout.readline().strip() == "armed"  # past die_with_parent
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        parent.stdout.close()
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        child.kill()
        pytest.fail("the child outlived its SIGKILLed parent")


def test_a_worker_whose_parent_is_already_gone_exits_at_once():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmapviz.features.cluster.clusterworker",
            "--single",
            "--local-devices",
            "1",
            "--parent",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 3 and "parent 1 is gone" in r.stdout
