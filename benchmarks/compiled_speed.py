"""Inside the compiled program: how long analysing a setting takes (first time and seen, i.e.
cached) and how long a profiler capture of one call takes.

    .venv/bin/python benchmarks/compiled_speed.py [--devices 8] [--repeat 5]

Goal (issue #16): a capture of one call at most 2 s on 8 emulated devices.
"""

from __future__ import annotations

import statistics
import time

import common  # noqa: E402  (sets sys.path and the device count)

ROOT = common.ROOT


def main() -> int:
    args = common.start(__doc__, repeat=5)
    from pmapviz.core.expressions import functions
    from pmapviz.core.planning import planning
    from pmapviz.core.running import programanalysis
    from pmapviz.features.collectives.collectiveanalysis import analyse_collective
    from pmapviz.features.compiled import tracecapture

    n = args.devices
    program = functions.get("normalise")
    cases = [
        ("collective psum", lambda: analyse_collective("psum", n, n)),
        ("collective ppermute", lambda: analyse_collective("ppermute", n, n)),
        ("collective all_to_all", lambda: analyse_collective("all_to_all", n, n)),
        ("plan normalise", lambda: programanalysis.analyse_plan(
            program, planning.plan(program, [(n, 1024)], axis_name="i"))),
    ]  # fmt: skip
    print(f"analyse (4 variants) on {n} devices   first (ms)   seen (ms)")
    for label, fn in cases:
        t = time.perf_counter()
        fn()
        first = time.perf_counter() - t
        seen = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            seen.append(time.perf_counter() - t)
        print(f"  {label:<32} {first * 1e3:10.0f} {statistics.median(seen) * 1e3:11.3f}")
    print(f"profiler capture (2 calls) on {n} devices: total (s)  traced part (s)")
    worst = 0.0
    for key in ("psum", "all_gather", "ppermute"):
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            tl, rows = tracecapture.collective_timeline(key, n, 1024)
            times.append(time.perf_counter() - t)
        total = statistics.median(times)
        worst = max(worst, max(times))
        print(f"  {key:<12} {total:10.3f} {tl.capture_s:12.3f}   lanes {len(tl.lanes)}, "
              f"{rows[0].op} {rows[0].measured_us:.0f} us median")  # fmt: skip
    print(f"worst capture {worst:.3f} s (goal <= 2 s): {'OK' if worst <= 2 else 'SLOW'}")
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
