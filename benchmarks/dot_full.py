"""The seed's example at full size, as a fresh process each run (so its memory is its own):

    .venv/bin/python benchmarks/dot_full.py [--pairs 10000000] [--devices 8] [--runs 3]

Goal (issue #4): the full 10M example end to end (generate, place, run, compare) growing host
memory by at most 800 MB (the growth over the process's RSS once JAX had started: a TPU
runtime maps ~13 GB as it starts, issue 35). Prints each run's JSON figures and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=10_000_000)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for _ in range(args.runs):
        r = subprocess.run(
            [sys.executable, "-m", "pmapviz", "dot", "--pairs", str(args.pairs), "--devices",
             str(args.devices), "--json"], cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows.append(json.loads(r.stdout))
    keys = ["compile_s", "transfer_s", "run_s", "vmap_run_s", "host_growth_mb", "max_abs_diff"]
    print(f"pairs={args.pairs:,} devices={args.devices} runs={args.runs}")
    print(f"pmap out {tuple(rows[0]['pmap_out_shape'])} -> {tuple(rows[0]['flat_shape'])}, "
          f"allclose={all(r['allclose'] for r in rows)}")  # fmt: skip
    for k in keys:
        vals = [r[k] for r in rows]
        unit = 1e3 if k.endswith("_s") else 1
        name = k.replace("_s", " (ms)") if k.endswith("_s") else k
        print(f"  {name:18} median {statistics.median(vals) * unit:10.3f}   "
              f"[{min(vals) * unit:.3f} .. {max(vals) * unit:.3f}]")  # fmt: skip
    peak = max(r["host_growth_mb"] for r in rows)
    print(f"peak RSS {peak:.0f} MB (goal <= 800 MB): {'OK' if peak <= 800 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
