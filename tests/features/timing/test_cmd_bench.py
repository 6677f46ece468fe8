"""python -m pmapviz bench: every file to write is checked before the sweep."""

import json
import os
import subprocess
import sys

import pytest

from pmapviz.core.base import pathparse
from pmapviz.features.timing import benchmarking, cmd_bench
from tests.app.test_cli import run_cli
from tests.conftest import ROOT


# ---------------------------------------------------------------- issue 36: files to write
def test_bench_json_a_folder_is_refused_before_the_sweep_in_one_line(tmp_path):
    """`bench --json /tmp` ran the whole sweep, then died with IsADirectoryError."""
    r = run_cli("bench", "--json", str(tmp_path))
    assert r.returncode == 2 and r.stdout == ""  # no progress line: nothing was measured
    assert r.stderr == (
        f"pmapviz: --json `{tmp_path}` is a folder: give a file name inside it, "
        f"e.g. `{tmp_path}/bench.json`.\n"
    )


def _no_work(monkeypatch):
    """Any start of JAX, sweep or cluster join fails the test: refusals come before them."""
    from pmapviz.app import cli
    from pmapviz.features.cluster import clusterjoin, cmd_cluster
    from pmapviz.features.timing import benchmarking, cmd_bench

    def started(*a, **k):
        raise AssertionError("work started before the output path was checked")

    for owner, name in ((cmd_bench, "_start"), (benchmarking, "sweep"), (clusterjoin, "join")):
        monkeypatch.setattr(owner, name, started)
    assert not hasattr(cmd_cluster, "_start")  # cluster --join starts JAX only inside join
    return cli


def test_every_file_to_write_is_checked_before_any_work(capsys, tmp_path, monkeypatch):
    cli = _no_work(monkeypatch)
    (tmp_path / "a_file").write_text("")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    cases = [
        (
            ["bench", "--json", str(tmp_path)],
            f"--json `{tmp_path}` is a folder: give a file "
            f"name inside it, e.g. `{tmp_path}/bench.json`.",
        ),
        (
            ["bench", "--json", f"{tmp_path}/no/b.json"],
            f"--json `{tmp_path}/no/b.json`: its "
            f"folder does not exist: create `{tmp_path}/no` first, or name a file in a folder "
            "that exists.",
        ),
        (
            ["bench", "--json", f"{tmp_path}/a_file/b.json"],
            f"--json `{tmp_path}/a_file/b.json`"
            f": `{tmp_path}/a_file` is a file, not a folder: name a file inside a folder.",
        ),
        (
            ["bench", "--json", f"{tmp_path}/loop.json"],
            f"--json `{tmp_path}/loop.json` is a link that loops: name another file.",
        ),
        (
            ["cluster", "--join", "--report", str(tmp_path)],
            f"--report `{tmp_path}` is a folder:"
            f" give a file name inside it, e.g. `{tmp_path}/cluster-report.json`.",
        ),
        (
            ["cluster", "--join", "--report", f"{tmp_path}/no/r.json"],
            f"--report "
            f"`{tmp_path}/no/r.json`: its folder does not exist: create `{tmp_path}/no` first, or "
            "name a file in a folder that exists.",
        ),
    ]
    for argv, said in cases:
        assert cli.main(argv) == 2, argv
        run = capsys.readouterr()
        assert run.out == "" and run.err == f"pmapviz: {said}\n", argv


def test_a_file_this_user_may_not_write_is_refused_before_any_work(capsys, tmp_path, monkeypatch):
    """os.access decides (as root it says writable, so pathparse's view of it is faked here;
    the chmod test below is the real thing for any other user)."""
    import types

    cli = _no_work(monkeypatch)
    (tmp_path / "old.json").write_text("{}")
    monkeypatch.setattr(
        pathparse,
        "os",
        types.SimpleNamespace(
            access=lambda path, mode: False, W_OK=os.W_OK, X_OK=os.X_OK, path=os.path
        ),
    )
    for flag in (["bench", "--json"], ["cluster", "--join", "--report"]):
        assert cli.main([*flag, str(tmp_path / "old.json")]) == 2
        assert "old.json` exists and is not writable by this user" in capsys.readouterr().err
        assert cli.main([*flag, str(tmp_path / "new.json")]) == 2
        assert f"its folder `{tmp_path}` is not writable" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: os.access says so too")
def test_a_read_only_folder_is_refused_before_any_work(capsys, tmp_path, monkeypatch):
    cli = _no_work(monkeypatch)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    try:
        for flag in (["bench", "--json"], ["cluster", "--join", "--report"]):
            assert cli.main([*flag, str(tmp_path / "ro" / "r.json")]) == 2
            assert f"its folder `{tmp_path}/ro` is not writable" in capsys.readouterr().err
    finally:
        (tmp_path / "ro").chmod(0o755)


