"""Every page, tour step and button on other device counts: the walk of
tests/pages/test_every_device_count.py (which walks 1 and 3 devices in the suite) on the counts
given, each in a fresh process, and what it found.

    .venv/bin/python benchmarks/every_device_count.py 2 5     # the default: 2 and 5

Prints, per count: the walk's seconds, the pages and steps visited, the presses, the slowest
visits, and every problem (an exception or error box anywhere, a page never visited, a
PAGE_ACTIONS button shown but not pressed) as the test would report it; exits 1 if any.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.pages import test_every_device_count as walk  # noqa: E402


def run_walk(count: int) -> tuple[dict | None, float, str]:
    """The walker on ``count`` devices in a fresh process: (its result, seconds, stderr)."""
    env = {**os.environ, "PMAPVIZ_DEVICES": str(count), "JAX_PLATFORMS": "cpu"}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("PMAPVIZ_PLATFORM", None)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, str(ROOT / "tests/pages/test_every_device_count.py"), str(count)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=walk.WALK_TIMEOUT,
    )
    took = time.monotonic() - t0
    found = [line for line in r.stdout.splitlines() if line.startswith(walk.MARK)]
    result = json.loads(found[-1][len(walk.MARK) :]) if r.returncode == 0 and found else None
    return result, took, r.stderr


def report(count: int) -> bool:
    """Walk ``count`` devices and print what was found; True if nothing was wrong."""
    result, took, stderr = run_walk(count)
    if result is None:
        print(f"{count} device(s): the walker failed after {took:.0f} s\n{stderr[-3000:]}")
        return False
    required = walk._required()
    problems = walk.problems(result, required, walk._expected())
    if result["devices"] != count:
        problems.insert(0, f"- the walk ran on {result['devices']} devices, not {count}")
    pressed = sum(len(v["pressed"]) for v in result["visits"])
    slowest = sorted(result["visits"], key=lambda v: -v.get("seconds", 0))[:3]
    print(
        f"{count} device(s): {took:.0f} s in all, {result['seconds']:.0f} s walking; "
        f"{len(result['visits'])} pages and tour steps, {pressed} presses; slowest: "
        + ", ".join(f"{walk._name(v)} {v.get('seconds', 0):.1f} s" for v in slowest)
    )
    print("\n".join([*problems, *walk.notes(result, required)]) or "  no problems")
    return not problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("counts", nargs="*", type=int, default=[2, 5])
    counts = ap.parse_args().counts
    ok = [report(n) for n in counts]
    print(f"{sum(ok)} of {len(ok)} device counts without a problem")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
