"""One process of a real cluster: ``python -m pmapviz cluster --join``, started on every
process by the cluster's own launcher (``srun``, ``mpirun``, ``gcloud ... --worker=all``).

Each process:

1. says which environment JAX will detect (:mod:`pmapviz.features.cluster.clusterenv`) and refuses,
in one
   line, before starting anything, when a variable is missing or wrong;
2. with ``local_devices``, asks for that many CPU devices (``jax_platforms="cpu"`` and
   ``jax_num_cpu_devices``, before JAX starts); without, it uses the devices JAX gives it.
   (On Slurm and Open MPI, JAX defaults ``local_device_ids`` to ``[local rank]``, which it
   applies only as ``jax_cuda_visible_devices`` / ``jax_rocm_visible_devices``: one GPU per
   process, and nothing for CPU devices, so 2 processes x 2 CPU devices are 4 global devices.)
3. calls ``jax.distributed.initialize()`` with no arguments;
4. runs :func:`pmapviz.features.cluster.clusterworker.run_check` over every global device;
5. puts its record (host, process index, local devices, results, timings) in the distributed
   runtime's key-value store; process 0 reads every record from it
   (``blocking_key_value_get``) and builds the report
   (:func:`pmapviz.features.cluster.clusterreport.build`).

A watchdog bounds it all: whatever hangs (a coordinator that never answers, a peer that never
arrives, a collective whose peer died), the process says in one line what it was waiting for
and exits with status 1 within ``timeout`` seconds; JAX's own timeouts (300 s to join, 100 s
heartbeats) come later than :data:`MAX_TIMEOUT`, so the watchdog speaks first. Failures are
:class:`JoinError`, one line each, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pmapviz.core.base.valuetext import first_line
from pmapviz.features.cluster import clusterenv, clusterreport, clusterworker

DEFAULT_TIMEOUT, MIN_TIMEOUT, MAX_TIMEOUT = 120.0, 1.0, 280.0  # below JAX's own 300 s
MIN_LOCAL, MAX_LOCAL = 1, 64
RECORD_KEY = "pmapviz/features/cluster/record/{}"


class JoinError(RuntimeError):
    """This process could not join or finish; ``str()`` is the one line to print."""


@dataclass
class JoinOutcome:
    """What joining gave this process: its own record, and on process 0 the report."""

    record: dict  # this process's
    report: dict | None  # process 0's: every process's records, gathered


class Watchdog:
    """Ends the process (status 1) with one line on stderr when ``timeout`` seconds pass
    before :meth:`stop`; :attr:`phase` says what it was waiting for. A daemon thread: JAX's
    blocking calls (joining, collectives, the key-value store) release the GIL."""

    def __init__(self, timeout: float, who: str, out=None, exit_: Callable[[int], None] = os._exit):
        self.timeout, self.who = timeout, who
        self.phase = "starting"
        self._done = threading.Event()
        self._out, self._exit = out, exit_
        self._thread = threading.Thread(target=self._watch, daemon=True, name="pmapviz-watchdog")

    def start(self) -> Watchdog:
        """The watchdog, now watching."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stands the watchdog down: the work finished in time."""
        self._done.set()

    def _watch(self) -> None:
        if self._done.wait(self.timeout):
            return
        out = self._out or sys.stderr
        print(
            f"pmapviz: {self.who}: {self.phase} did not finish within {self.timeout:g} s; stopped.",
            file=out,
            flush=True,
        )
        self._exit(1)


def hint(detection: clusterenv.Detection) -> str:
    """What joining waits for, in the watchdog's words."""
    if detection.process_id == 0:
        return (
            f"joining (waiting for all {detection.process_count} processes to reach "
            f"the coordinator {detection.coordinator or ''}; did every process "
            "start?)"
        )
    where = detection.coordinator or "the coordinator"
    return (
        f"joining (no answer from {where}: is process 0 running there, and its port "
        "free and reachable?)"
    )


def join(
    local_devices: int | None,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] = os.environ,
    watchdog_exit: Callable[[int], None] = os._exit,
) -> JoinOutcome:
    """Join the cluster this process was started in, run the check, gather (process 0)."""
    detection = clusterenv.detect(env)
    if detection.problem:
        raise JoinError(detection.problem)
    dog = Watchdog(timeout, detection.describe(), exit_=watchdog_exit).start()
    try:
        with stdout_to_stderr():
            return _run(detection, local_devices, timeout, dog)
    except JoinError:
        raise
    except Exception as err:  # noqa: BLE001  (a check, a gather, a shutdown that failed)
        raise JoinError(f"{detection.describe()}: {dog.phase} failed: {first_line(err)}") from err
    finally:
        dog.stop()


def _run(
    detection: clusterenv.Detection, local_devices: int | None, timeout: float, dog: Watchdog
) -> JoinOutcome:
    import jax

    t0 = time.monotonic()
    if local_devices is not None:
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_num_cpu_devices", local_devices)
    dog.phase = hint(detection)
    try:
        jax.distributed.initialize()  # no arguments: JAX's own detection
    except Exception as err:  # noqa: BLE001  (JAX raises ValueError, RuntimeError, KeyError...)
        raise JoinError(
            f"{detection.describe()}, but jax.distributed.initialize() failed: {first_line(err)}"
        ) from err
    init_s = time.monotonic() - t0
    from jax._src import distributed

    state = distributed.global_state
    me, n = jax.process_index(), jax.process_count()
    dog.phase = f"the check on process {me} (psum, all_gather, axis_index over all devices)"
    record = {
        **clusterworker.run_check(),
        "init_s": init_s,
        "hostname": socket.gethostname()[:255],
        "pid": os.getpid(),
    }
    dog.phase = f"gathering the records of all {n} processes"
    state.client.key_value_set(RECORD_KEY.format(me), json.dumps(record))
    report = None
    if me == 0:
        records = [record]
        for i in range(1, n):
            left_ms = max(1, int((timeout - (time.monotonic() - t0)) * 1000))
            records.append(
                json.loads(state.client.blocking_key_value_get(RECORD_KEY.format(i), left_ms))
            )
        environment = {**detection.to_json(), "coordinator": state.coordinator_address}
        made = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        report = clusterreport.build(
            records, environment, time.monotonic() - t0, made, jax.__version__
        )
    dog.phase = "shutting down (waiting for every process to finish)"
    jax.distributed.shutdown()
    return JoinOutcome(record, report)


@contextlib.contextmanager
def stdout_to_stderr():
    """While JAX works, file descriptor 1 goes to stderr: its collectives print to stdout
    ("[Gloo] Rank 0 is connected to 3 peer ranks ..."), and a launcher merges every process's
    stdout, which must carry the report alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def summary(report: dict) -> list[str]:
    """Process 0's lines of text (without --json)."""
    check = report["check"]
    env = report["environment"]
    lines = [
        f"{env.get('name')}: {report['process_count']} processes on "
        f"{len(report['hosts'])} host(s), {report['global_device_count']} global devices "
        f"(coordinator {env.get('coordinator')})"
    ]
    for r in report["per_process"]:
        lines.append(
            f"  process {r['process_index']} on {r['hostname']}: local devices "
            f"{r['local_device_ids']}, psum {r['psum']:g}, joined in "
            f"{r['init_s']:.2f} s"
        )
    lines.append(
        f"check: psum {'equal' if check['psum_equal'] else 'DIFFERS'} in every process"
        f" and {'equal to' if check['psum_correct'] else 'NOT'} numpy's "
        f"{check['expected_psum']:g}; all_gather "
        f"{'correct' if check['all_gather_correct'] else 'WRONG'}"
    )
    return lines
