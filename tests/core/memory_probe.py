"""Measure one action's peak memory in this (fresh) process, against pmapviz.memory's estimate.

    python -m tests.core.memory_probe live double float32 4 4,8000000
    python -m tests.core.memory_probe dot 2000000 4

JAX start-up, device set-up, compilation and a small warm-up run happen first; then the RSS
high-water mark is reset (``5`` into /proc/self/clear_refs) and the action runs. measured =
VmHWM after it - VmRSS before it. Where the mark cannot be reset, a thread samples the RSS
every millisecond instead. Prints one JSON line: action, estimate, measured (bytes).
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time

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
    from pmapviz import devices

    devices.apply(devices.Settings(devices=DEVICES, platform="cpu"))


def live(key: str, dtype: str, n: str, *shapes: str):
    from pmapviz import catalog, programs
    from pmapviz.planning import plan

    prog = catalog.get(key)
    sh = [tuple(int(v) for v in s.split(",")) for s in shapes]
    axes = tuple(None if k and key == "matmul" else 0 for k in range(len(sh)))
    p = plan(prog, sh, in_axes=axes, n_devices=int(n), dtypes=[dtype] * len(sh))
    assert p.ok, p.problems
    compiled = programs.compile_plan(prog, p)
    small = plan(prog, [(int(n),) + s[1:] if a == 0 else s for s, a in zip(sh, axes, strict=True)],
                 in_axes=axes, n_devices=int(n), dtypes=[dtype] * len(sh))  # fmt: skip
    programs.run_plan(prog, small, programs.compile_plan(prog, small), repeat=1)
    measured, res = peak_during(lambda: programs.run_plan(prog, p, compiled))
    assert res.passed and res.flat_equal in (None, True)
    return programs.estimate_bytes(p, prog), measured


def dot(pairs: str, n: str):
    from pmapviz import dotproduct, memory

    dotproduct.run_dot(int(n) * 1000, int(n), repeat=1, limit=10**9)
    measured, res = peak_during(lambda: dotproduct.run_dot(int(pairs), int(n), limit=10**9))
    assert res.allclose and res.numpy_max_abs_diff < 1e-4
    return memory.dot_bytes(int(pairs), int(n)), measured


ACTIONS = {"live": live, "dot": dot}


def main(argv: list[str]) -> int:
    _setup()
    estimate, measured = ACTIONS[argv[0]](*argv[1:])
    print(json.dumps({"action": " ".join(argv), "estimate": estimate, "measured": measured}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
