"""The long walks run a part at a time, as a pytest plugin (loaded by tests/conftest.py).

A test marked ``@pytest.mark.rotates(cpu_s=...)`` is a long walk: it repeats, at length and in a
real browser or a process of its own, what a quicker test checks on every run (a comment above
it names which). When the whole suite runs (``pytest`` with no paths: the README's command, CI), it
runs one part of them: harness/sweeps.py deals the walks into parts of about equal cost (the
mark's ``cpu_s``: the CPU-seconds of the test's whole process tree, browser and servers
included, in a full run on two cores) and the commit picks the part, the same part as the
sweeps. The others are deselected, and the header says which part ran.

Named tests (``pytest tests/e2e/test_follow_e2e.py``) always run. ``PMAPVIZ_SWEEP=all`` runs
every walk in a whole run too, and ``PMAPVIZ_SWEEP=K/N`` part K of N (``benchmarks/sweeps.py``).
"""

from __future__ import annotations

import os

import pytest

from harness import sweeps


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "rotates(cpu_s): a long walk, run a part at a time in the whole suite (tests/rotation.py)",
    )


def _part(config) -> sweeps.Part | None:
    """The part of the walks this run takes; None: every test collected runs."""
    if os.environ.get(sweeps.ENV) or config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        return sweeps.part()
    return None


def pytest_report_header(config):
    part = _part(config)
    if part is None:
        return "long walks (marked rotates): every one named runs"
    return f"long walks (marked rotates): {part}"


def costs(items) -> dict[str, float]:
    """Each long walk among ``items`` (node id -> its cpu_s)."""
    return {
        item.nodeid: float(mark.kwargs["cpu_s"])
        for item in items
        if (mark := item.get_closest_marker("rotates")) is not None
    }


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    part = _part(config)
    walks = costs(items)
    if part is None or part.parts == 1 or not walks:
        return
    runs = set(part.picks(walks))
    skipped = [item for item in items if item.nodeid in walks and item.nodeid not in runs]
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = [item for item in items if item.nodeid not in walks or item.nodeid in runs]
