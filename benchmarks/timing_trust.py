"""Can the Timing lab's numbers be trusted? Two checks (issue #5):

1. Fidelity: the harness's steady-state median is within 5% of a plain ``timeit`` loop over
   the same compiled call with the same placed inputs, in the same process.
2. Efficiency: a sweep of 4 device counts x 4 sizes spends at least 80% of its wall time
   inside the timed calls (no recompiles, no repeated transfers).

    .venv/bin/python benchmarks/timing_trust.py [--devices 8] [--repeat 15]
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit

import common  # noqa: E402  (sets sys.path and the device count)

ROOT = common.ROOT


def main() -> int:
    args = common.start(__doc__, repeat=30)
    import jax
    import numpy as np

    from pmapviz.features.timing import benchmarking as bench
    from pmapviz.features.timing import sweepsetup, workloads

    wl = workloads.WORKLOADS["dot"]
    rates = sweepsetup.bandwidth(2**30)
    bw = rates.bandwidth_gbs
    print(f"bandwidth (the floor) {rates.floor_words()}")

    print("1. fidelity: harness median vs timeit on the same compiled call and placed inputs")
    worst = 0.0
    for impl, k, size in [("pmap", args.devices, 2**20), ("vmap", 1, 2**20),
                          ("shard_map", args.devices, 2**20), ("pmap", 2, 2**16)]:  # fmt: skip
        host = wl.inputs(size, np.random.default_rng(0))
        compile_fn, place = bench.prepare_impl(impl, wl, k, host)
        placed = place()
        jax.block_until_ready(placed)
        run = compile_fn(placed)

        def prepare(*_a, _run=run, _placed=placed):  # the same compiled call and inputs
            return (lambda _pl: _run), (lambda: _placed)

        pooled_h, pooled_t = [], []
        for _ in range(3):  # interleave, so drift hits both alike
            m = bench.measure(impl, wl, k, size, host, args.repeat, bw, prepare=prepare)
            pooled_h += m.run_s
            pooled_t += timeit.repeat(
                lambda _run=run, _placed=placed: jax.block_until_ready(_run(*_placed)),
                number=1, repeat=args.repeat,
            )  # fmt: skip
        harness, plain = statistics.median(pooled_h), statistics.median(pooled_t)
        gap = abs(harness - plain) / plain
        worst = max(worst, gap)
        print(f"   {impl:10} x{k:<2} size {size:>9,}: harness {harness * 1e3:8.3f} ms, timeit "
              f"{plain * 1e3:8.3f} ms, gap {gap:6.1%}")  # fmt: skip
    print(f"   worst gap {worst:.1%} (goal <= 5%)")

    print("2. efficiency: share of a 4 x 4 sweep's wall time inside timed calls")
    ks = sweepsetup.device_counts(args.devices)[-4:]
    sizes = [2**21, 2**22, 2**23, 2**24]
    t0 = time.perf_counter()
    rep = bench.sweep(wl, sizes, ks, ["pmap"], repeat=args.repeat)
    wall = time.perf_counter() - t0
    timed = sum(sum(m.run_s) for m in rep.results)
    print(f"   {len(rep.results)} measurements (devices {ks} x sizes {sizes}), repeat "
          f"{args.repeat}: wall {wall:.2f} s, timed {timed:.2f} s = {timed / wall:.0%} "
          "(goal >= 80%)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
