"""A local ``jax.distributed`` cluster: P worker processes on 127.0.0.1, D CPU devices each.

Workers are separate processes (:mod:`pmapviz.features.cluster.clusterworker`) because JAX fixes the
device count per process and a worker whose peers never arrive aborts (uncatchably). So every worker
gets a timeout, enforced however a worker behaves (its output is read with non-blocking ``os.read``,
so half a line followed by a hang cannot stall the reader); a hung, crashed or killed worker is
reported with its last output; the others are stopped; no process is left behind (each runs in its
own process group, killed on the way out, and dies with its parent even when that is SIGKILLed: see
:func:`pmapviz.features.cluster.clusterworker.die_with_parent`). Launches take turns per server
process (:mod:`pmapviz.core.base.queues`), so two users never race for a port, and a waiting launch
gives up after ``queue_timeout``. The coordinator listens on 127.0.0.1 only. The command lines are
fixed argument lists built from integers, never a shell string. Every refusal and failure is a
:class:`ClusterError`. What the page shows of a cluster (its plan, the workers' code, the
result's check, the URL settings): :mod:`pmapviz.features.cluster.clusterview`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import quote
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import cliflags, devicefacts
from pmapviz.core.running.processends import ended_words, is_stopped
from pmapviz.features.cluster.clustersettings import (
    MAX_LOCAL,
    MAX_PROCESSES,
    MIN_LOCAL,
    MIN_PROCESSES,
)

DEFAULT_TIMEOUT = 45.0
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 600.0
QUEUE_TIMEOUT_S = 120.0  # how long a launch waits for another session's launch
WORKER_BYTES = memoryestimates.worker_bytes(MAX_LOCAL)  # measured: workers report their own maxrss
KEEP_LINES, MAX_LINE = 200, 4096  # per worker: the last lines, each cut to this many bytes
TURNS = queues.resource("cluster", "cluster launch")  # one launch at a time per server


class ClusterError(RuntimeError):
    """A worker failed; ``str()`` is a one-line reason, ``details`` has every worker's tail."""

    def __init__(self, reason: str, details: dict[int, list[str]] | None = None):
        super().__init__(reason)
        self.details = details or {}


EXIT_NO_SOCKETS = cliflags.EXIT_NOT_HERE  # the CLI's exit status for NoSockets


class NoSockets(ClusterError):
    """This machine forbids the local sockets a cluster needs: nothing pmapviz can change."""


def check_sockets() -> None:
    """NoSockets, in words, where no coordinator could listen on 127.0.0.1."""
    if why := devicefacts.no_local_sockets():
        raise NoSockets(f"No local cluster here: {why}")


@dataclass
class ClusterResult:
    """What a local cluster's launch saw: each process's devices and collectives, the time
    it took, and the same work in one process where it was compared."""

    processes: int
    local_devices: int
    global_devices: int
    per_process: list[dict]
    seconds: float
    single_process: dict | None = None
    pids: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        """The result as a JSON-ready dict (the workers' pids left out)."""
        return {
            "processes": self.processes,
            "local_devices": self.local_devices,
            "global_devices": self.global_devices,
            "per_process": self.per_process,
            "seconds": self.seconds,
            "single_process": self.single_process,
        }


def check_budget(
    processes: int, budget: int | memorymodel.Budget, local_devices: int = MAX_LOCAL
) -> None:
    """Each worker is a whole Python + JAX process
    (:func:`pmapviz.core.budgets.memoryestimates.cluster_bytes`), on
    the host; refuse a cluster the budget cannot hold (ClusterError, as every refusal here)."""
    host = memorymodel.Budget.of(budget).host
    need = memoryestimates.cluster_bytes(processes, local_devices).host
    if need > host:
        fit = max(
            (
                p
                for p in range(1, processes)
                if memoryestimates.cluster_bytes(p, local_devices).host <= host
            ),
            default=0,
        )
        raise ClusterError(
            f"{processes} worker processes need about {need / 2**30:.2f} GiB of host memory; "
            f"the host memory budget is {host / 2**30:.2f} GiB, enough for {fit} (at least "
            f"{MIN_PROCESSES} needed)."
        )


def validate(processes: int, local_devices: int, timeout: float = DEFAULT_TIMEOUT) -> None:
    """ClusterError unless the processes, devices per process and timeout are in range."""
    if not MIN_PROCESSES <= processes <= MAX_PROCESSES:
        raise ClusterError(f"Use {MIN_PROCESSES} to {MAX_PROCESSES} processes (got {processes}).")
    if not MIN_LOCAL <= local_devices <= MAX_LOCAL:
        raise ClusterError(
            f"Use {MIN_LOCAL} to {MAX_LOCAL} devices per process (got {local_devices})."
        )
    check_timeout(timeout)


