"""A real local jax.distributed cluster: results checked against numpy; faults leave nothing."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from pmapviz.core.budgets import memorypool
from pmapviz.features.cluster import cluster
from tests.conftest import ROOT


def worker_pids() -> set[int]:
    """Live workers started by this test process (other checkouts on the machine run their
    own: only ours carry ``--parent <this pid>``)."""
    out = set()
    ours = f"--parent {os.getpid()}"
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            line = " ".join(p.info["cmdline"] or [])
            if (
                "pmapviz.features.cluster.clusterworker" in line
                and ours in line
                and p.info["status"] != "zombie"
            ):
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
    assert not any(
        psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in res.pids
    )


def _children() -> set[int]:
    """This test process's zombie children: a worker not reaped is one (live workers are
    worker_pids'; another test's processes in this xdist worker come and go meanwhile)."""
    left = set()
    for c in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if c.status() == psutil.STATUS_ZOMBIE:
                left.add(c.pid)
    return left


def _coordinator_listening(proc: subprocess.Popen, within: float = 30) -> bool:
    """Wait until process 0 listens on its port: it is inside jax.distributed.initialize."""
    end = time.monotonic() + within
    while time.monotonic() < end and proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            conns = psutil.Process(proc.pid).net_connections(kind="inet")
            if any(c.status == psutil.CONN_LISTEN for c in conns):
                return True
        time.sleep(0.05)
    return False


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_killed_worker_is_reported_and_leaves_no_process():
    """Process 1 SIGKILLed while process 0 waits for it in jax.distributed.initialize: the
    launch ends at once (not at the 30 s timeout), one line names it, nothing is left, and
    the memory the launch held is back in the pool."""
    before, children = worker_pids(), _children()
    free = memorypool.admission().free()
    killed: dict = {}

    def kill_one_while_joining(procs):
        assert _coordinator_listening(procs[0])  # process 0 waits in initialize for its peer
        killed.update(pid=procs[1].pid, at=time.monotonic())
        os.kill(procs[1].pid, signal.SIGKILL)

    with pytest.raises(cluster.ClusterError) as err:
        cluster.launch(2, 1, timeout=30, fault=kill_one_while_joining, compare_single=False)
    assert time.monotonic() - killed["at"] < 5  # not the 30 s the others would wait
    text = _one_line(err.value)
    assert text.startswith(f"process 1 of 2 (pid {killed['pid']}) was killed by SIGKILL during")
    # where it was is what it printed last: process 0 listening says nothing of process 1,
    # which may have joined already on a quick machine
    phases = ("while starting", "while joining the cluster", "after joining the cluster")
    assert any(f"during the launch, {p}" in text for p in phases), text
    assert "The others were stopped" in text
    assert worker_pids() - before == set() and not _children() - children
    assert cluster.TURNS.held_for() is None
    assert memorypool.admission().free() >= free  # (a warm sandbox worker may stop meanwhile)


KILLED_IN_THE_CHECK = (
    "import os, signal, sys; from pmapviz.features.cluster import clusterworker as w; "
    "w.run_check = lambda: os.kill(os.getpid(), signal.SIGKILL); sys.exit(w.main(sys.argv[1:]))"
)


def dies_after_joining(port, processes, pid, local, timeout):
    """Process 1 is a real worker that joins the cluster, then is SIGKILLed: process 0 waits
    for it in the first collective (psum over both processes)."""
    cmd = cluster.worker_command(port, processes, pid, local, timeout)
    return cmd if pid != 1 else [sys.executable, "-c", KILLED_IN_THE_CHECK, *cmd[3:]]


def test_a_worker_killed_in_the_first_collective_ends_the_launch_and_the_next_one_runs():
    before, children = worker_pids(), _children()
    t = time.monotonic()
    with pytest.raises(cluster.ClusterError) as err:
        cluster.launch(2, 1, timeout=30, compare_single=False, command=dies_after_joining)
    assert time.monotonic() - t < 20  # ended by the death, not by the 30 s timeout
    text = _one_line(err.value)
    assert "process 1 of 2 (pid " in text and "was killed by SIGKILL" in text
    assert "after joining the cluster, in the check (its first collectives)" in text
    assert worker_pids() - before == set() and not _children() - children
    assert cluster.launch(2, 1, compare_single=False).per_process[0]["psum"] == 3.0


def test_hung_worker_times_out_and_is_stopped():
    before = worker_pids()

    def stop_one(procs):  # SIGSTOP: alive but frozen, like a hang
        import os
        import signal

        time.sleep(0.2)
        os.kill(procs[0].pid, signal.SIGSTOP)

    children = _children()
    with pytest.raises(cluster.ClusterError, match="within 6 s") as err:
        cluster.launch(2, 1, timeout=6, fault=stop_one, compare_single=False)
    assert "process 0 of 2 (pid " in str(err.value) and "stopped (SIGSTOP)" in str(err.value)
    assert worker_pids() - before == set() and not _children() - children


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
    with pytest.raises(cluster.ClusterError, match="Use"):
        cluster.validate(p, d)


@pytest.mark.parametrize("t", [float("inf"), float("nan"), -1, 0, 0.5, 601, True, "45"])
def test_timeout_must_be_finite_and_bounded(t):
    with pytest.raises(cluster.ClusterError, match="timeout from 1 to 600"):
        cluster.launch(2, 1, timeout=t)


@pytest.mark.parametrize("text", ["inf", "nan", "-1", "0", "601", "1e3", "\u0661\u0662", ""])
def test_cli_bad_timeout_exits_2_with_one_line(text, capsys):
    from pmapviz.app import cli

    assert cli.main(["cluster", "--timeout", text]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "timeout" in err[0] and "1 to 600" in err[0]
    assert cluster.parse_timeout(" 2.5 ") == 2.5


def test_worker_command_is_a_fixed_argument_list():
    cmd = cluster.worker_command(12345, 2, 1, 3, 30)
    assert cmd[1:3] == ["-m", "pmapviz.features.cluster.clusterworker"] and "127.0.0.1:12345" in cmd
    assert all(isinstance(c, str) and ";" not in c for c in cmd)


def test_cli_cluster_json_and_failure_exit():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pmapviz",
            "cluster",
            "--processes",
            "2",
            "--local-devices",
            "2",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["processes"] == 2 and out["local_devices"] == 2 and out["global_devices"] == 4
    assert [p["psum"] for p in out["per_process"]] == [10.0, 10.0]
    assert out["seconds"] > 0
    bad = subprocess.run(
        [sys.executable, "-m", "pmapviz", "cluster", "--processes", "7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1


def test_budget_refuses_before_starting_processes():
    with pytest.raises(cluster.ClusterError, match="memory budget"):
        cluster.check_budget(4, 512 * 2**20)
    cluster.check_budget(2, 4 * 2**30)  # fits


HALF_LINE = (
    "import sys, time; sys.stdout.write('working on it, ha'); sys.stdout.flush(); time.sleep(60)"
)


def half_line_worker(port, processes, pid, local, timeout):
    return [sys.executable, "-c", HALF_LINE]


def test_half_a_line_then_a_hang_still_times_out_and_the_next_launch_runs():
    """The review's case: readline() on a text pipe blocked forever on a partial line, and
    the launch lock stayed held. Now the deadline holds and the turn is given back."""
    started = []

    def remember(procs):
        started.extend(procs)

    worst = 0.0
    for _ in range(2):  # the second launch must not hang behind the first
        t = time.monotonic()
        with pytest.raises(cluster.ClusterError, match="within 2 s") as err:
            cluster.launch(
                2, 1, timeout=2, fault=remember, compare_single=False, command=half_line_worker
            )
        worst = max(worst, time.monotonic() - t)
        assert "working on it, ha" in str(err.value)  # the partial line is reported
    assert worst < 2 + 2, worst
    assert cluster.TURNS.held_for() is None
    for p in started:
        assert p.returncode is not None and p.stdout.closed
        assert not psutil.pid_exists(p.pid) or psutil.Process(p.pid).status() == "zombie"


def test_a_launch_waits_its_turn_and_gives_up_with_a_cluster_error():
    holder = cluster.TURNS.acquire(timeout=1)
    seen = []
    try:
        t = time.monotonic()
        with pytest.raises(cluster.ClusterError, match="number 1 in the queue"):
            cluster.launch(
                2,
                1,
                timeout=5,
                command=half_line_worker,
                queue_timeout=0.5,
                on_wait=lambda pos, waited, message: seen.append(pos),
            )
        assert time.monotonic() - t < 1.5 and seen and set(seen) == {1}
        with pytest.raises(cluster.ClusterError, match="Stopped while waiting"):
            cluster.launch(2, 1, command=half_line_worker, should_stop=lambda: True)
    finally:
        holder.release()
    assert cluster.TURNS.waiting() == 0


def _other_local_address() -> str | None:
    """A non-loopback IPv4 address of this machine, if it has one."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def test_coordinator_listens_on_loopback_only():
    listening: set[tuple[str, int]] = set()
    refused: list[bool] = []
    other = _other_local_address()

    def watch(procs):
        port = int(procs[0].args[procs[0].args.index("--coordinator") + 1].split(":")[1])
        end = time.monotonic() + 20
        while time.monotonic() < end and procs[0].poll() is None:
            with contextlib.suppress(psutil.Error):
                for c in psutil.Process(procs[0].pid).net_connections(kind="inet"):
                    if c.status == psutil.CONN_LISTEN:
                        listening.add((c.laddr.ip, c.laddr.port))
            if any(p == port for _, p in listening):
                if other:  # reachable on loopback only: another local address is refused
                    with socket.socket() as s, contextlib.suppress(OSError):
                        s.settimeout(2)
                        refused.append(s.connect_ex((other, port)) != 0)
                break
            time.sleep(0.05)
        listening.add(("port", port))

    cluster.launch(2, 1, timeout=30, fault=watch, compare_single=False)
    port = next(p for ip, p in listening if ip == "port")
    ips = {ip.removeprefix("::ffff:") for ip, p in listening if ip != "port"}  # v4-mapped
    coordinator = {ip.removeprefix("::ffff:") for ip, p in listening if p == port and ip != "port"}
    assert coordinator == {"127.0.0.1"}, listening  # was {"::"}: every interface
    assert ips == {"127.0.0.1"}, listening
    assert refused == ([True] if other else []), (other, refused)


