"""`python -m pmapviz`: each call is a fresh process, so these also prove the device count is
applied before JAX starts, keeping the user's own XLA_FLAGS."""

import json
import os
import subprocess
import sys

import pytest

from pmapviz import settings
from tests.conftest import ROOT


def run_cli(*args, env=None):
    full_env = {**os.environ, "PMAPVIZ_DEVICES": "", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pmapviz", *args], cwd=ROOT, env=full_env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_devices_json_reports_the_requested_count():
    r = run_cli("devices", "--devices", "3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["count"] == 3 and [d["label"] for d in out["devices"]] == ["cpu:0", "cpu:1", "cpu:2"]
    assert out["notes"] == []


def test_user_xla_flags_are_kept_and_count_overridden():
    code = (
        "import os; from pmapviz import devicesetup; import sys;"
        "devicesetup.apply(devicesetup.parse_settings(['--devices','5'], os.environ));"
        "import jax; print(len(jax.devices())); print(os.environ['XLA_FLAGS'])"
    )
    env = {
        **os.environ,
        "PMAPVIZ_DEVICES": "",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_cpu_enable_fast_math=false",
    }
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    count, flags = r.stdout.strip().splitlines()
    assert count == "5"
    assert "--xla_cpu_enable_fast_math=false" in flags
    assert "--xla_force_host_platform_device_count=5" in flags and "=2" not in flags


def test_env_variable_sets_the_count():
    r = run_cli("devices", "--json", env={"PMAPVIZ_DEVICES": "2"})
    assert json.loads(r.stdout)["count"] == 2


def test_bad_count_is_one_line_and_exit_2():
    r = run_cli("devices", "--devices", "100000")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "at most 64" in lines[0] and "Traceback" not in r.stderr


def test_plan_json_for_the_seed_shapes():
    r = run_cli("plan", "--devices", "8", "--fn", "batched_dot",
                "--shape", "8,1250000,3", "--shape", "8, 1_250_000, 3", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["out_shapes"] == [8, 1250000]
    assert out["per_device_in_shapes"] == [[1250000, 3], [1250000, 3]]


def test_plan_reports_problems_with_exit_1():
    r = run_cli("plan", "--devices", "8", "--shape", "10000000,3", "--shape", "10000000,3")
    assert r.returncode == 1
    assert "mapped_axis_too_large" in r.stdout and "(8, 1_250_000, 3)" in r.stdout


def test_plan_for_a_bigger_machine_than_this_one():
    r = run_cli("plan", "--fn", "double", "--shape", "512,3", "--plan-devices", "512", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["devices_used"] == 512


def test_plan_bad_text_is_one_line_exit_2():
    r = run_cli("plan", "--shape", "8,,3", "--shape", "8,3")
    assert r.returncode == 2 and "empty size" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("plan", "--fn", "double", "--shape", "8,3", "--shape", "8,3")
    assert r.returncode == 2 and "takes 1 argument" in r.stderr


def test_plan_your_own_expression_prints_the_same_plan_as_the_app():
    from pmapviz.explorersettings import Scenario

    r = run_cli("plan", "--devices", "8", "--expr", "jnp.tanh(x @ w)", "--args", "x,w",
                "--shape", "8,4,5", "--shape", "5,2", "--in-axes", "0,None", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    _, p, errors = Scenario.from_texts(dict(fn="expr", args="x, w", body="jnp.tanh(x @ w)",
                                            s0="8, 4, 5", s1="5, 2", a0="0", a1="None"),
                                       8).plan(8)  # fmt: skip
    assert not errors and out["ok"] and out["out_shapes"] == list(p.out_shapes) == [8, 4, 2]
    assert out["arg_names"] == ["x", "w"] and out["in_axes"] == [0, None]


def test_plan_expression_problems_and_refusals_exit_codes(capsys):
    """In-process: a refusal stops before JAX starts; --plan-devices never applies devices."""
    from pmapviz.app import cli

    base = ["plan", "--plan-devices", "8", "--args", "x", "--shape", "8,3"]
    assert cli.main([*base, "--expr", "jnp.sum(x, axis=5)"]) == 1  # f rejects the shapes
    assert "function_rejects_shapes" in capsys.readouterr().out
    for body, words in (("x + __import__('os')", "column 5"), ("x +* 2", "column 4"),
                        ("open('f')", "`open` is not allowed")):  # fmt: skip
        assert cli.main([*base, "--expr", body]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0] and "Traceback" not in err[0]
    assert cli.main(["plan", "--expr", "x * 2", "--shape", "8,3"]) == 2
    assert "needs --args" in capsys.readouterr().err
    assert cli.main(["plan", "--fn", "double", "--expr", "x", "--args", "x"]) == 2
    assert "not both" in capsys.readouterr().err


def test_plan_with_a_dict_argument_and_a_prefix(capsys):
    """Pytree arguments from the command line: the JSON names every leaf and keeps each
    argument's tree and prefix as typed; a leaf that cannot be mapped is named; bad tree text
    is one line, exit 2."""
    from pmapviz.app import cli
    from pmapviz.explorersettings import Scenario

    body, params = "jnp.tanh(x @ p['w'] + p['b'])", "{'w': (5, 2), 'b': (2,)}"
    base = ["plan", "--plan-devices", "8", "--expr", body, "--args", "x,p",
            "--shape", "8,4,5", "--shape", params]  # fmt: skip
    assert cli.main([*base, "--in-axes", "(0, {'w': None, 'b': None})", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    _, p, errors = Scenario.from_texts(dict(fn="expr", args="x, p", body=body, s0="8, 4, 5",
                                            s1=params, a0="0", a1="None"), 8).plan(8)  # fmt: skip
    assert not errors and p.ok
    assert out["out_shapes"] == list(p.out_shapes) == [8, 4, 2]
    assert out["arg_names"] == ["x", "p['b']", "p['w']"] == [leaf.name for leaf in p.leaves]
    assert out["arguments"][1] == {"name": "p", "shape": {"w": [5, 2], "b": [2]},
                                   "in_axes": {"w": None, "b": None}}  # fmt: skip
    assert cli.main([*base, "--in-axes", "(0, 0)"]) == 1
    said = capsys.readouterr().out
    assert "mapped_sizes_differ" in said and "p['b'] axis 0 has 2" in said
    assert cli.main([*base, "--in-axes", "(0, {'w': None})"]) == 1
    assert "dict with keys `'w'`, but p is a dict with keys `'b', 'w'`" in capsys.readouterr().out
    bad = [*base[:-1], "{'w': (5, 2), 'b': (2,)", "--in-axes", "0,None"]
    assert cli.main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "column 24" in err[0], err


def test_dot_runs_the_seed_example_and_says_when_the_devices_share_host_memory():
    r = run_cli("dot", "--pairs", "8192", "--devices", "4", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "(4, 2048) -> reshape -> (8192,)" in r.stdout and "allclose=True" in r.stdout
    assert "[ 60%] Running on 4 devices (2 timed runs after a warm-up)" in r.stdout
    assert "share the host's memory: no copy" in r.stdout  # blocks of 2,048 pairs: aligned
    r = run_cli("dot", "--pairs", "8008", "--devices", "4", "--json")  # blocks of 2,002
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["zero_copy"] is False and out["platform"] == "cpu" and out["allclose"] is True
    assert len(out["run_s_all"]) == 3  # the default: 3 timed runs
    r = run_cli("dot", "--pairs", "8001", "--devices", "4")
    assert r.returncode == 2 and "do not split evenly over 4 devices" in r.stderr


def test_plan_json_is_the_plans_own_to_json():
    """`plan --json` prints Plan.to_json(), byte for byte: for a pytree argument with a
    prefix, and for in_axes of the wrong length (the plan has no leaves then)."""
    from pmapviz import expr, planning

    body, params = "jnp.tanh(x @ p['w'] + p['b'])", "{'w': (5, 2), 'b': (2,)}"
    cases = [("(0, {'w': None, 'b': None})", (0, {"w": None, "b": None}), 0),
             ("0", (0,), 1)]  # fmt: skip
    for text, in_axes, rc in cases:
        r = run_cli("plan", "--plan-devices", "8", "--expr", body, "--args", "x,p",
                    "--shape", "8,4,5", "--shape", params, "--in-axes", text, "--json")  # fmt: skip
        assert r.returncode == rc, r.stderr
        p = planning.plan(expr.program("x,p", body), [(8, 4, 5), {"w": (5, 2), "b": (2,)}],
                          in_axes=in_axes, n_devices=8)  # fmt: skip
        assert r.stdout == p.to_json() + "\n"
    out = json.loads(r.stdout)  # the second: no leaves, so one entry per argument as given
    assert out["arg_names"] == ["x", "p"] and out["in_axes"] == [None, None]
    assert [a["in_axes"] for a in out["arguments"]] == [0, None]
    assert out["problems"][0]["code"] == "in_axes_length" and out["per_device_in_shapes"] == []


def test_mesh_json_has_the_mesh_and_each_argument_as_jax_places_it(capsys, monkeypatch):
    from pmapviz.app import cli

    # the suite's 8 devices are up already; applying the command's own settings would change
    # what every later test of this process reads from devices.applied_settings()
    monkeypatch.setattr(cli.devicesetup, "apply", lambda settings: None)

    assert cli.main(["mesh", "--mesh", "2,4", "--axis-names", "data,model", "--shape", "8,16",
                     "--spec", "P('data', None)", "--shape", "8", "--spec", "P()",
                     "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"] == {"shape": [2, 4], "axis_names": ["data", "model"],
                           "devices": [[0, 1, 2, 3], [4, 5, 6, 7]]}  # fmt: skip
    first, second = out["arguments"]
    assert first["spec"] == ["data", None] and first["local_shape"] == [4, 16]
    assert first["replicated_over"] == ["model"] and len(first["devices"]) == 8
    assert first["devices"][5] == {"id": 5, "coords": [1, 1], "index": [[4, 8], [0, 16]]}
    assert second["replicated_over"] == ["data", "model"] and second["local_shape"] == [8]
    assert out["problems"] == []


def test_mesh_refusals_exit_1_with_a_fix_and_bad_text_exits_2(capsys, monkeypatch):
    from pmapviz.app import cli

    monkeypatch.setattr(cli.devicesetup, "apply", lambda settings: None)  # as above

    assert cli.main(["mesh", "--plan-devices", "16", "--mesh", "4x4", "--shape", "6",
                     "--spec", "model"]) == 1  # fmt: skip
    said = capsys.readouterr().out
    assert "4 does not divide 6" in said and "fix: Make dimension 0 a multiple of 4" in said
    assert cli.main(["mesh", "--mesh", "2x4", "--shape", "8", "--spec", "P('data'"]) == 2
    assert "--spec 1" in capsys.readouterr().err
    assert cli.main(["mesh", "--plan-devices", "8", "--mesh", "4x4", "--shape", "8",
                     "--spec", "P()"]) == 2  # fmt: skip
    assert "has 16 devices" in capsys.readouterr().err
    assert cli.main(["mesh", "--mesh", "4x4", "--shape", "8", "--spec", "P()"]) == 2
    assert "--plan-devices 16" in capsys.readouterr().err  # more than this process has


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_mesh_with_no_flags_places_the_meshes_pages_example_on_every_count(capsys, n):
    """`python -m pmapviz mesh` alone works on every count, with the page's own defaults."""
    from pmapviz import meshspecs
    from pmapviz.app import cli

    assert cli.main(["mesh", "--plan-devices", str(n), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"]["shape"] == list(meshspecs.default_mesh(n)) and out["problems"] == []
    page = meshspecs.schema(n).defaults()
    assert [a["shape"] for a in out["arguments"]] == [
        list(settings.parse_shape(page[k])) for k in ("s0", "s1")]  # fmt: skip
    assert sum(len(a["devices"]) for a in out["arguments"]) == 2 * n


def test_mesh_plans_a_bigger_machine_from_shapes_alone(capsys):
    from pmapviz.app import cli

    assert cli.main(["mesh", "--plan-devices", "16", "--mesh", "4x4", "--shape", "8,16",
                     "--spec", "data, model", "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"]["devices"][3] == [12, 13, 14, 15]
    assert out["arguments"][0]["local_shape"] == [2, 4]
    assert out["arguments"][0]["devices"][-1]["index"] == [[6, 8], [12, 16]]


def test_cluster_join_outside_a_cluster_is_one_line_and_exit_1(capsys, monkeypatch):
    from pmapviz.app import cli
    from pmapviz.cluster import clusterenv

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


def test_on_two_device_sets_each_command_says_which_it_runs_on(capsys, monkeypatch):
    """A TPU chip beside the emulated CPU devices: the lesson commands run on the larger set
    unless --device-set says otherwise, and say so on stderr (stdout stays the output)."""
    from pmapviz.app import cli
    from tests import fakes
    from tests.conftest import TEST_DEVICES

    monkeypatch.setattr(cli.devicesetup, "apply", lambda settings: None)  # the suite's devices
    with fakes.fake_devices("tpu", 1):
        assert cli.main(["mesh", "--json"]) == 0
        run = capsys.readouterr()
        assert json.loads(run.out)["mesh"]["shape"] == [2, TEST_DEVICES // 2]
        assert run.err.strip() == (f"pmapviz: on {TEST_DEVICES} emulated CPU devices "
                                   "(--device-set tpu: 1 TPU v5 lite device)")  # fmt: skip
        assert cli.main(["mesh", "--device-set", "tpu", "--json"]) == 0
        run = capsys.readouterr()
        assert json.loads(run.out)["mesh"]["shape"] == [1]
        assert run.err.startswith("pmapviz: on 1 TPU v5 lite device (--device-set cpu:")
        assert cli.main(["mesh", "--device-set", "gpu"]) == 2
        assert "`gpu` is not a device set here. This process has: auto, tpu, cpu" in (
            capsys.readouterr().err
        )
    assert cli.main(["mesh", "--json"]) == 0  # one set again: nothing said about sets
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- issue 36: files to write
def test_bench_json_a_folder_is_refused_before_the_sweep_in_one_line(tmp_path):
    """`bench --json /tmp` ran the whole sweep, then died with IsADirectoryError."""
    r = run_cli("bench", "--json", str(tmp_path))
    assert r.returncode == 2 and r.stdout == ""  # no progress line: nothing was measured
    assert r.stderr == (f"pmapviz: --json `{tmp_path}` is a folder: give a file name inside it, "
                        f"e.g. `{tmp_path}/bench.json`.\n")  # fmt: skip


def _no_work(monkeypatch):
    """Any start of JAX, sweep or cluster join fails the test: refusals come before them."""
    from pmapviz.app import cli

    def started(*a, **k):
        raise AssertionError("work started before the output path was checked")

    for owner, name in ((cli, "_start"), (cli.benchmarking, "sweep"), (cli.clusterjoin, "join")):
        monkeypatch.setattr(owner, name, started)
    return cli


def test_every_file_to_write_is_checked_before_any_work(capsys, tmp_path, monkeypatch):
    cli = _no_work(monkeypatch)
    (tmp_path / "a_file").write_text("")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    cases = [
        (["bench", "--json", str(tmp_path)], f"--json `{tmp_path}` is a folder: give a file "
         f"name inside it, e.g. `{tmp_path}/bench.json`."),
        (["bench", "--json", f"{tmp_path}/no/b.json"], f"--json `{tmp_path}/no/b.json`: its "
         f"folder does not exist: create `{tmp_path}/no` first, or name a file in a folder "
         "that exists."),
        (["bench", "--json", f"{tmp_path}/a_file/b.json"], f"--json `{tmp_path}/a_file/b.json`"
         f": `{tmp_path}/a_file` is a file, not a folder: name a file inside a folder."),
        (["bench", "--json", f"{tmp_path}/loop.json"], f"--json `{tmp_path}/loop.json` is a "
         "link that loops: name another file."),
        (["cluster", "--join", "--report", str(tmp_path)], f"--report `{tmp_path}` is a folder:"
         f" give a file name inside it, e.g. `{tmp_path}/cluster-report.json`."),
        (["cluster", "--join", "--report", f"{tmp_path}/no/r.json"], f"--report "
         f"`{tmp_path}/no/r.json`: its folder does not exist: create `{tmp_path}/no` first, or "
         "name a file in a folder that exists."),
    ]  # fmt: skip
    for argv, said in cases:
        assert cli.main(argv) == 2, argv
        run = capsys.readouterr()
        assert run.out == "" and run.err == f"pmapviz: {said}\n", argv


def test_a_file_this_user_may_not_write_is_refused_before_any_work(capsys, tmp_path, monkeypatch):
    """os.access decides (as root it says writable, so settings' view of it is faked here;
    the chmod test below is the real thing for any other user)."""
    import types

    cli = _no_work(monkeypatch)
    (tmp_path / "old.json").write_text("{}")
    monkeypatch.setattr(settings, "os", types.SimpleNamespace(
        access=lambda path, mode: False, W_OK=os.W_OK, X_OK=os.X_OK, path=os.path))  # fmt: skip
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
    assert cli._bench_inputs(parse(["bench", "--json"]))[-1] is None
    assert cli._bench_inputs(parse(["bench", "--json", "-"]))[-1] is None
    out = tmp_path / "gone"
    out.mkdir()

    class Report:
        floor_method, results = "measured", []

        def to_json(self):
            return {}

    def sweep(*a, **k):
        out.rmdir()  # checked before the sweep; gone by the time it is written
        return Report()

    monkeypatch.setattr(cli, "_start", lambda *a, **k: "cpu")
    monkeypatch.setattr(cli.benchmarking, "sweep", sweep)
    assert cli.main(["bench", "--devices", "1", "--json", str(out / "b.json")]) == 1
    run = capsys.readouterr()
    assert run.err == f"pmapviz: --json {out}/b.json: No such file or directory\n"


# ---------------------------------------------------------------- trace: malformed, big, many
def test_trace_of_a_malformed_file_exits_2_with_one_line_and_no_traceback(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    r = run_cli("trace", str(deep))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("pmapviz: deep.json nests its JSON too deep") and (
        r.stderr.count("\n") == 1
    )


def test_trace_says_what_is_wrong_where_for_every_malformed_shape(tmp_path, capsys):
    from pmapviz.app import cli
    from tests.core.test_timeline import _cpu_trace

    for trace, line in [
        ({"traceEvents": 5}, "The trace's traceEvents is 5, not a list of events."),
        (_cpu_trace(ts="abc"), "traceEvents[0].ts is 'abc', not a number."),
        (_cpu_trace(pid={}), "traceEvents[0].pid is an object, not a number."),
        (_cpu_trace(args__device_ordinal=10**30), "traceEvents[0].args.device_ordinal is a "
         "31-digit number, not a device number."),
    ]:  # fmt: skip
        path = tmp_path / "t.json"
        path.write_text(json.dumps(trace))
        assert cli.main(["trace", str(path)]) == 2
        assert capsys.readouterr().err == f"pmapviz: {line}\n"


def test_trace_of_the_root_folder_gives_up_in_bounds(capsys):
    """`trace /` looks at a bounded part of the file system (timeline.find_trace) and says so
    in one line, or reads a trace it found there."""
    from pmapviz.app import cli

    rc = cli.main(["trace", "/"])
    err = capsys.readouterr().err
    assert rc == 0 or (rc == 2 and err.startswith("pmapviz: ") and err.count("\n") == 1)


def test_trace_json_keeps_every_one_of_5000_lanes(tmp_path, capsys):
    import gzip

    from pmapviz.app import cli
    from tests.core.test_timeline import many_lanes

    path = tmp_path / "many.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": many_lanes()}).encode(), 1))
    assert cli.main(["trace", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["lanes"]) == 5_000 and out["lanes"][-1]["device"] == "cpu:4999"
    assert all(len(lane["events"]) == 3 for lane in out["lanes"])
