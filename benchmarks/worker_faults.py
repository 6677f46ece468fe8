"""Workers that die (issue 52): each fault injected for real into a real worker process, and
what the user was told, how fast, and what was left behind.

    .venv/bin/python benchmarks/worker_faults.py [--devices 8] [--run-s 60]

Sandbox worker (your own f, ``pmapviz.core.running.sandbox``): SIGKILL, SIGSEGV, SIGABRT and
SIGBUS a few seconds into a long run; SIGSTOP mid-run (the time limit ends it); SIGKILL and
SIGSTOP while it waits between runs; a run past its address-space limit (``--max-bytes 512M``)
in numpy and in XLA. Cluster (``pmapviz.features.cluster.cluster``): one process SIGKILLed
while the others wait in ``jax.distributed.initialize`` (process 1, and the coordinator,
process 0), one SIGKILLed in the first collective, one SIGSEGVed while joining, one SIGSTOPped
(the timeout ends it), and ``pmapviz cluster`` on the command line with a worker SIGKILLed.

Each row: the fault, how it was injected, the one line the user saw, seconds from the fault to
that line, processes left behind (children of this process and workers naming it as their
parent, zombies included), tracebacks in what was shown, whether the memory pool was whole
again and whether the next run (a fresh worker) passed. Every row should read: one line, 0
left, 0 tracebacks, pool whole, next run passed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import common
import psutil

SLOW = "jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()"  # tens of seconds at (N, 200)
ROWS: list[dict] = []


def left_behind() -> set[int]:
    """This process's children (zombies too) and any worker that names it as its parent."""
    out = {c.pid for c in psutil.Process().children(recursive=True)}
    ours = f"--parent {os.getpid()}"
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if ours in " ".join(p.info["cmdline"] or []):
                out.add(p.info["pid"])
    return out


def pool_whole() -> bool:
    from pmapviz.core.budgets import memorypool

    pool = memorypool.admission()
    return pool.free() == pool.capacity


@contextlib.contextmanager
def host_budget(nbytes: int):
    """This process's settings applied again with ``--max-bytes nbytes``, restored after."""
    from pmapviz.core.devices import jaxstartup
    from pmapviz.core.running import sandbox

    sandbox._WORKER.stop()
    original = jaxstartup.applied_settings()
    changed = jaxstartup.Settings(
        devices=original.devices,
        platform="cpu",
        devices_source=original.devices_source,
        max_bytes=nbytes,
    )
    jaxstartup.apply(changed)
    try:
        yield
    finally:
        sandbox._WORKER.stop()
        jaxstartup.apply(original)


def count_left(before: set[int]) -> int:
    """Processes that appeared since ``before`` and are still there (zombies count)."""
    time.sleep(0.3)  # anything still exiting has exited
    return len(left_behind() - before)


def record(fault: str, injection: str, line: str, told_s: float, left: int, **more):
    ROWS.append(
        {
            "fault": fault,
            "injection": injection,
            "line": line,
            "told_s": told_s,
            "left": left,
            "tracebacks": line.count("Traceback") + line.count('File "'),
            "lines": len(line.strip().splitlines()),
            **more,
        }
    )


# ---------------------------------------------------------------- the sandbox worker
def _small_run_passes(n: int) -> bool:
    from pmapviz.core.budgets import memorymodel
    from pmapviz.core.expressions import expr
    from pmapviz.core.planning.planning import plan
    from pmapviz.core.running import sandbox

    small = expr.program("x", "x + 1")
    sp = plan(small, [(n, 4)], n_devices=n)
    try:
        return sandbox.run_plan(
            small, sp, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=60
        ).passed
    except Exception:  # noqa: BLE001 - a row says it failed
        return False


def sandbox_fault(n: int, fault: str, how: str, inject, delay: float, body, shape, limit_s):
    """One run of ``body`` at ``shape`` with ``inject(pid)`` ``delay`` s after it starts."""
    from pmapviz.core.budgets import memorymodel
    from pmapviz.core.expressions import expr
    from pmapviz.core.planning.planning import plan
    from pmapviz.core.running import sandbox

    sandbox._WORKER.stop()
    before = left_behind()
    sandbox._WORKER.ensure(n)
    pid = sandbox._WORKER.pid()
    prog = expr.program("x", body)
    p = plan(prog, [shape], n_devices=n)
    at: list[float] = []

    def fire() -> None:
        at.append(time.monotonic())
        if inject is not None:
            inject(pid)

    timer = threading.Timer(delay, fire)
    timer.start()
    try:
        sandbox.run_plan(prog, p, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=limit_s)
        line = "(no message: the run finished)"
    except Exception as err:  # noqa: BLE001 - what the page shows is str(err)
        line = str(err)
    finally:
        timer.cancel()
    told = time.monotonic() - (at[0] if at else time.monotonic())
    left, whole = count_left(before), pool_whole()  # before the next run starts a worker
    ok = _small_run_passes(n)
    sandbox._WORKER.stop()
    record(fault, how, line, told, left, pool=whole, next_ok=ok)


