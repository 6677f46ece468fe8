"""Your own f in a process of its own, stopped at the time limit.

A live run of an f the user typed is estimated before it starts (its memory from the compiled
program, its time from XLA's cost analysis), but an estimate can miss: an op XLA books no
FLOPs for, a LAPACK call, a loop. XLA cannot be interrupted inside the server's process, so on
the emulated CPU devices such a run goes to a worker process (``python -m
pmapviz.core.running.sandbox``)
that the server kills when the run passes ``--max-seconds``:

* one worker, started on the first run and kept warm for the next (:data:`IDLE_S`), with this
  server's device count; its own memory (:func:`memoryestimates.worker_bytes`) is held in the
  server's pool for as long as it lives, each run's estimate on top of it while it runs;
* runs take turns (a :class:`queues.FairLock`), each bounded by the time limit plus
  :data:`GRACE_S`; past it the worker is killed (the next run starts a new one) and the run
  raises :class:`Stopped`, whose message says what to make smaller;
* the worker may map the server's host budget (``--max-bytes``) beyond its start-up size
  (``RLIMIT_AS``, set as it says ready: :func:`address_room`): a run whose estimate missed fails
  inside the worker (numpy's MemoryError, XLA's RESOURCE_EXHAUSTED, an abort) and is
  :class:`OutOfMemory`, one line with that limit, instead of the machine running out;
* a worker that dies mid-run (SIGKILL, SIGSEGV, an abort) is :class:`WorkerFailed`, one line
  naming it (its pid) and the signal; one stopped by SIGSTOP (or hung) mid-run is killed at
  the time limit and the line says so; one found stopped between runs is replaced at once.
  Every time it is SIGKILLed if it lingers and reaped (no zombie), its memory goes back to the
  pool, and the next run starts a fresh worker;
* the worker (:mod:`pmapviz.app.sandboxworker`) runs named tasks (a live run, a timing, pmap
  beside shard_map); requests and answers are pickles over its own pipes (never from a user: the
  request holds the settings' text, which the worker checks again as the server did).

On a GPU or TPU (a chip serves one process, so no second process can run f there) the run
stays in the server's process, in a thread (:func:`in_thread`): at the limit its session is
told it is stopped, and the thread's result is dropped when XLA returns (its memory stays
reserved until then, so the budget still holds).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import first_line, quote
from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import deviceset, jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import processends as ends

GRACE_S = 5.0  # past the time limit before a run is stopped (start-up and reading back)
START_S = 60.0  # a new worker's start (Python, JAX, its devices) at most
IDLE_S = 120.0  # a worker no run has used for this long is stopped, and its memory freed
WORKER_LABEL = "the process your own f runs in"  # its standing grant in the pool
OFF = "PMAPVIZ_SANDBOX"  # "off": every run stays in the server's process (tests, debugging)
HEADER = struct.Struct("!Q")


class Stopped(RuntimeError):
    """A run passed the time limit and was stopped; the message says what to make smaller."""


class WorkerFailed(RuntimeError):
    """The worker process died or answered nonsense; the message quotes what it printed."""


# ---------------------------------------------------------------- where a run goes
def wanted() -> bool:
    """Whether runs of your own f go to a worker here: on the emulated CPU devices (a chip
    serves one process), unless ``PMAPVIZ_SANDBOX=off``."""
    return deviceset.current() == deviceset.CPU and os.environ.get(OFF) != "off"


def applies(program: Program) -> bool:
    """Whether a run of ``program`` goes to the worker: your own f (only the catalog's
    functions have estimates the tests hold), where :func:`wanted`."""
    return scenarios.program_ref(program)[0] == scenarios.EXPR and wanted()


def need(program: Program, run: memorymodel.Need) -> memorymodel.Need:
    """``run`` plus the worker process itself when the run goes there and none is warm: what
    the budget must hold for the run to start (callers refuse what can never fit)."""
    if not applies(program) or _WORKER.alive():
        return run
    extra = memoryestimates.worker_bytes(len(deviceset.devices(deviceset.CPU)))
    return memorymodel.Need(run.total + extra, run.host + extra, run.device)


def run_plan(
    program: Program,
    plan: Plan,
    run_need: memorymodel.Need,
    kind: str,
    seed: int,
    on_wait=None,
    limit_s: float | None = None,
    repeat: int = 5,
):
    """A live run of your own f in the worker (``pmaprun.run_plan`` there): its
    ``pmaprun.LiveResult``, or Stopped past the time limit."""
    args = (scenarios.program_ref(program), plan.key, kind, seed, repeat)
    return call(
        "live", args, run_need, "a live run of your own f", largest_axis(plan), on_wait, limit_s
    )


def call(
    task: str,
    args: tuple,
    run_need: memorymodel.Need,
    label: str,
    largest: int | None,
    on_wait=None,
    limit_s: float | None = None,
):
    """``task`` (a name in ``pmapviz.app.sandboxworker.TASKS``) on ``args`` in the worker (see the
    module doc), in its turn, holding ``run_need`` (the estimate from the compiled program) in
    the server's memory pool; its answer, or Stopped past the time limit (its words name the
    ``largest`` axis, to make smaller)."""
    limit = float(limit_s if limit_s is not None else jaxstartup.time_limit())
    with _TURNS.acquire(on_wait=on_wait):
        _WORKER.ensure(len(deviceset.devices(deviceset.CPU)), on_wait)
        with memorypool.reserve(run_need, label, on_wait):
            answer = _WORKER.ask((task, *args), limit, largest, label)
    jaxstartup.return_freed_memory()
    return answer


def largest_axis(plan: Plan) -> int | None:
    """The first argument's largest axis (what the stopped message says to make smaller)."""
    first = plan.leaves[0].shape if plan.leaves else ()
    return max(first) if first else None


