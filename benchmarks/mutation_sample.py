"""Mutation score of the modules that carry the product's promises, from a seeded random
sample of their mutants (all ~6,000 would take hours on two cores).

    .venv/bin/python benchmarks/mutation_sample.py --per-module 50 --seed 17

Lists every mutant of the modules in setup.cfg [mutmut] (``mutmut results --all true``),
draws ``--per-module`` of each module with ``random.Random(seed)``, runs exactly those
(``mutmut run NAME ... --max-children 2``), then prints killed / survived per module, the
pooled score with a 95% Wilson interval, and the names of the survivors (inspect one with
``.venv/bin/mutmut show NAME``). ``--report-only 1`` re-reads the last run's results.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from common import ROOT, start

MUTMUT = str(ROOT / ".venv" / "bin" / "mutmut")
LINE = re.compile(r"^\s*(pmapviz\.(\w+)\.\S+): (.+)$")


def statuses() -> dict[str, str]:
    out = subprocess.run([MUTMUT, "results", "--all", "true"], cwd=ROOT, text=True,
                         capture_output=True, check=True).stdout  # fmt: skip
    return {m.group(1): m.group(3).strip() for m in map(LINE.match, out.splitlines()) if m}


def module_of(name: str) -> str:
    return name.split(".")[1]


def sample(names: list[str], per_module: int, seed: int) -> list[str]:
    by_module: dict[str, list[str]] = defaultdict(list)
    for n in sorted(names):
        by_module[module_of(n)].append(n)
    rng = random.Random(seed)
    return [
        n
        for m in sorted(by_module)
        for n in rng.sample(by_module[m], min(per_module, len(by_module[m])))
    ]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


def report(chosen: list[str]) -> None:
    """Score = killed / checked, where checked counts every mutant that ran or had no test
    reaching it ("no tests" is a survivor the suite cannot even see); "not checked" is left
    out (an interrupted run)."""
    status = statuses()
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for n in chosen:
        rows[module_of(n)][status.get(n, "not checked")] += 1
    killed = total = 0
    print(f"{'module':14} {'killed':>7} {'survived':>9} {'no tests':>9} {'unrun':>6}  score")
    for m in sorted(rows):
        r = rows[m]
        k, s, nt, unrun = (r.get(key, 0) for key in ("killed", "survived", "no tests",
                                                      "not checked"))  # fmt: skip
        checked = sum(r.values()) - unrun
        print(f"{m:14} {k:7} {s:9} {nt:9} {unrun:6}  {k / max(1, checked):.1%}")
        killed, total = killed + k, total + checked
    lo, hi = wilson(killed, total)
    print(f"pooled: {killed}/{total} = {killed / max(1, total):.1%} (95% interval {lo:.1%} to "
          f"{hi:.1%})")  # fmt: skip
    for n in chosen:
        if status.get(n, "not checked") not in ("killed", "not checked"):
            print(f"  {status[n]}: {n}")


def main() -> int:
    args = start(__doc__, apply_devices=False, per_module=50, seed=17, report_only=0)
    if not Path(MUTMUT).exists():
        print(
            "mutmut is missing: .venv/bin/pip install -r requirements-mutation.txt", file=sys.stderr
        )
        return 2
    names = list(statuses())
    if not names:
        print("no mutants listed: run `mutmut run 'zz*'` once to generate them", file=sys.stderr)
        return 2
    chosen = sample(names, args.per_module, args.seed)
    if not args.report_only:
        subprocess.run([MUTMUT, "run", *chosen, "--max-children", "2"], cwd=ROOT, check=False)
    report(chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
