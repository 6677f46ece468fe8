"""The CLI's wall time against its floor, each in fresh processes, in the same run (issue 38):

- floor: ``python -c "import jax; jax.devices()"`` with the same device count;
- ``python -m pmapviz --help`` (goal <= 0.3 s: no JAX, no Streamlit);
- ``plan``, ``hlo`` and ``mesh`` (goal <= 1.2x the floor), each with JAX's persistent
  compilation cache off, then with a warm cache (a folder the first call filled);
- ``bench`` of 4 sizes and every implementation (goal <= 6 s).

    .venv/bin/python benchmarks/cli_speed.py [--devices 8] [--repeat 5]

Each figure is the median of ``--repeat`` runs; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def wall(argv: list[str], env: dict[str, str], repeat: int) -> float:
    """Median seconds of ``argv`` run to its end, in a fresh process each time."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-400:]}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.devices
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMAPVIZ_")}
    floor_code = f"import jax; jax.config.update('jax_num_cpu_devices', {n}); jax.devices()"
    floor = wall([PY, "-c", floor_code], env, args.repeat)
    print(f"floor (import jax; jax.devices() on {n} CPU devices): {floor:.2f} s")
    help_s = wall([PY, "-m", "pmapviz", "--help"], env, args.repeat)
    print(f"--help: {help_s:.2f} s (goal <= 0.3 s)")
    commands = {
        "plan": ["plan"],
        "hlo": ["hlo", "--collective", "psum"],
        "mesh": ["mesh"],
    }
    with tempfile.TemporaryDirectory() as cache:
        for name, cmd in commands.items():
            base = [PY, "-m", "pmapviz", *cmd, "--devices", str(n)]
            off = wall([*base, "--compile-cache", "off"], env, args.repeat)
            wall([*base, "--compile-cache", cache], env, 1)  # fills the cache
            warm = wall([*base, "--compile-cache", cache], env, args.repeat)
            print(
                f"{name}: {off:.2f} s cache off ({off / floor:.2f}x floor, "
                f"{off - floor:+.2f} s), {warm:.2f} s warm cache ({warm / floor:.2f}x floor, "
                f"{warm - floor:+.2f} s; goal <= 1.2x)"
            )
    sizes = "4096,65536,262144,1048576"
    bench = [PY, "-m", "pmapviz", "bench", "--size", sizes, "--devices", str(n), "--repeat", "3"]
    bench_s = wall(bench, env, max(1, args.repeat // 2))
    print(f"bench of 4 sizes, every implementation: {bench_s:.2f} s (goal <= 6 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