def sandbox_idle_fault(n: int, fault: str, sig: signal.Signals, limit_s: float) -> None:
    """``sig`` to the warm worker between runs, then a run."""
    from pmapviz.core.running import sandbox

    sandbox._WORKER.stop()
    before = left_behind()
    sandbox._WORKER.ensure(n)
    os.kill(sandbox._WORKER.pid(), sig)
    time.sleep(0.5)
    t = time.monotonic()
    from pmapviz.core.budgets import memorymodel
    from pmapviz.core.expressions import expr
    from pmapviz.core.planning.planning import plan

    small = expr.program("x", "x + 1")
    sp = plan(small, [(n, 4)], n_devices=n)
    try:
        sandbox.run_plan(small, sp, memorymodel.Need.host_only(2**20), "arange", 0, limit_s=limit_s)
        line = "(no message: the run started a fresh worker and passed)"
    except Exception as err:  # noqa: BLE001
        line = str(err)
    told = time.monotonic() - t
    ok = _small_run_passes(n)
    sandbox._WORKER.stop()  # the fresh worker the run started: what remains is the fault's
    left, whole = count_left(before), pool_whole()
    how = f"os.kill(pid, {sig.name}) between runs"
    record(fault, how, line, told, left, pool=whole, next_ok=ok)


def sandbox_rows(n: int, run_s: int) -> None:
    from pmapviz.core.running import sandbox

    for sig in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
        sandbox_fault(
            n, f"sandbox {sig.name} mid-run", f"os.kill(pid, {sig.name}) 3 s into a long run",
            lambda pid, s=sig: os.kill(pid, s), 3.0, SLOW, (n, 200), run_s,
        )  # fmt: skip
    sandbox_fault(
        n, "sandbox SIGSTOP mid-run (hung)", "os.kill(pid, SIGSTOP) 1 s into a run, limit 10 s",
        lambda pid: os.kill(pid, signal.SIGSTOP), 1.0, SLOW, (n, 200), 10,
    )  # fmt: skip
    sandbox_idle_fault(n, "sandbox SIGKILL while idle", signal.SIGKILL, 60)
    sandbox_idle_fault(n, "sandbox SIGSTOP while idle", signal.SIGSTOP, 10)
    with host_budget(512 * 2**20):
        for body, shape, where in (
            ("x + 1", (n, 2**25), "1 GiB of inputs (numpy)"),
            ("jnp.sort(jnp.einsum('a,b->ab', x, x)).sum()", (n, 2**13), "2 GiB inside XLA"),
        ):
            sandbox_fault(
                n, f"sandbox out of memory: {where}",
                "--max-bytes 512M; the run's estimate claims 1 MiB (an estimate that missed)",
                None, 0.0, body, shape, run_s,
            )  # fmt: skip
    sandbox._WORKER.stop()


# ---------------------------------------------------------------- the cluster
def _listening(proc, within: float = 30) -> None:
    end = time.monotonic() + within
    while time.monotonic() < end and proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            conns = psutil.Process(proc.pid).net_connections(kind="inet")
            if any(c.status == psutil.CONN_LISTEN for c in conns):
                return
        time.sleep(0.05)


KILLED_IN_THE_CHECK = (
    "import os, signal, sys; from pmapviz.features.cluster import clusterworker as w; "
    "w.run_check = lambda: os.kill(os.getpid(), signal.SIGKILL); sys.exit(w.main(sys.argv[1:]))"
)


