"""``python -m pmapviz cluster --join`` through JAX's own detection: Slurm and Open MPI
simulated on 127.0.0.1 (2 processes x 2 CPU devices), each process calling
``jax.distributed.initialize()`` with no arguments; a missing variable and an absent
coordinator each end in one line, in time, with no process left behind."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from pmapviz.features.cluster import clusterjoin
from tests.conftest import ROOT

STRIP = ("JAX_", "XLA_", "PMAPVIZ_", "SLURM_", "OMPI_", "TPU_", "KUBERNETES_")


def _free_port() -> int:
    """A free port in JAX's ephemeral range (61440..65535), where Slurm's and Open MPI's
    coordinator ports land."""
    for port in random.sample(range(61440, 65536), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 61440..65535")


def slurm_env(port: int, i: int, n: int = 2, drop: str | None = None) -> dict[str, str]:
    job = 4096 * 7 + (port - 61440)  # JAX: port = SLURM_JOB_ID % 4096 + 61440
    env = {
        "SLURM_JOB_ID": str(job),
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_NTASKS": str(n),
        "SLURM_PROCID": str(i),
        "SLURM_LOCALID": str(i),
        "JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}",
    }
    env.pop(drop or "", None)
    return env


def ompi_env(port: int, i: int, n: int = 2) -> dict[str, str]:
    job = (4096 * 3 + (port - 61440)) * 4096  # JAX: port = job // 4096 % 4096 + 61440
    return {
        "OMPI_MCA_orte_hnp_uri": f"{job}.0;tcp://127.0.0.1:5000",
        "OMPI_COMM_WORLD_SIZE": str(n),
        "OMPI_COMM_WORLD_RANK": str(i),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(i),
        "JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}",
    }


def run_processes(envs: list[dict], args: list[str], limit: float = 120):
    """Start one ``cluster --join`` per environment; [(code, stdout, stderr, seconds)]; every
    process (group) is killed and reaped on the way out, by its pid."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(STRIP)}
    base["PYTHONPATH"] = str(ROOT)
    procs, t0 = [], time.monotonic()
    try:
        for env in envs:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "pmapviz", "cluster", "--join", *args],
                    cwd=ROOT,
                    env={**base, **env},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )
        out = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=max(1.0, limit - (time.monotonic() - t0)))
            out.append((p.returncode, stdout, stderr, time.monotonic() - t0))
        return out
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
        assert not [
            p.pid
            for p in procs
            if psutil.pid_exists(p.pid) and psutil.Process(p.pid).status() != psutil.STATUS_ZOMBIE
        ]


def _check_report(report: dict, name: str, jax_class: str) -> None:
    assert report["process_count"] == 2
    assert report["global_device_count"] == 4
    assert [(d["id"], d["process_index"]) for d in report["global_devices"]] == [
        (0, 0),
        (1, 0),
        (2048, 1),
        (2049, 1),
    ]
    psums = [r["psum"] for r in report["per_process"]]
    assert psums == [10.0, 10.0]  # 1 + 2 + 3 + 4, equal in both
    assert [r["local_device_ids"] for r in report["per_process"]] == [[0, 1], [2048, 2049]]
    assert all(r["all_gather"] == [1.0, 2.0, 3.0, 4.0] for r in report["per_process"])
    assert report["check"]["ok"] and report["check"]["expected_psum"] == 10.0
    assert report["environment"]["name"] == name
    assert report["environment"]["jax_class"] == jax_class
    assert report["hosts"] == [{"hostname": socket.gethostname(), "process_indices": [0, 1]}]


def test_slurm_two_processes_of_two_cpu_devices_join_by_jax_detection(tmp_path):
    port = _free_port()
    target = tmp_path / "report.json"
    res = run_processes(
        [slurm_env(port, i) for i in range(2)],
        ["--json", "--local-devices", "2", "--timeout", "90", "--report", str(target)],
    )
    (code0, out0, err0, _), (code1, out1, err1, _) = res
    assert code0 == 0 and code1 == 0, (err0, err1)
    report = json.loads(out0)  # stdout is ONE JSON object (gloo's lines went to stderr)
    _check_report(report, "Slurm", "SlurmCluster")
    assert report["environment"]["coordinator"] == f"localhost:{port}"
    assert json.loads(target.read_text()) == report
    assert out1 == ""  # with --json the other processes print nothing on stdout
    assert "Traceback" not in err0 + err1


