"""A real local jax.distributed cluster: results checked against numpy; faults leave nothing."""

import json
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest

from pmapviz import cluster
from tests.conftest import ROOT


def worker_pids() -> set[int]:
    out = set()
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if "pmapviz.worker" in " ".join(p.info["cmdline"] or []):
                out.add(p.info["pid"])
        except psutil.Error:
            pass
    return out


def test_two_processes_two_devices_against_numpy():
    res = cluster.launch(2, 2)
    assert res.global_devices == 4 and len(res.per_process) == 2
    expected_gather = np.arange(1, 5, dtype=float)
    for i, pp in enumerate(res.per_process):
        assert pp["process_index"] == i and pp["process_count"] == 2
        assert len(pp["local_device_ids"]) == 2
        assert pp["local_inputs"] == [2.0 * i + 1, 2.0 * i + 2]
        assert pp["psum"] == expected_gather.sum()
        np.testing.assert_array_equal(pp["all_gather"], expected_gather)
        assert pp["axis_index"] == [2 * i, 2 * i + 1]
    ids = res.per_process[0]["global_device_ids"]
    assert ids == res.per_process[1]["global_device_ids"] and len(set(ids)) == 4
    assert res.single_process["psum"] == 10.0 and res.single_process["process_count"] == 1
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                   for p in res.pids)  # fmt: skip


def test_killed_worker_is_reported_and_leaves_no_process():
    before = worker_pids()

    def kill_one(procs):
        time.sleep(0.3)
        procs[1].kill()

    t = time.monotonic()
    with pytest.raises(cluster.ClusterError) as err:
        cluster.launch(2, 2, timeout=20, fault=kill_one, compare_single=False)
    assert time.monotonic() - t < 20
    assert "worker 1 was killed by signal SIGKILL" in str(err.value)
    assert "other workers were stopped" in str(err.value)
    time.sleep(0.5)
    assert worker_pids() - before == set()


def test_hung_worker_times_out_and_is_stopped():
    before = worker_pids()

    def stop_one(procs):  # SIGSTOP: alive but frozen, like a hang
        import os
        import signal

        time.sleep(0.2)
        os.kill(procs[0].pid, signal.SIGSTOP)

    with pytest.raises(cluster.ClusterError, match="within 6 s"):
        cluster.launch(2, 1, timeout=6, fault=stop_one, compare_single=False)
    time.sleep(0.5)
    assert worker_pids() - before == set()


def test_two_launches_at_once_do_not_collide():
    results, errors = [], []

    def go():
        try:
            results.append(cluster.launch(2, 1, compare_single=False))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 2
    assert all(r.per_process[0]["psum"] == 3.0 for r in results)


@pytest.mark.parametrize("p, d", [(1, 2), (5, 2), (2, 0), (2, 5)])
def test_bounds(p, d):
    with pytest.raises(ValueError, match="Use"):
        cluster.validate(p, d)


def test_worker_command_is_a_fixed_argument_list():
    cmd = cluster.worker_command(12345, 2, 1, 3, 30)
    assert cmd[1:3] == ["-m", "pmapviz.worker"] and "127.0.0.1:12345" in cmd
    assert all(isinstance(c, str) and ";" not in c for c in cmd)


def test_cli_cluster_json_and_failure_exit():
    r = subprocess.run([sys.executable, "-m", "pmapviz", "cluster", "--processes", "2",
                        "--local-devices", "2", "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=180)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["processes"] == 2 and out["local_devices"] == 2 and out["global_devices"] == 4
    assert [p["psum"] for p in out["per_process"]] == [10.0, 10.0]
    assert out["seconds"] > 0
    bad = subprocess.run([sys.executable, "-m", "pmapviz", "cluster", "--processes", "7"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1


def test_budget_refuses_before_starting_processes():
    with pytest.raises(ValueError, match="memory budget"):
        cluster.check_budget(4, 512 * 2**20)
    cluster.check_budget(2, 4 * 2**30)  # fits
