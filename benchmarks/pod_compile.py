"""Pod compiles, pmapviz against a plain script: on each TPU slice given, every program compiled by
pmapviz's engine (what the Pods page shows) and by tests/core/pods/pod_oracle.py (plain JAX, no
pmapviz), and by the CLI (``pmapviz pod``), each figure compared, each side's seconds printed.
tests/core/pods/test_podcompile.py checks v5e 2x4, 16x16 and v4 2x2x2 in the suite.

    .venv/bin/python benchmarks/pod_compile.py                     # v5e:2x4 4x4 16x16, v4:2x2x2
    .venv/bin/python benchmarks/pod_compile.py v5e:4x4 --cli train

Exits 1 if any figure differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# the test's module, and with it tests/conftest.py's set-up: 8 CPU devices fixed before JAX starts
from tests.core.pods import test_podcompile as pc  # noqa: E402

SLICES = ("v5e:2x4", "v5e:4x4", "v5e:16x16", "v4:2x2x2")


def compare(topology: str, cli_programs: list[str]) -> list[str]:
    """Every program on ``topology``: engine, oracle and CLI seconds; what differs."""
    n = pc.DEVICES[topology]
    t0 = time.perf_counter()
    plain = pc.oracle(topology)
    commands = {name: pc.cli(name, topology) for name in cli_programs}
    ours, seconds = {}, {}
    for p in pc.PROGRAMS:  # while the oracle and the CLI compile beside this process
        t = time.perf_counter()
        ours[p] = pc.engine(p, topology, n)
        seconds[p] = time.perf_counter() - t
    theirs = pc.finished(plain)
    oracle_s = time.perf_counter() - t0
    wrong = []
    for p in pc.PROGRAMS:
        try:
            pc.same(ours[p], theirs[p], f"{p} on {topology}")
        except AssertionError as err:
            wrong.append(str(err))
    for name, command in commands.items():
        try:
            pc.same(pc.finished(command, quiet=True), theirs[name], f"CLI {name} on {topology}")
        except AssertionError as err:
            wrong.append(str(err))
    engine = ", ".join(f"{p} {s:.1f} s" for p, s in seconds.items())
    print(
        f"{topology} ({n} devices): engine {engine}; oracle and CLI "
        f"({', '.join(cli_programs) or 'none'}) done {time.perf_counter() - t0:.1f} s after "
        f"the start (oracle {oracle_s:.1f} s); "
        + ("all figures agree" if not wrong else f"{len(wrong)} differ")
    )
    return wrong


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("slices", nargs="*", default=list(SLICES))
    ap.add_argument("--cli", nargs="*", default=list(pc.PROGRAMS), help="the CLI's programs")
    args = ap.parse_args()
    wrong = [w for topology in args.slices for w in compare(topology, args.cli)]
    print("\n".join(wrong) or "every slice agrees")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
