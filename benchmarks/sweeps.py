"""Every case of the exhaustive sweeps and every long walk, which the suite runs a quarter of
(harness/sweeps.py): every hostile link on the 8-device server, markup typed into every text
field of every view, and every test marked ``rotates`` (tests/rotation.py: the presenter and
three followers, every page on 1 and 3 devices, the installed wheel's pages, ...).

    .venv/bin/python benchmarks/sweeps.py              # every case and walk: about 5 minutes
    .venv/bin/python benchmarks/sweeps.py --part 1/4   # the part a commit's suite runs

Runs them under pytest (two workers) with PMAPVIZ_SWEEP set, prints what each sweep walked (its
report: links opened, fields and rounds, every failure) and exits with pytest's status. The
hostile-link summary is also in artifacts/hostile-links-8-devices.txt.
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
    ap.add_argument("--part", default="all", help="'all' (the default) or K/N, e.g. 0/4")
    args = ap.parse_args()
    env = {**os.environ, "PMAPVIZ_SWEEP": args.part}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rP", "-n", "2", "-p", "no:cacheprovider"]
    # the walks: every test marked rotates, in the whole suite's collection (the part named)
    walks = subprocess.run([*cmd, "-m", "rotates", "tests"], cwd=ROOT, env=env).returncode
    return subprocess.run([*cmd, *SWEEPS], cwd=ROOT, env=env).returncode or walks


if __name__ == "__main__":
    sys.exit(main())