def test_bench_json_dash_is_stdout_and_a_write_that_fails_late_is_one_line(
    capsys, tmp_path, monkeypatch
):
    """`--json` and `--json -` print to stdout (no file checked); a folder that vanished
    during the sweep is said in one line with exit 1, not a traceback."""
    from pmapviz.app import cli

    parse = cli.build_parser().parse_args
    assert cmd_bench._bench_inputs(parse(["bench", "--json"]))[-1] is None
    assert cmd_bench._bench_inputs(parse(["bench", "--json", "-"]))[-1] is None
    out = tmp_path / "gone"
    out.mkdir()

    class SweepReport:
        floor_method, results = "measured", []

        def to_json(self):
            return {}

    def sweep(*a, **k):
        out.rmdir()  # checked before the sweep; gone by the time it is written
        return SweepReport()

    monkeypatch.setattr(cmd_bench, "_start", lambda *a, **k: "cpu")
    monkeypatch.setattr(benchmarking, "sweep", sweep)
    assert cli.main(["bench", "--devices", "1", "--json", str(out / "b.json")]) == 1
    run = capsys.readouterr()
    assert run.err == (
        f"pmapviz: --json {out}/b.json was not written (No such file or directory): there was "
        "no previous file; its folder is gone: create it again or name another file.\n"
    )


# ---------------------------------------------------------------- issue 52: the disk
class _Report:
    floor_method, results = "measured", []

    def to_json(self):
        return {"results": ["new"] * 1000}


def test_bench_json_on_a_full_disk_is_one_line_exit_1_and_the_previous_file_intact(
    capsys, tmp_path, monkeypatch
):
    """The sweep's report is written whole or not at all: the disk fills after the first
    piece of it, and the previous report is still there, whole, with no half file beside it."""
    import errno

    from pmapviz.app import cli
    from pmapviz.core.base import atomicfile

    target = tmp_path / "bench.json"
    target.write_text('{"old": true}')
    writes = []

    class FullDisk:
        def __getattr__(self, name):
            return getattr(os, name)

        def write(self, fd, data):
            writes.append(len(data))
            if len(writes) > 1:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return os.write(fd, data[:100])  # the disk took a little of it, then filled

    monkeypatch.setattr(cmd_bench, "_start", lambda *a, **k: "cpu")
    monkeypatch.setattr(benchmarking, "sweep", lambda *a, **k: _Report())
    monkeypatch.setattr(atomicfile, "os", FullDisk())
    assert cli.main(["bench", "--devices", "1", "--json", str(target)]) == 1
    run = capsys.readouterr()
    assert len(writes) == 2 and run.out == ""  # no "written to" line
    assert run.err == (
        f"pmapviz: --json {target} was not written (No space left on device): the previous "
        "file is intact; free some space there or name a file on another disk.\n"
    )
    assert target.read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]
    monkeypatch.undo()  # the disk has room again: the same command replaces the file whole
    monkeypatch.setattr(cmd_bench, "_start", lambda *a, **k: "cpu")
    monkeypatch.setattr(benchmarking, "sweep", lambda *a, **k: _Report())
    assert cli.main(["bench", "--devices", "1", "--json", str(target)]) == 0
    assert json.loads(target.read_text()) == {"results": ["new"] * 1000}


FULL = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))  # the report is about 1 KB
sys.argv = ["pmapviz", *sys.argv[1:]]
runpy.run_module("pmapviz", run_name="__main__")
"""


def test_bench_json_past_a_real_file_size_limit_says_one_line_with_no_traceback(tmp_path):
    """The real command, its writes refused by the kernel (RLIMIT_FSIZE, as a full disk
    refuses them): exit 1, one line on stderr, the previous file whole."""
    target = tmp_path / "bench.json"
    target.write_text('{"old": true}')
    argv = ["bench", "--devices", "1", "--size", "1024", "--repeat", "1", "--impls", "numpy"]
    done = subprocess.run(
        [sys.executable, "-c", FULL, *argv, "--compile-cache", "off", "--json", str(target)],
        cwd=ROOT,
        env={**os.environ, "PMAPVIZ_DEVICES": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"pmapviz: --json {target} was not written (File too large): the previous file is "
        "intact; it is over the file size limit (ulimit -f) or the disk's: raise it or use "
        "another disk.\n"
    )
    assert "written to" not in done.stdout and "[1/1] numpy" in done.stdout  # it did measure
    assert target.read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


def test_the_default_size_splits_over_three_devices_and_says_where_it_moved():
    r = run_cli("bench", "--devices", "1,3", "--impls", "vmap", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    said = "size 1,048,575: the default 1,048,576 rounded down to split evenly over 1, 3 devices"
    assert said in r.stdout
    assert "size  1,048,575" in r.stdout and "size  1,048,576" not in r.stdout
