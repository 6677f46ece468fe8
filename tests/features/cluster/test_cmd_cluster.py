"""python -m pmapviz cluster --join: outside a cluster, and bad flags, before anything starts."""


def test_cluster_join_outside_a_cluster_is_one_line_and_exit_1(capsys, monkeypatch):
    from pmapviz.app import cli
    from pmapviz.features.cluster import clusterenv

    others = ("JAX_COORDINATOR_ADDRESS", "TPU_WORKER_HOSTNAMES", "KUBERNETES_SERVICE_HOST")
    for name in (*clusterenv.SLURM.detect, *clusterenv.OMPI.detect, *clusterenv.OMPI.reads):
        monkeypatch.delenv(name, raising=False)
    for name in others:
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["cluster", "--join", "--local-devices", "2", "--timeout", "5"]) == 1
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1
    assert said.err.startswith("pmapviz: no cluster environment detected: JAX looks for Open MPI")


def test_cluster_join_bad_flags_exit_2_before_anything_starts(capsys, tmp_path):
    from pmapviz.app import cli

    for argv, words in [
        (["--join", "--local-devices", "0"], "--local-devices 0 is out of range"),
        (["--join", "--local-devices", "²"], "is not a whole number"),
        (["--join", "--timeout", "999"], "--timeout `999` is out of range"),
        (["--join", "--report", str(tmp_path / "no" / "r.json")], "its folder does not exist"),
        (["--join", "--report", str(tmp_path)], "is a folder"),
        (["--report", "r.json"], "--report PATH goes with --join"),
    ]:
        assert cli.main(["cluster", *argv]) == 2, argv
        assert words in capsys.readouterr().err


# ---------------------------------------------------------------- issue 52: the disk
def test_cluster_report_on_a_full_disk_is_one_line_exit_1_and_the_previous_report_intact(
    capsys, tmp_path, monkeypatch
):
    """Process 0's --report is written whole or not at all: on a full disk the previous
    report stays whole, one line says so, exit 1; with room, the same write replaces it."""
    import errno
    import json
    import os

    from pmapviz.app import cli
    from pmapviz.core.base import atomicfile
    from pmapviz.features.cluster import clusterjoin

    target = tmp_path / "cluster-report.json"
    target.write_text('{"old": true}\n')
    report = {"check": {"ok": True}, "processes": ["p"] * 500}
    outcome = clusterjoin.JoinOutcome(record={"process_index": 0}, report=report)
    monkeypatch.setattr(clusterjoin, "join", lambda *a, **k: outcome)
    monkeypatch.setattr(clusterjoin, "summary", lambda r: [f"{len(r['processes'])} processes"])

    class FullDisk:
        def __getattr__(self, name):
            return getattr(os, name)

        def fsync(self, fd):  # the data was accepted, the disk refuses it when flushed
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as full:
        full.setattr(atomicfile, "os", FullDisk())
        assert cli.main(["cluster", "--join", "--report", str(target)]) == 1
    said = capsys.readouterr()
    assert said.out == "" and said.err == (
        f"pmapviz: --report {target} was not written (No space left on device): the previous "
        "file is intact; free some space there or name a file on another disk.\n"
    )
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["cluster-report.json"]
    assert cli.main(["cluster", "--join", "--report", str(target)]) == 0
    assert json.loads(target.read_text()) == report
    assert capsys.readouterr().out == f"500 processes\nreport written to {target}\n"
