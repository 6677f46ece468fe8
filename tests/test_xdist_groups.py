"""tests/xdist_groups.py, the two-worker plugin: it is loaded, it marks ALONE tests and groups
modules with module-scoped fixtures, and under `-n 2 --dist loadgroup` a group's tests really
run on one worker (pytest-xdist 3.8's own loadgroup groups nothing under pytest 9.2)."""

import collections
import os

import pytest

from tests import xdist_groups
from tests.conftest import ROOT

pytest_plugins = ["pytester"]


@pytest.fixture()
def own_session(monkeypatch):
    """An inner session must not take this run's locks or overwrite its group file."""
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def test_the_suite_loads_the_plugin(request):
    assert request.config.pluginmanager.get_plugin("tests.xdist_groups") is xdist_groups
    assert any(m.startswith("alone:") for m in request.config.getini("markers"))


def test_alone_tests_are_marked_and_grouped_and_module_fixtures_group_their_module(
    pytester, monkeypatch, own_session
):
    monkeypatch.setattr(xdist_groups, "ROOT", pytester.path)
    monkeypatch.setattr(xdist_groups, "ALONE", {"test_timed.py": {"test_slow"}})
    pytester.makepyfile(
        test_timed="""
        import pytest

        @pytest.mark.parametrize("k", range(2))
        def test_slow(k):
            pass

        def test_quick():
            pass
        """,
        test_shared="""
        import pytest

        @pytest.fixture(scope="module")
        def built():
            return 1

        def test_uses(built):
            pass

        def test_does_not():
            pass

        @pytest.mark.xdist_group("mine")
        def test_own_group(built):
            pass
        """,
    )
    items, _ = pytester.inline_genitems("-p", "tests.xdist_groups", "-p", "no:randomly")
    groups = {
        i.nodeid: [m.args[0] for m in i.iter_markers("xdist_group")]
        for i in items
        if i.get_closest_marker("xdist_group")
    }
    alone = {i.nodeid for i in items if i.get_closest_marker("alone")}
    assert alone == {"test_timed.py::test_slow[0]", "test_timed.py::test_slow[1]"}
    assert groups == {
        "test_timed.py::test_slow[0]": ["alone"],
        "test_timed.py::test_slow[1]": ["alone"],
        "test_shared.py::test_uses": ["test_shared.py"],
        "test_shared.py::test_own_group": ["mine"],  # a group of its own is kept
    }


SUITE = {
    "test_grouped": """
        import pytest

        from helpers import note

        @pytest.mark.xdist_group("together")
        @pytest.mark.parametrize("k", range(4))
        def test_grouped(k):
            note()

        @pytest.mark.parametrize("k", range(8))
        def test_free(k):
            note()
        """,
    "test_module_fixture": """
        import pytest

        from helpers import note

        @pytest.fixture(scope="module")
        def built():
            return object()

        @pytest.mark.parametrize("k", range(4))
        def test_shares(built, k):
            note()
        """,
}

CONFTEST = """
    pytest_plugins = ["tests.xdist_groups"]  # as tests/conftest.py loads it
    """

HELPERS = """
    import os
    import time
    from pathlib import Path

    def note():
        test = os.environ["PYTEST_CURRENT_TEST"].split(" ")[0]
        with (Path(__file__).parent / "workers.txt").open("a") as f:
            f.write(f"{test} {os.environ['PYTEST_XDIST_WORKER']}\\n")
        time.sleep(0.2)  # long enough that both workers take tests
    """


def test_a_group_runs_on_one_worker_of_two(pytester, monkeypatch, own_session):
    """The plugin loaded as tests/conftest.py loads it, under --import-mode=importlib: the
    controller's scheduler and the workers' group file together keep each group on one
    worker, while ungrouped tests spread over both."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(helpers=HELPERS, **SUITE)
    r = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--import-mode=importlib",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        timeout=120,
    )
    r.assert_outcomes(passed=16)
    workers = collections.defaultdict(set)
    for line in (pytester.path / "workers.txt").read_text().splitlines():
        test, worker = line.split()
        workers[test.split("[")[0]].add(worker)
    assert workers["test_grouped.py::test_free"] == {"gw0", "gw1"}  # two workers took tests
    assert len(workers["test_grouped.py::test_grouped"]) == 1, workers
    assert len(workers["test_module_fixture.py::test_shares"]) == 1, workers


def test_auto_runs_one_worker_more_than_the_cores_within_bounds():
    assert [xdist_groups.auto_workers(c) for c in (1, 2, 3, 5, 64)] == [2, 3, 4, 6, 6]


def test_the_suite_asks_xdist_for_its_own_worker_count(pytestconfig):
    """.pytest.ini's -n auto reaches the hook, and a run without its own -n has the hook's
    count of workers."""
    cores = len(os.sched_getaffinity(0))
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == (
        xdist_groups.auto_workers(cores)
    )
    assert "-n auto" in " ".join(pytestconfig.getini("addopts"))  # a list of its words
    args = " ".join(pytestconfig.invocation_params.args)
    if (count := os.environ.get("PYTEST_XDIST_WORKER_COUNT")) and "-n" not in args.split():
        assert int(count) == xdist_groups.auto_workers(cores)
