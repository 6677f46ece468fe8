"""The suite's worker rules, as a pytest plugin (loaded by tests/conftest.py).

.pytest.ini runs the suite on pytest-xdist workers with --dist loadgroup, one more worker than
the machine has cores (``auto_workers``: three on two cores). Two rules keep it correct:

1. A module whose tests share a module-scoped fixture runs on one worker: split over two,
   each worker would build the fixture again.
2. A test that asserts a tight wall-clock bound (seconds of slack: a bound with half a minute
   of slack, such as a cluster join's timeout + 30 s, holds beside a busy worker) or compares
   timings with this machine's measured rates runs ALONE: it takes an exclusive lock that
   every other test holds shared, so the other workers wait between two tests until it is
   done; the measured rates are measured again first.
   These tests are one group, run back to back under one hold of the lock
   (tests/test_workers.py checks both).

Groups are xdist_group marks. What this works around: pytest-xdist 3.8 (the newest release) passes
them to its scheduler by appending "@group" to each test's node id, which pytest 9.2 no longer lets
it do (node ids are structured), so its loadgroup silently groups nothing
(pytest-dev/pytest-xdist#1386). So each worker writes the groups it collected to a file of the run,
and the scheduler below reads them from there. pytest 9.1.1 with xdist 3.8.0 groups correctly
without it.

When it can go: once a pytest-xdist release groups with our pytest (the fix proposed in
pytest-dev/pytest-xdist#1388), or if pytest is pinned back to 9.1.1, delete
pytest_xdist_make_scheduler, _SCHEDULED_RUNS' "groups.json" and the file written at the end
of pytest_collection_modifyitems. The rules (the marks added there, and the lock of
pytest_runtest_protocol) stay; tests/test_xdist_groups.py checks the grouping either way.

PYTEST_DONT_REWRITE: tests/conftest.py imports this module before pytest registers it as a plugin,
and it has no asserts to rewrite.
"""

import os
from pathlib import Path

import pytest

from pmapviz.core.devices import devicerates

ROOT = Path(__file__).resolve().parent.parent

ALONE = {
    "tests/core/base/test_queues.py": {
        "test_timeout_gives_up_with_position_and_holder_age",
        "test_should_stop_cancels_a_wait_within_a_slice",
    },
    "tests/core/base/test_pytrees.py": {"test_hostile_tree_text_is_refused_fast"},
    "tests/core/planning/test_planning.py": {
        "test_plan_is_fast_and_allocates_nothing_for_huge_shapes"
    },
    "tests/core/budgets/test_timebudget.py": {
        "test_machine_rates_are_measured_once_per_process",
        "test_sweep_and_plan_sweep_refuse_before_running",
        "test_estimate_is_the_right_order_of_magnitude",
    },
    "tests/features/timing/test_benchmarking.py": {
        "test_a_waiting_benchmark_gives_up_or_stops_and_never_hangs",
        "test_the_floor_is_below_every_fastest_run_measured_here",
        "test_whichever_implementation_goes_first_does_not_pay_for_the_first_copy",
    },
    "tests/app/test_doctorreport.py": {"test_facts_and_floor_sections_hold_on_this_machine"},
    "tests/features/live/test_dotproduct.py": {"test_backend_start_up_is_not_counted_as_transfer"},
    "tests/features/cluster/test_cluster.py": {
        "test_killed_worker_is_reported_and_leaves_no_process",
        "test_half_a_line_then_a_hang_still_times_out_and_the_next_launch_runs",
        "test_a_launch_waits_its_turn_and_gives_up_with_a_cluster_error",
        "test_a_killed_cli_leaves_no_workers",
    },
    "tests/features/cluster/test_clusterworker.py": {
        "test_child_is_killed_when_its_parent_is_sigkilled"
    },
    # four fresh processes at a time, each touching hundreds of MB: beside them, another
    # worker measuring this machine's rates (devicerates) read its memory bandwidth as a
    # fraction of itself, and a live run that goes at once waited for its Run button
    "tests/core/budgets/test_memoryestimates.py": {
        "test_estimate_covers_the_measured_peak_within_half"
    },
}
# Not ALONE, though heavy: the JAX cache probe's RSS is its own whatever runs beside it, and
# eight sessions at once wait for their text with two minutes of slack. Held apart, they left
# the other workers idle for a quarter of the ALONE block.


MAX_WORKERS = 6


