"""Every case of the exhaustive sweeps, which the suite runs a third of (harness/sweeps.py): every
hostile link on the 8-device server, and markup typed into every text field of every view.

    .venv/bin/python benchmarks/sweeps.py              # every case: about 70 s on 2 cores
    .venv/bin/python benchmarks/sweeps.py --part 1/3   # the part a commit's suite runs

Runs the two tests under pytest (one worker each) with PMAPVIZ_SWEEP set, prints what each
walked (its report: links opened, fields and rounds, every failure) and exits with pytest's
status. The hostile-link summary is also in artifacts/hostile-links-8-devices.txt.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = (
    "tests/e2e/test_hostile_links_e2e.py::test_hostile_links_never_break_a_page_or_the_server",
    "tests/e2e/test_text_fields_e2e.py::test_markup_typed_into_every_text_field_renders_as_text",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", default="all", help="'all' (the default) or K/N, e.g. 0/3")
    args = ap.parse_args()
    env = {**os.environ, "PMAPVIZ_SWEEP": args.part}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rP", "-n", "2", "-p", "no:cacheprovider"]
    return subprocess.run([*cmd, *SWEEPS], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
