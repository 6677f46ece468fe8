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