def _stopped_words(largest: int | None, limit: float, pid: int) -> str:
    size = f" (its largest axis is {largest:,})" if largest else ""
    return (
        f"Your f ran past the {limit:.0f} s limit, so it was stopped {GRACE_S:.0f} s later: its "
        f"process (the sandbox worker, pid {pid}) was ended, and nothing of it is left running. "
        f"Make the inputs smaller{size}, or ask the operator for a longer --max-seconds."
    )


def run_here(
    action: Callable[[], object],
    run_need: memorymodel.Need,
    on_wait=None,
    limit_s: float | None = None,
    what: str = "This run of your own f",
):
    """``action()`` (which reserves nothing) in a thread of this process, holding ``run_need``
    in the pool until the thread ends, waited for at most the time limit plus
    :data:`GRACE_S`: Stopped past it. For runs that cannot go to another process (a chip
    serves one): the thread finishes on its own, its result dropped, its memory held till
    then, so the budget still holds."""
    limit = float(limit_s if limit_s is not None else jaxstartup.time_limit())
    grant = memorypool.reserve(run_need, "a live run of your own f", on_wait)
    box: dict = {}

    def work() -> None:
        try:
            box["value"] = action()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err
        finally:
            grant.release()

    thread = threading.Thread(target=work, name="pmapviz-run", daemon=True)
    thread.start()
    thread.join(limit + GRACE_S)
    if thread.is_alive():
        raise Stopped(
            f"{what} ran past the {limit:.0f} s limit: it is stopped for you, and its "
            "result will be dropped. The device cannot be interrupted, so it finishes "
            "in the background (its memory stays reserved until then). Make the "
            "inputs smaller."
        )
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ---------------------------------------------------------------- the worker, server side
class Worker:
    """The warm worker process (one per server), its pipes and its memory grant."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._grant: queues.Grant | None = None
        self._log: tempfile._TemporaryFileWrapper | None = None
        self._devices = 0
        self._used = 0.0
        self._room: tuple[int, str] | None = None  # its address-space limit, when it has one
        self._lock = threading.Lock()

    def alive(self) -> bool:
        """Whether the worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    def pid(self) -> int | None:
        """The worker process's id, or None when none is running."""
        return self._proc.pid if self.alive() else None

    def ensure(self, n_devices: int, on_wait=None) -> None:
        """A warm worker with ``n_devices`` devices: this one, or a new one (its memory held
        in the pool first, waiting in the queue while others hold it). One found stopped
        (SIGSTOP) between runs is replaced: the run would only wait out the time limit."""
        with self._lock:
            if self.alive() and self._devices == n_devices and not ends.is_stopped(self._proc.pid):
                return
            self._stop_locked()
            grant = memorypool.reserve(
                memorymodel.Need.host_only(memoryestimates.worker_bytes(n_devices)),
                WORKER_LABEL,
                on_wait,
            )
            try:
                self._start_locked(n_devices)
            except BaseException:
                self._stop_locked()
                grant.release()
                raise
            self._grant = grant
        _watch_idle()

    def _start_locked(self, n_devices: int) -> None:
        env = dict(os.environ)
        path = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
        env.update(
            JAX_PLATFORMS="cpu",
            JAX_NUM_CPU_DEVICES=str(n_devices),
            XLA_FLAGS=jaxstartup.merge_xla_flags(env.get("XLA_FLAGS"), n_devices),
            PYTHONPATH=path,
        )
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _stop_locked
        cmd = [
            sys.executable,
            "-m",
            "pmapviz.app.sandboxworker",
            "--devices",
            str(n_devices),
            "--parent",
            str(os.getpid()),
        ]
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=str(_ROOT),
        )
        self._devices = n_devices
        self._used = time.monotonic()
        try:
            ready = self._read(START_S, "its start")
        except TimeoutError:
            raise WorkerFailed(
                f"The sandbox worker (pid {self._proc.pid}) did not start within {START_S:.0f} "
                "s, so it was ended; the machine may be overloaded: run again in a moment."
            ) from None
        if ready != "ready":
            raise WorkerFailed(
                f"The sandbox worker (pid {self._proc.pid}) started wrong (it said "
                f"{quote(ready, 80)}), so it was ended: run again."
            )
        self._room = ends.limit_address_space(self._proc.pid)

    def ask(
        self,
        request: tuple,
        limit_s: float,
        largest: int | None = None,
        label: str = "a run of your own f",
    ):
        """Send ``request``; its answer within ``limit_s`` plus :data:`GRACE_S`, else the
        worker is killed and Stopped raised (its words name the ``largest`` axis to make
        smaller, or the signal that stopped the worker). An error in the worker is raised
        here as itself, but one that says memory ran out ends the worker and is an
        :class:`OutOfMemory`; a worker that died is a :class:`WorkerFailed` saying how."""
        with self._lock:
            if not self.alive():
                raise self._ended_locked(f"before {label} started")
            pid = self._proc.pid
            try:
                send(self._proc.stdin, request)
                ok, value = self._read(limit_s + GRACE_S, label)
            except TimeoutError:
                stopped = ends.is_stopped(pid)
                self._stop_locked()
                raise Stopped(
                    ends.hung_words(pid, limit_s, GRACE_S)
                    if stopped
                    else _stopped_words(largest, limit_s, pid)
                ) from None
            except OSError:  # the pipe broke: it died as the request went out
                raise self._ended_locked(f"as {label} started") from None
            finally:
                self._used = time.monotonic()
            if not ok and isinstance(value, BaseException) and ends.is_memory_error(value):
                room = self._room
                self._stop_locked()
                raise OutOfMemory(
                    ends.memory_words(pid, f"during {label}", room, first_line(value))
                )
        if ok:
            return value
        raise value

    def _read(self, timeout_s: float, label: str):
        """One message from the worker within ``timeout_s`` (TimeoutError past it);
        WorkerFailed when it died, saying how (the worker is reaped, its memory released)."""
        out = self._proc.stdout
        deadline = time.monotonic() + timeout_s
        head = _read_exactly(out, HEADER.size, deadline)
        body = _read_exactly(out, HEADER.unpack(head)[0], deadline) if head else b""
        if not head or not body:
            raise self._ended_locked(f"during {label}")
        return pickle.loads(body)  # noqa: S301 - our own worker's pipe, never a user's bytes

    def _ended_locked(self, when: str) -> WorkerFailed:
        """The worker ended on its own: reaped (killed first if it lingers), its memory given
        back; the one line that says which process, how it ended and what to do."""
        proc, room = self._proc, self._room
        if proc is None:
            return WorkerFailed("The sandbox worker is not running: run again to start one.")
        code = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = proc.wait(2.0)  # it closed its pipe: it is exiting, reap it
        tail = self._log_tail()
        said, memory = ends.last_line(tail), ends.memory_line(tail)
        self._stop_locked()
        pid = proc.pid
        if room is not None and memory is not None:
            return OutOfMemory(ends.memory_words(pid, when, room, memory, ends.ended_words(code)))
        return WorkerFailed(ends.died_words(pid, code, when, said))

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0, os.SEEK_END)
        self._log.seek(max(0, self._log.tell() - 600))
        return self._log.read().decode(errors="replace").strip()[-600:]

    def stop(self) -> None:
        """Stop the worker process, if any, and release its memory."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        proc, self._proc, self._room = self._proc, None, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()  # SIGKILL: it also ends a stopped (SIGSTOP) process
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)  # reaped: no zombie left
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._grant is not None:
            self._grant.release()
            self._grant = None

    def stop_if_idle(self, idle_s: float = IDLE_S) -> bool:
        """Stop the worker when no run has used it for ``idle_s``, or at once when it died
        between runs (reaped, its memory back in the pool); whether it stopped."""
        if not self._lock.acquire(blocking=False):
            return False  # a run holds it
        try:
            if self._proc is None:
                return False
            if self.alive() and time.monotonic() - self._used < idle_s:
                return False
            self._stop_locked()
            return True
        finally:
            self._lock.release()


class OutOfMemory(WorkerFailed):
    """The worker ran out of memory (its address-space limit); the message says the limit."""


def _read_exactly(pipe, size: int, deadline: float) -> bytes:
    """``size`` bytes from ``pipe`` by ``deadline`` (TimeoutError past it); b"" at its end."""
    fd, parts, got = pipe.fileno(), [], 0
    while got < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            return b""
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def send(pipe, message) -> None:
    """One message (a pickle, its length first) on the worker's pipe."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(HEADER.pack(len(body)) + body)
    pipe.flush()


_ROOT = Path(__file__).resolve().parents[3]  # the folder above pmapviz/
_WORKER = Worker()
_TURNS = queues.resource("sandbox", "run of its own f")
_WATCH: list[threading.Thread] = []
atexit.register(_WORKER.stop)


def _watch_idle() -> None:
    """One daemon thread per server stops the worker once it has been idle for IDLE_S."""
    if _WATCH:
        return

    def loop() -> None:
        while True:
            time.sleep(min(10.0, IDLE_S / 4))
            _WORKER.stop_if_idle()

    _WATCH.append(threading.Thread(target=loop, name="pmapviz-sandbox-idle", daemon=True))
    _WATCH[0].start()