def test_open_mpi_two_processes_of_two_cpu_devices_join_by_jax_detection():
    port = _free_port()
    res = run_processes(
        [ompi_env(port, i) for i in range(2)], ["--local-devices", "2", "--timeout", "90"]
    )
    (code0, out0, err0, _), (code1, out1, err1, _) = res
    assert code0 == 0 and code1 == 0, (err0, err1)
    assert out0.splitlines()[0] == (
        f"Open MPI: 2 processes on 1 host(s), 4 global devices (coordinator 127.0.0.1:{port})"
    )
    assert "psum equal in every process and equal to numpy's 10" in out0
    assert out1.strip().endswith("local devices [2048, 2049], psum 10")


def test_a_missing_slurm_variable_is_one_line_in_time_and_leaves_no_process():
    port = _free_port()
    envs = [slurm_env(port, 0), slurm_env(port, 1, drop="SLURM_PROCID")]
    (code0, out0, err0, t0), (code1, _, err1, t1) = run_processes(
        envs, ["--local-devices", "2", "--timeout", "6"], limit=60
    )
    assert code1 == 1 and err1.count("\n") == 1 and "Traceback" not in err1
    assert err1.startswith("pmapviz: Slurm partly detected")
    assert "SLURM_PROCID is not" in err1
    # process 0 had everything, so it waited for its peer; its watchdog stopped it
    assert code0 == 1 and err0.strip().splitlines()[-1].startswith(
        "pmapviz: Slurm detected (SlurmCluster): process 0 of 2"
    )
    assert "did not finish within 6 s" in err0 and "Traceback" not in err0
    assert t0 < 6 + 30 and out0 == ""


def test_an_absent_coordinator_is_one_line_within_the_timeout():
    port = _free_port()
    ((code, out, err, seconds),) = run_processes([slurm_env(port, 1)], ["--timeout", "3"], 60)
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.strip() == (
        f"pmapviz: Slurm detected (SlurmCluster): process 1 of 2, coordinator localhost:{port}: "
        f"joining (no answer from localhost:{port}: is process 0 running there, and its port "
        "free and reachable?) did not finish within 3 s; stopped."
    )
    assert seconds < 3 + 30


def test_nothing_detected_is_refused_before_jax_starts():
    with pytest.raises(clusterjoin.JoinError, match="no cluster environment detected"):
        clusterjoin.join(2, 5, env={})


def test_the_watchdog_says_what_it_waited_for_and_exits(capsys):
    codes = []
    dog = clusterjoin.Watchdog(0.05, "Slurm detected", exit_=codes.append).start()
    dog.phase = "gathering"
    dog._thread.join(5)
    assert codes == [1]
    assert capsys.readouterr().err == (
        "pmapviz: Slurm detected: gathering did not finish within 0.05 s; stopped.\n"
    )
    quiet = clusterjoin.Watchdog(5, "x", exit_=codes.append).start()
    quiet.stop()
    quiet._thread.join(5)
    assert codes == [1]  # stopped in time: nothing said, no exit


def test_what_jax_prints_on_stdout_goes_to_stderr_while_it_works(capfd):
    with clusterjoin.stdout_to_stderr():
        os.write(1, b"[Gloo] Rank 0 is connected\n")
    os.write(1, b"report\n")
    said = capfd.readouterr()
    assert said.out == "report\n" and said.err == "[Gloo] Rank 0 is connected\n"


def test_summary_lines_come_from_the_report():
    report = json.loads((ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json").read_text())
    lines = clusterjoin.summary(report)
    assert (
        lines[0] == "Slurm: 4 processes on 1 host(s), 8 global devices (coordinator "
        "localhost:61586)"
    )
    assert lines[-1] == (
        "check: psum equal in every process and equal to numpy's 36; all_gather correct"
    )
    assert len(lines) == 6