def check_timeout(timeout: float) -> float:
    """``timeout`` in seconds as a float, checked; ClusterError when it is out of range."""
    ok = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if not (ok and math.isfinite(timeout) and MIN_TIMEOUT <= timeout <= MAX_TIMEOUT):
        raise ClusterError(
            f"Use a timeout from {MIN_TIMEOUT:.0f} to {MAX_TIMEOUT:.0f} seconds (got {timeout!r})."
        )
    return float(timeout)


def parse_timeout(text: str) -> float:
    """'45' or '2.5' (ASCII digits) -> seconds, checked; ClusterError otherwise."""
    if not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,3})?", (text or "").strip()):
        raise ClusterError(
            f"--timeout {text[:20]!r} is not a number of seconds; use "
            f"{MIN_TIMEOUT:.0f} to {MAX_TIMEOUT:.0f}, e.g. --timeout 45."
        )
    return check_timeout(float(text))


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (OSError where this machine allows no socket)."""
    return devicefacts.free_local_port()


def worker_command(port: int, processes: int, pid: int, local: int, timeout: int) -> list[str]:
    """The argument list that starts one worker process (a list, never a shell string)."""
    return [
        sys.executable,
        "-m",
        "pmapviz.features.cluster.clusterworker",
        "--coordinator",
        f"127.0.0.1:{int(port)}",
        "--num-processes",
        str(int(processes)),
        "--process-id",
        str(int(pid)),
        "--local-devices",
        str(int(local)),
        "--timeout",
        str(int(timeout)),
        "--parent",
        str(os.getpid()),
    ]


CommandBuilder = Callable[[int, int, int, int, int], list[str]]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env["JAX_PLATFORMS"] = "cpu"
    root = str(Path(__file__).resolve().parents[3])  # the folder above pmapviz/
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _kill(procs: list[subprocess.Popen]) -> None:
    """SIGKILL every worker's process group (the worker and anything it started); reap."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)  # even if the worker exited: its group may live
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)
        if p.stdout is not None:
            p.stdout.close()


class _Lines:
    """Bytes from a pipe split into lines, keeping a partial last line; bounded in size."""

    def __init__(self):
        self.lines: deque[str] = deque(maxlen=KEEP_LINES)
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        """Adds a chunk: its complete lines are kept, the rest waits for the next chunk."""
        *done, self._partial = (self._partial + chunk).split(b"\n")
        self._partial = self._partial[:MAX_LINE]
        self.lines.extend(line[:MAX_LINE].decode("utf-8", "replace").rstrip("\r") for line in done)

    def close(self) -> list[str]:
        """Every line kept, the partial last one included."""
        if self._partial:
            self.lines.append(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        return list(self.lines)


def _collect(procs: list[subprocess.Popen], timeout: float, fault=None):
    """Read every worker's output until all exit, one fails, or the deadline; returns
    (lines, timed_out). Reads are non-blocking ``os.read`` on the raw pipes, so the deadline
    holds whatever a worker writes (half a line, then nothing) or does not write. The moment
    one worker fails (a signal, a non-zero exit) the reading ends, within 0.2 s, and the caller
    kills the others: they never wait out the coordinator's own timeouts for a dead peer."""
    bufs = [_Lines() for _ in procs]
    sel = selectors.DefaultSelector()
    for i, p in enumerate(procs):
        fd = p.stdout.fileno()
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, i)
    deadline = time.monotonic() + timeout
    if fault:
        fault(procs)
    timed_out = False
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(0.2, left)):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if chunk:
                    bufs[key.data].feed(chunk)
                else:  # end of file: the worker closed its output (usually: exited)
                    sel.unregister(key.fd)
            if any(p.poll() not in (None, 0) for p in procs):
                break
    finally:
        sel.close()
    return {i: b.close() for i, b in enumerate(bufs)}, timed_out


def _parse(lines: list[str]) -> dict | None:
    for line in reversed(lines):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return None


def run_single(total_devices: int, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """The same work in one process with all the devices (for the timing comparison)."""
    cmd = [
        sys.executable,
        "-m",
        "pmapviz.features.cluster.clusterworker",
        "--single",
        "--local-devices",
        str(int(total_devices)),
        "--parent",
        str(os.getpid()),
    ]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f"the single-process run did not finish within {timeout:.0f} s") from err
    res = _parse(r.stdout.splitlines())
    if r.returncode or res is None:
        said = quote((r.stderr.strip().splitlines() or ["(no output)"])[-1], 200)
        how = ended_words(r.returncode) if r.returncode else "ended without its result"
        raise ClusterError(
            f"the single-process run {how}; its last output: {said}. Nothing is left "
            "running: launch again."
        )
    return res


