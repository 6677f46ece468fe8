"""The suite's two-worker rules (tests/xdist_groups.py): every test named in ALONE exists, and the
readers-writer lock really keeps an ALONE test apart from the other worker's tests."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT
from tests.xdist_groups import ALONE


@pytest.mark.parametrize("path", sorted(ALONE))
def test_every_alone_test_exists(path):
    """A renamed test would silently lose its protection: name it here again."""
    source = (ROOT / path).read_text()
    missing = [name for name in ALONE[path] if f"def {name}(" not in source]
    assert not missing, f"{path}: no {missing} (update ALONE in tests/xdist_groups.py)"


SUITE = """
import time
from pathlib import Path

import pytest

LOG = Path(__file__).parent / "log.txt"


def _note(what):
    with LOG.open("a") as f:
        f.write(f"{time.monotonic():.6f} {what}\\n")


@pytest.mark.alone
@pytest.mark.xdist_group("alone")
@pytest.mark.parametrize("k", range(2))
def test_alone(k):
    _note(f"start alone{k}")
    time.sleep(0.5)
    _note(f"end alone{k}")


@pytest.mark.parametrize("k", range(6))
def test_other(k):
    _note(f"start other{k}")
    time.sleep(0.3)
    _note(f"end other{k}")
"""


def test_an_alone_test_overlaps_no_other_test(tmp_path):
    """Two workers, two ALONE tests and six others that each take a while: while an ALONE test
    runs, no other test is running."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_suite.py").write_text(textwrap.dedent(SUITE))
    # the plugin alone, as tests/conftest.py loads it (not JAX, Streamlit and the fixtures)
    (suite / "conftest.py").write_text('pytest_plugins = ["tests.xdist_groups"]\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-c",
            os.devnull,
            "--rootdir",
            str(suite),
            str(suite),
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = (suite / "log.txt").read_text().splitlines()
    events = sorted((float(t), what) for t, what in (ln.split(maxsplit=1) for ln in lines))
    running, overlaps = set(), []
    for _, what in events:
        kind, name = what.split()
        if kind == "start":
            if any(n.startswith("alone") for n in running | {name}) and running:
                overlaps.append((name, sorted(running)))
            running.add(name)
        else:
            running.discard(name)
    assert len(events) == 16 and not overlaps, overlaps
