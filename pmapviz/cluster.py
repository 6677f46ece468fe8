"""A local ``jax.distributed`` cluster: P worker processes on 127.0.0.1, D CPU devices each.

Workers are separate processes (:mod:`pmapviz.worker`) because JAX fixes the device count per
process and a worker whose peers never arrive aborts (uncatchably). So every worker gets a
timeout; a hung, crashed or killed worker is reported with its last output; the others are
stopped; no process is left behind (each runs in its own process group, killed on the way
out). Launches are serialised per server process, so two users never race for a port. The
command lines are fixed argument lists built from integers, never a shell string.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from pmapviz import memory

MIN_PROCESSES, MAX_PROCESSES = 2, 4
MIN_LOCAL, MAX_LOCAL = 1, 4
DEFAULT_TIMEOUT = 45.0
WORKER_BYTES = memory.worker_bytes(MAX_LOCAL)  # measured: workers report their own maxrss
_LAUNCH = threading.Lock()


class ClusterError(RuntimeError):
    """A worker failed; ``str()`` is a one-line reason, ``details`` has every worker's tail."""

    def __init__(self, reason: str, details: dict[int, list[str]] | None = None):
        super().__init__(reason)
        self.details = details or {}


@dataclass
class ClusterResult:
    processes: int
    local_devices: int
    global_devices: int
    per_process: list[dict]
    seconds: float
    single_process: dict | None = None
    pids: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "processes": self.processes, "local_devices": self.local_devices,
            "global_devices": self.global_devices, "per_process": self.per_process,
            "seconds": self.seconds, "single_process": self.single_process,
        }  # fmt: skip


def check_budget(processes: int, budget: int, local_devices: int = MAX_LOCAL) -> None:
    """Each worker is a whole Python + JAX process (:func:`pmapviz.memory.cluster_bytes`);
    refuse a cluster the budget cannot hold. Raises memory.BudgetError (a ValueError)."""
    need = memory.cluster_bytes(processes, local_devices)
    if need > budget:
        fit = max(
            (p for p in range(1, processes) if memory.cluster_bytes(p, local_devices) <= budget),
            default=0,
        )
        raise memory.BudgetError(
            f"{processes} worker processes need about {need / 2**30:.2f} GiB; the memory budget "
            f"is {budget / 2**30:.2f} GiB, enough for {fit} (at least {MIN_PROCESSES} needed)."
        )


def validate(processes: int, local_devices: int) -> None:
    if not MIN_PROCESSES <= processes <= MAX_PROCESSES:
        raise ValueError(f"Use {MIN_PROCESSES} to {MAX_PROCESSES} processes (got {processes}).")
    if not MIN_LOCAL <= local_devices <= MAX_LOCAL:
        raise ValueError(
            f"Use {MIN_LOCAL} to {MAX_LOCAL} devices per process (got {local_devices})."
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_command(port: int, processes: int, pid: int, local: int, timeout: int) -> list[str]:
    return [
        sys.executable, "-m", "pmapviz.worker", "--coordinator", f"127.0.0.1:{int(port)}",
        "--num-processes", str(int(processes)), "--process-id", str(int(pid)),
        "--local-devices", str(int(local)), "--timeout", str(int(timeout)),
    ]  # fmt: skip


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env["JAX_PLATFORMS"] = "cpu"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def _collect(procs: list[subprocess.Popen], timeout: float, fault=None):
    """Read every worker's output until all exit or the deadline; returns (lines, status)."""
    lines: dict[int, list[str]] = {i: [] for i in range(len(procs))}
    sel = selectors.DefaultSelector()
    for i, p in enumerate(procs):
        sel.register(p.stdout, selectors.EVENT_READ, i)
    deadline = time.monotonic() + timeout
    open_streams = len(procs)
    if fault:
        fault(procs)
    timed_out = False
    while open_streams:
        if time.monotonic() >= deadline:
            timed_out = True
            break
        for key, _ in sel.select(timeout=0.2):
            line = key.fileobj.readline()
            if not line:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            lines[key.data].append(line.rstrip("\n"))
        dead = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
        if dead:
            break
    sel.close()
    return lines, timed_out


def _parse(lines: list[str]) -> dict | None:
    for line in reversed(lines):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return None


def run_single(total_devices: int, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """The same work in one process with all the devices (for the timing comparison)."""
    cmd = [sys.executable, "-m", "pmapviz.worker", "--single", "--local-devices",
           str(int(total_devices))]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    res = _parse(r.stdout.splitlines())
    if r.returncode or res is None:
        raise ClusterError(f"the single-process run failed: {r.stderr.strip()[-200:]}")
    return res


def launch(processes: int, local_devices: int, timeout: float = DEFAULT_TIMEOUT,
           fault=None, compare_single: bool = True) -> ClusterResult:  # fmt: skip
    """Start the cluster, wait for every worker's result, stop everything.

    ``fault`` (tests): a callable given the worker processes right after they start, e.g. to
    kill one. Raises ClusterError with a one-line reason when any worker fails.
    """
    validate(processes, local_devices)
    from pmapviz.devices import memory_budget

    check_budget(processes, memory_budget(), local_devices)
    t0 = time.perf_counter()
    procs: list[subprocess.Popen] = []
    with _LAUNCH:  # one launch at a time per server: ports never collide
        port = free_port()
        try:
            for i in range(processes):
                procs.append(subprocess.Popen(
                    worker_command(port, processes, i, local_devices, int(timeout)),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                    start_new_session=True, env=_env(),
                ))  # fmt: skip
            lines, timed_out = _collect(procs, timeout, fault)
            codes = [p.poll() for p in procs]
        finally:
            _kill(procs)
    results = [_parse(lines[i]) for i in range(processes)]
    crashed = [i for i, c in enumerate(codes) if c not in (None, 0)]
    missing = [i for i in range(processes) if results[i] is None]
    if crashed or missing:
        i = crashed[0] if crashed else missing[0]
        code = codes[i]
        if code is None:
            why = f"did not finish within {timeout:.0f} s (hung, or waiting for a peer)"
        elif code < 0:
            why = f"was killed by signal {signal.Signals(-code).name}"
        else:
            why = f"exited with code {code}"
        last = lines[i][-1] if lines[i] else "(no output)"
        raise ClusterError(
            f"worker {i} {why}; its last output: {last[:200]}. The other workers were "
            "stopped.", details=lines,
        )  # fmt: skip
    single = run_single(processes * local_devices, timeout) if compare_single else None
    return ClusterResult(
        processes=processes, local_devices=local_devices,
        global_devices=results[0]["global_devices"], per_process=results,
        seconds=time.perf_counter() - t0, single_process=single, pids=[p.pid for p in procs],
    )  # fmt: skip