def cluster_fault(fault: str, how: str, processes: int, timeout: float, inject=None, command=None):
    from pmapviz.features.cluster import cluster

    before = left_behind()
    at: list[float] = []

    def hook(procs) -> None:
        if inject is not None:
            inject(procs)
        at.append(time.monotonic())

    kwargs = {"command": command} if command else {}
    t = time.monotonic()
    try:
        cluster.launch(processes, 1, timeout=timeout, fault=hook, compare_single=False, **kwargs)
        line = "(no message: the launch passed)"
    except cluster.ClusterError as err:
        line = str(err)
    told = time.monotonic() - (at[0] if inject is not None and at else t)
    left, whole = count_left(before), pool_whole()
    try:
        ok = cluster.launch(2, 1, compare_single=False).per_process[0]["psum"] == 3.0
    except cluster.ClusterError:
        ok = False
    record(fault, how, line, told, left, pool=whole, next_ok=ok)


def _in_the_check(port, processes, pid, local, timeout):
    from pmapviz.features.cluster import cluster

    cmd = cluster.worker_command(port, processes, pid, local, timeout)
    return cmd if pid != 1 else [sys.executable, "-c", KILLED_IN_THE_CHECK, *cmd[3:]]


def cluster_rows() -> None:
    def kill_joining(victim: int, sig: signal.Signals):
        def inject(procs) -> None:
            _listening(procs[0])  # the coordinator is up: initialize is under way
            os.kill(procs[victim].pid, sig)

        return inject

    cluster_fault(
        "cluster process 1 SIGKILL while joining",
        "os.kill(process 1, SIGKILL) once process 0 listens (in initialize)", 2, 45,
        kill_joining(1, signal.SIGKILL),
    )  # fmt: skip
    cluster_fault(
        "cluster coordinator SIGKILL while joining",
        "os.kill(process 0, SIGKILL) once it listens (in initialize)", 2, 45,
        kill_joining(0, signal.SIGKILL),
    )  # fmt: skip
    cluster_fault(
        "cluster process 1 SIGSEGV while joining",
        "os.kill(process 1, SIGSEGV) once process 0 listens (in initialize)", 3, 45,
        kill_joining(1, signal.SIGSEGV),
    )  # fmt: skip
    cluster_fault(
        "cluster process 1 SIGKILL in the first collective",
        "process 1 SIGKILLs itself after joining; process 0 waits in psum", 2, 45,
        command=_in_the_check,
    )  # fmt: skip
    cluster_fault(
        "cluster process 0 SIGSTOP (hung)",
        "os.kill(process 0, SIGSTOP) 0.2 s in; --timeout 10", 2, 10,
        lambda procs: (time.sleep(0.2), os.kill(procs[0].pid, signal.SIGSTOP)),
    )  # fmt: skip


def cli_row() -> None:
    """``pmapviz cluster --processes 2 --local-devices 1`` with worker 1 SIGKILLed."""
    before = left_behind()
    cli = subprocess.Popen(
        [sys.executable, "-m", "pmapviz", "cluster", "--processes", "2", "--local-devices", "1"],
        cwd=common.ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    victim, end = None, time.monotonic() + 30
    while victim is None and time.monotonic() < end:
        with contextlib.suppress(psutil.Error):
            for c in psutil.Process(cli.pid).children():
                line = " ".join(c.cmdline())
                if "--process-id 1" in line and c.num_threads() > 1:  # importing JAX
                    victim = c
        time.sleep(0.05)
    t = time.monotonic()
    if victim is not None:
        victim.kill()
    _, err = cli.communicate(timeout=120)
    line = err.decode(errors="replace").strip() + f"  [exit status {cli.returncode}]"
    record(
        "CLI: pmapviz cluster, worker 1 SIGKILLed", "psutil kill of the CLI's worker 1",
        line, time.monotonic() - t, count_left(before), pool="(own process)", next_ok="-",
    )  # fmt: skip


def main() -> int:
    args = common.start(__doc__, run_s=60)
    sandbox_rows(args.devices, args.run_s)
    cluster_rows()
    cli_row()
    print("| fault | injection | what the user saw | told after | lines | left | tracebacks "
          "| pool whole | next run |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in ROWS:
        print(
            f"| {r['fault']} | {r['injection']} | {r['line']} | {r['told_s']:.1f} s | "
            f"{r['lines']} | {r['left']} | {r['tracebacks']} | {r['pool']} | {r['next_ok']} |"
        )
    bad = [
        r
        for r in ROWS
        if r["left"] or r["tracebacks"] or r["lines"] != 1 or False in (r["pool"], r["next_ok"])
    ]
    left = sum(r["left"] for r in ROWS)
    tracebacks = sum(r["tracebacks"] for r in ROWS)
    print(
        f"\n{len(ROWS)} faults: {len(bad)} rows fall short; {left} processes left behind, "
        f"{tracebacks} tracebacks shown."
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
