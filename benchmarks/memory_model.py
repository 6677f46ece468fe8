"""The memory model against measured peaks: every case of
tests/core/budgets/test_memoryestimates.py, each
in a fresh process (tests/core/memory_probe.py), as a table.

    .venv/bin/python benchmarks/memory_model.py [--jobs 4]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.core.budgets.test_memoryestimates import CASES, _probe  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args()
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(_probe, CASES))
    print(f"| {'action':48} | estimate MiB | measured MiB | ratio |")
    print(f"|{'-' * 50}|-------------:|-------------:|------:|")
    for row in rows:
        est, got = row["estimate"] / 2**20, row["measured"] / 2**20
        print(f"| {row['action']:48} | {est:12.1f} | {got:12.1f} | {est / got:5.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