def _start_cli_and_find_workers():
    cli = subprocess.Popen(  # its stderr: the one line the CLI prints when the launch fails
        [
            sys.executable,
            "-m",
            "pmapviz",
            "cluster",
            "--processes",
            "2",
            "--local-devices",
            "1",
            "--timeout",
            "30",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    workers: list[psutil.Process] = []
    end = time.monotonic() + 20
    while len(workers) < 2 and time.monotonic() < end:
        time.sleep(0.05)
        with contextlib.suppress(psutil.Error):
            workers = [
                c
                for c in psutil.Process(cli.pid).children()
                if "pmapviz.features.cluster.clusterworker" in " ".join(c.cmdline())
            ]
    assert len(workers) == 2, "the CLI never started its workers"
    while time.monotonic() < end:  # past die_with_parent: importing JAX starts threads
        with contextlib.suppress(psutil.Error):
            if all(w.num_threads() > 1 for w in workers):
                break
        time.sleep(0.05)
    return cli, workers


def _gone(procs: list[psutil.Process], within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        alive = []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
        if not alive:
            return True
        time.sleep(0.05)
    for p in procs:  # clean up after a failure, by pid
        with contextlib.suppress(psutil.Error):
            p.kill()
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_cli_leaves_no_workers(sig):
    cli, workers = _start_cli_and_find_workers()
    os.kill(cli.pid, sig)
    cli.communicate(timeout=10)  # its exit, and its stderr pipe closed
    assert _gone(workers, within=5), [w.pid for w in workers]
    if sig == signal.SIGTERM:
        assert cli.returncode == 128 + signal.SIGTERM  # exited through its cleanup


def test_the_cli_says_in_one_line_which_worker_died_and_leaves_none():
    cli, workers = _start_cli_and_find_workers()
    victim = next(w for w in workers if "--process-id 1" in " ".join(w.cmdline()))
    victim.kill()
    t = time.monotonic()
    _, err = cli.communicate(timeout=30)
    assert time.monotonic() - t < 10 and cli.returncode == 1  # not the 30 s --timeout
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err.decode(), lines
    assert lines[0].startswith(f"pmapviz: process 1 of 2 (pid {victim.pid}) was killed by SIGKILL")
    assert _gone(workers, within=2), [w.pid for w in workers]


def test_workers_import_pmapviz_from_this_repository():
    """Their PYTHONPATH starts with the folder that holds the pmapviz package."""
    first = cluster._env()["PYTHONPATH"].split(os.pathsep)[0]
    assert (Path(first) / "pmapviz" / "__init__.py").is_file()
