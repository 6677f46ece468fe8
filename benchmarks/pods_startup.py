"""Start-up with libtpu installed (the pods extra) against without it, in the same run (issue 50):

- ``plan``: ``python -m pmapviz plan --devices 8 --shape 8,4 --shape 8,4``, to its end;
- the server's JAX start: ``jaxstartup.apply`` with ``--devices 8``, as ``app.py`` calls it
  before the first page (what libtpu could slow: JAX trying its TPU plugin);

each the median of ``--repeat`` fresh processes, interleaved; and the libtpu lines either
printed (goal: none).

    .venv/bin/python benchmarks/pods_startup.py --without /tmp/venv-nolibtpu/bin/python

``--without``: a Python whose environment has the app's requirements but no libtpu, e.g.
``python3 -m venv /tmp/venv-nolibtpu && /tmp/venv-nolibtpu/bin/pip install -r requirements.txt``;
``--with``: the same plus ``-r requirements-pods.txt`` (default: this Python, whose test tools
make every ``importlib.metadata`` scan longer: not a fair comparison).
Goal: each ratio <= 1.1x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAN = ["-m", "pmapviz", "plan", "--devices", "8", "--shape", "8,4", "--shape", "8,4"]
SERVER = [
    "-c",
    "import os; from pmapviz.core.devices import jaxstartup; "
    "jaxstartup.apply(jaxstartup.parse_settings(['--devices', '8'], os.environ))",
]
LIBTPU_WORDS = ("libtpu", "TPU_", "InitGoogle", "tpu_")


def run(python: str, argv: list[str]) -> tuple[float, int]:
    """Seconds to the end, and how many libtpu lines it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in ("JAX_PLATFORMS", "TPU_SKIP_MDS_QUERY", "PMAPVIZ_DEVICES"):
        env.pop(key, None)
    t = time.perf_counter()
    out = subprocess.run([python, *argv], capture_output=True, text=True, env=env, cwd=ROOT)
    took = time.perf_counter() - t
    said = [
        ln for ln in (out.stdout + out.stderr).splitlines() if any(w in ln for w in LIBTPU_WORDS)
    ]
    return took, len(said)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--without", required=True, help="a Python without libtpu")
    ap.add_argument(
        "--with",
        dest="with_",
        default=sys.executable,
        help="a Python with libtpu (default: this one); for a fair ratio, the same packages "
        "as --without plus libtpu",
    )
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = {}
    for name, argv in (("plan", PLAN), ("server's JAX start", SERVER)):
        got = {"with libtpu": [], "without": []}
        lines = 0
        for _ in range(args.repeat):  # interleaved, so drift hits both alike
            took, said = run(args.with_, argv)
            got["with libtpu"].append(took)
            lines += said
            got["without"].append(run(args.without, argv)[0])
        med = {k: statistics.median(v) for k, v in got.items()}
        rows[name] = (med["with libtpu"], med["without"], lines)
    print(f"{'':20} {'with libtpu (s)':>16} {'without (s)':>12} {'ratio':>7} {'libtpu lines':>13}")
    for name, (w, wo, lines) in rows.items():
        print(f"{name:20} {w:16.2f} {wo:12.2f} {w / wo:6.2f}x {lines:13d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