def _start(
    processes: int, local_devices: int, timeout: float, command: CommandBuilder
) -> list[subprocess.Popen]:
    """Start the workers, each in its own process group; on a failure, stop those started."""
    port = free_port()
    procs: list[subprocess.Popen] = []
    try:
        for i in range(processes):
            procs.append(
                subprocess.Popen(
                    command(port, processes, i, local_devices, math.ceil(timeout)),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env=_env(),
                )
            )
    except BaseException:
        _kill(procs)
        raise
    return procs


def _phase(lines: list[str]) -> str:
    """Where a worker was, from what it printed last (clusterworker's own lines)."""
    if any(line.startswith("joined:") for line in lines):
        return "after joining the cluster, in the check (its first collectives)"
    if any(line.startswith("joining ") for line in lines):
        return "while joining the cluster (jax.distributed.initialize)"
    return "while starting, before it joined"


def _culprit(codes: list, results: list, stopped: list[bool]) -> int | None:
    """The worker to blame: the first that failed, else one stopped (SIGSTOP), else the first
    without a result; None when every worker answered."""
    crashed = [i for i, c in enumerate(codes) if c not in (None, 0)]
    missing = [i for i, r in enumerate(results) if r is None]
    frozen = [i for i in missing if stopped[i]]
    return next(iter(crashed or frozen or missing), None)


def _failure(
    lines: dict[int, list[str]],
    codes: list,
    results: list,
    timeout: float,
    pids: list[int] | None = None,
    stopped: list[bool] | None = None,
) -> ClusterError | None:
    """The one line for a launch that failed (which process, its pid, how it ended, where it
    was), or None."""
    stopped = stopped or [False] * len(codes)
    i = _culprit(codes, results, stopped)
    if i is None:
        return None
    code = codes[i]
    who = f"process {i} of {len(codes)}" + (f" (pid {pids[i]})" if pids else "")
    last = quote(lines[i][-1], 200) if lines[i] else "(no output)"
    said = f"; its last output: {last}"
    if code is not None and code < 0:
        why, said = f"{ended_words(code)} during the launch, {_phase(lines[i])}", ""
    elif code is None and stopped[i]:
        why = f"was stopped (SIGSTOP) and did not finish within {timeout:.0f} s, the timeout"
    elif code is None:
        why = f"did not finish within {timeout:.0f} s (hung, or waiting for a peer)"
    elif code:
        why = f"exited with status {code} during the launch, {_phase(lines[i])}"
    else:
        why = "exited without its result"
    return ClusterError(
        f"{who} {why}{said}. The others were stopped and no process is left: launch again.",
        details=lines,
    )


def launch(
    processes: int,
    local_devices: int,
    timeout: float = DEFAULT_TIMEOUT,
    fault=None,
    compare_single: bool = True,
    command: CommandBuilder = worker_command,
    should_stop: Callable[[], bool] | None = None,
    on_wait: Callable[[int, float], None] | None = None,
    queue_timeout: float = QUEUE_TIMEOUT_S,
) -> ClusterResult:
    """Start the cluster, wait for every worker's result, stop everything.

    Waits its turn first (``on_wait(position, waited_s)`` while waiting; ``should_stop`` or
    ``queue_timeout`` end the wait). ``fault`` (tests): a callable given the worker processes right
    after they start, e.g. to kill one; ``command`` (tests): builds each worker's argument list.
    Raises ClusterError with a one-line reason for bad settings, a wait that ended without a turn,
    or any worker failing.
    """
    validate(processes, local_devices, timeout)
    check_budget(processes, memorypool.budget(), local_devices)
    check_sockets()
    t0 = time.perf_counter()
    try:
        turn = TURNS.acquire(queue_timeout, should_stop, on_wait)
    except (queues.WaitTimeout, queues.Cancelled) as err:
        raise ClusterError(str(err)) from err
    try:
        grant = memorypool.reserve(
            memoryestimates.cluster_bytes(processes, local_devices),
            f"{processes} worker processes",
            on_wait,
            should_stop,
            queue_timeout,
        )
    except (queues.WaitTimeout, queues.Cancelled, memorymodel.BudgetError) as err:
        turn.release()
        raise ClusterError(str(err)) from err
    with turn, grant:  # one launch at a time per server: ports never collide
        procs = _start(processes, local_devices, timeout, command)
        try:
            lines, _ = _collect(procs, timeout, fault)
            codes = [p.poll() for p in procs]
            stopped = [c is None and is_stopped(p.pid) for p, c in zip(procs, codes, strict=True)]
        finally:
            _kill(procs)
        results = [_parse(lines[i]) for i in range(processes)]
        err = _failure(lines, codes, results, timeout, [p.pid for p in procs], stopped)
        if err is not None:
            raise err
        single = run_single(processes * local_devices, timeout) if compare_single else None
    return ClusterResult(
        processes=processes,
        local_devices=local_devices,
        global_devices=results[0]["global_devices"],
        per_process=results,
        seconds=time.perf_counter() - t0,
        single_process=single,
        pids=[p.pid for p in procs],
    )