def auto_workers(cores: int) -> int:
    """Workers for ``-n auto``: one more than the cores, at most MAX_WORKERS. A fifth of a run
    waits rather than computes (a browser drawing, a server answering, a cluster's timeout):
    with one worker per core, both cores of a 2-core machine were idle 200 of 1,060 core-s
    (531 s); with three workers, 57 of 830 (412 s)."""
    return max(2, min(cores + 1, MAX_WORKERS))


def pytest_xdist_auto_num_workers(config):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return auto_workers(cores or 1)


def _is_alone(item) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


def _run_file(name: str, run: str | None = None) -> Path:
    """A file shared by the workers of this run (and only this run)."""
    import tempfile

    run = run or os.environ["PYTEST_XDIST_TESTRUNUID"]  # the same in every worker of a run
    return Path(tempfile.gettempdir()) / f"pmapviz-tests-{run}-{name}"


_SCHEDULED_RUNS: list[str] = []  # in the controller: the run whose files to remove at the end


def pytest_sessionfinish(session):
    for run in _SCHEDULED_RUNS:
        for name in ("groups.json", "door.lock", "run.lock"):
            _run_file(name, run).unlink(missing_ok=True)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "alone: runs while no other test runs (tests/xdist_groups.py)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    groups = {}
    for item in items:
        path = item.path.relative_to(ROOT).as_posix() if item.path.is_relative_to(ROOT) else ""
        if getattr(item, "originalname", item.name) in ALONE.get(path, ()):
            item.add_marker(pytest.mark.alone)
            item.add_marker(pytest.mark.xdist_group("alone"))
        elif not item.get_closest_marker("xdist_group"):
            info = getattr(item, "_fixtureinfo", None)
            scopes = {d[-1].scope for d in (info.name2fixturedefs.values() if info else ())}
            if scopes & {"module", "class", "package"}:
                item.add_marker(pytest.mark.xdist_group(path or str(item.path)))
        names = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        if names:
            groups[item.nodeid] = "_".join(names)
    if "PYTEST_XDIST_TESTRUNUID" in os.environ:  # a worker: tell the scheduler
        import json

        path = _run_file("groups.json")
        tmp = path.with_suffix(f".{os.environ.get('PYTEST_XDIST_WORKER', 'w')}.tmp")
        tmp.write_text(json.dumps(groups))
        tmp.replace(path)  # whole, whichever worker writes it last (they collect the same)


def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup, with the groups read from the workers' file (see above)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadGroupScheduling

    class FileGroupScheduling(LoadGroupScheduling):
        groups: dict[str, str] = {}

        def schedule(self):
            if self.collection is None and self.nodes:  # the first call: all have collected
                run = self.nodes[0].workerinput["testrunuid"]
                _SCHEDULED_RUNS.append(run)
                try:
                    self.groups = json.loads(_run_file("groups.json", run).read_text())
                except (OSError, ValueError):
                    self.groups = {}  # no groups: every test on its own
            return super().schedule()

        def _split_scope(self, nodeid):
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return FileGroupScheduling(config, log)


_LOCK_FILES: dict[str, int] = {}  # name -> this worker's descriptor of the run's lock file
_HOLDING_ALONE = [False]  # this worker holds "run" exclusively, across ALONE tests


def _lock(name: str, mode: int) -> None:
    import fcntl

    if name not in _LOCK_FILES:
        _LOCK_FILES[name] = os.open(_run_file(f"{name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(_LOCK_FILES[name], mode)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A readers-writer lock over the workers: every test holds "run" shared, an ALONE test
    holds it exclusive (across a run of ALONE tests back to back). Each takes it through the
    "door", which a waiting ALONE test keeps shut, so the other worker's stream of tests
    cannot starve it: that worker finishes its current test, then waits at the door."""
    import fcntl

    if "PYTEST_XDIST_TESTRUNUID" not in os.environ:  # one process (-n 0): nothing to share
        return (yield)
    alone = _is_alone(item)
    if not (alone and _HOLDING_ALONE[0]):
        _lock("door", fcntl.LOCK_EX)
        _lock("run", fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        _lock("door", fcntl.LOCK_UN)
        _HOLDING_ALONE[0] = alone
    if alone:
        devicerates.set_rates(None)  # measured again, alone: they may date from a busy moment
    try:
        return (yield)
    finally:
        if not (alone and _is_alone(nextitem)):
            _lock("run", fcntl.LOCK_UN)
            _HOLDING_ALONE[0] = False
