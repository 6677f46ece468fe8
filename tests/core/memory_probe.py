"""Measure one action's peak memory in this (fresh) process, against
pmapviz.core.budgets.memoryestimates' estimate.

    python -m tests.core.memory_probe live double float32 4 4,8000000
    python -m tests.core.memory_probe dot 2000000 4

JAX start-up, device set-up, compilation and a small warm-up run happen first; then the RSS
high-water mark is reset (``5`` into /proc/self/clear_refs) and the action runs. measured =
VmHWM after it - VmRSS before it. Where the mark cannot be reset, a thread samples the RSS
every millisecond instead. Prints one JSON line: action, estimate, measured (bytes).

    python -m tests.core.memory_probe --many 4 '[["dot", "2000000", "4"], ...]'

runs each case in a process of its own forked from one that imported JAX and pmapviz once
(the child starts its own JAX backend), four at a time; prints one JSON list of the rows.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import threading
import time

from pmapviz.core.devices import devicerates

DEVICES = 4


def _status(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_during(action) -> tuple[int, object]:
    """(peak RSS during ``action()`` - RSS just before it, its result)."""
    gc.collect()
    if _reset_mark():
        before = _status("VmRSS")
        result = action()
        return _status("VmHWM") - before, result
    import psutil

    proc, peak, done = psutil.Process(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.001)

    before = proc.memory_info().rss
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    result = action()
    done.set()
    t.join()
    return max(peak[0], proc.memory_info().rss) - before, result


def _setup() -> None:
    from pmapviz.core.devices import jaxstartup

    jaxstartup.apply(jaxstartup.Settings(devices=DEVICES, platform="cpu"))


def live(key: str, dtype: str, n: str, *shapes: str):
    from pmapviz.core.expressions import functions
    from pmapviz.core.planning.planning import plan
    from pmapviz.core.running import pmapcompile, pmaprun

    prog = functions.get(key)
    sh = [tuple(int(v) for v in s.split(",")) for s in shapes]
    axes = tuple(None if k and key == "matmul" else 0 for k in range(len(sh)))
    p = plan(prog, sh, in_axes=axes, n_devices=int(n), dtypes=[dtype] * len(sh))
    assert p.ok, p.problems
    compiled = pmapcompile.compile_plan(prog, p)
    small = plan(
        prog,
        [(int(n),) + s[1:] if a == 0 else s for s, a in zip(sh, axes, strict=True)],
        in_axes=axes,
        n_devices=int(n),
        dtypes=[dtype] * len(sh),
    )
    pmaprun.run_plan(prog, small, pmapcompile.compile_plan(prog, small), repeat=1)
    measured, res = peak_during(lambda: pmaprun.run_plan(prog, p, compiled))
    assert res.passed and res.flat_equal in (None, True)
    return pmaprun.estimate_bytes(p, prog).total, measured


def dot(pairs: str, n: str):
    from pmapviz.core.budgets import memoryestimates
    from pmapviz.features.live import dotproduct

    dotproduct.run_dot(int(n) * 1000, int(n), repeat=1, limit=10**9)
    measured, res = peak_during(lambda: dotproduct.run_dot(int(pairs), int(n), limit=10**9))
    assert res.allclose and res.numpy_max_abs_diff < 1e-4
    return memoryestimates.dot_bytes(int(pairs), int(n)).total, measured


def sweep(workload: str, size: str, budget: str):
    from pmapviz.core.budgets import memoryestimates
    from pmapviz.features.timing import benchmarking as bench
    from pmapviz.features.timing import sweepsetup, workloads

    wl, ks = workloads.WORKLOADS[workload], [1, DEVICES]
    bench.sweep(wl, [DEVICES * 8], ks, list(sweepsetup.IMPLS), repeat=1, budget=10**9)

    devicerates.set_rates(None)  # measured again, inside the action, with a probe sized by budget
    estimate = memoryestimates.sweep_bytes(wl, [int(size)], ks, sweepsetup.IMPLS, int(budget)).total
    measured, _ = peak_during(
        lambda: bench.sweep(
            wl, [int(size)], ks, list(sweepsetup.IMPLS), repeat=2, budget=int(budget)
        )
    )
    return estimate, measured


def timing_plan(key: str, dtype: str, shape: str):
    from pmapviz.core.budgets import memoryestimates
    from pmapviz.core.expressions import functions
    from pmapviz.core.planning.planning import plan
    from pmapviz.features.timing import benchmarking as bench

    prog = functions.get(key)
    sh = tuple(int(v) for v in shape.split(","))
    p = plan(prog, [sh] * len(prog.arg_names), n_devices=DEVICES, dtypes=dtype)
    small = plan(prog, [(DEVICES, 8)] * len(prog.arg_names), n_devices=DEVICES, dtypes=dtype)
    bench.measure_plan(prog, small, repeat=1, bandwidth_gbs=10.0)
    measured, _ = peak_during(lambda: bench.measure_plan(prog, p, repeat=2, bandwidth_gbs=10.0))
    return memoryestimates.plan_timing_bytes(p).total, measured


def reserved_during(action) -> tuple[int, int, object]:
    """(the largest Need.total the action reserved with ``memorypool.reserve``, its peak as
    :func:`peak_during` measures it, its result): for actions whose reservation is read from
    their compiled programs, so the estimate held to the measurement is what they hold."""
    from pmapviz.core.budgets import memorypool

    seen, real = [], memorypool.reserve

    def spy(need, *args, **kwargs):
        seen.append(need)
        return real(need, *args, **kwargs)

    memorypool.reserve = spy
    try:
        measured, result = peak_during(action)
    finally:
        memorypool.reserve = real
    return max(n.total for n in seen), measured, result


def train(model: str, batch: str, steps: str):
    from pmapviz.features.training import trainingmodel, trainingrun

    trainingrun.train(
        trainingmodel.Config("linear", DEVICES, 8 * DEVICES, 2)
    )  # JAX's first-use costs
    cfg = trainingmodel.Config(model, DEVICES, int(batch), int(steps))
    estimate, measured, hist = reserved_during(lambda: trainingrun.train(cfg))
    assert hist.replicas_identical
    return estimate, measured


def collective(key: str, m: str):
    from pmapviz.features.collectives import collectiveruns

    collectiveruns.run("psum", DEVICES, 4)  # JAX's first-use costs
    estimate, measured, _ = reserved_during(lambda: collectiveruns.run(key, DEVICES, int(m)))
    return estimate, measured


def cluster(processes: str, local: str):
    """A worker is a process of its own: its peak is its whole RSS, as it reports it."""
    from pmapviz.core.budgets import memoryestimates
    from pmapviz.features.cluster import cluster as cl

    res = cl.launch(int(processes), int(local), compare_single=False)
    return memoryestimates.worker_bytes(int(local)), max(
        r["max_rss_bytes"] for r in res.per_process
    )


ACTIONS = {
    "live": live,
    "dot": dot,
    "sweep": sweep,
    "timing_plan": timing_plan,
    "train": train,
    "collective": collective,
    "cluster": cluster,
}


def main(argv: list[str]) -> int:
    _setup()
    estimate, measured = ACTIONS[argv[0]](*argv[1:])
    print(json.dumps({"action": " ".join(argv), "estimate": estimate, "measured": measured}))
    return 0


# imported once by ``--many``, before it forks a process per case: what every case's process
# would otherwise import for itself (about 1.5 CPU-s each)
PRELOAD = (
    "jax",
    "jax.numpy",
    "pmapviz.features.timing.benchmarking",
    "pmapviz.core.expressions.functions",
    "pmapviz.features.cluster.cluster",
    "pmapviz.features.collectives.collectiveruns",
    "pmapviz.core.running.pmapcompile",
    "pmapviz.features.live.dotproduct",
    "pmapviz.core.budgets.memoryestimates",
    "pmapviz.core.planning.planning",
    "pmapviz.core.running.pmaprun",
    "pmapviz.features.training.trainingrun",
)


def many(cases: list[list[str]], jobs: int) -> list[dict]:
    """Each case in a process of its own, ``jobs`` at a time, forked from this one once it has
    imported JAX and pmapviz (no JAX backend is started here: each child starts its own, with
    its own devices, and resets its own RSS high-water mark). A child that fails is a row with
    its exit status."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    rows: dict[int, dict] = {}
    running: dict[int, tuple[int, int]] = {}  # pid -> (case index, read end of its pipe)
    todo = list(enumerate(cases))
    while todo or running:
        while todo and len(running) < jobs:
            k, case = todo.pop(0)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: one case, one JSON line, no return to the parent's code
                os.close(r)
                code = 1
                try:
                    with os.fdopen(w, "w") as out, contextlib.redirect_stdout(out):
                        code = main(case)
                finally:
                    os._exit(code)
            os.close(w)
            running[pid] = (k, r)
        pid, status = os.wait()
        k, r = running.pop(pid)
        with os.fdopen(r) as got:
            lines = got.read().strip().splitlines()
        code = os.waitstatus_to_exitcode(status)
        rows[k] = json.loads(lines[-1]) if code == 0 and lines else {"failed": code}
    return [rows[k] for k in range(len(cases))]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--many"]:  # --many JOBS '[["live", ...], ...]'
        print(json.dumps(many(json.loads(sys.argv[3]), int(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
