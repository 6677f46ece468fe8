"""python -m pmapviz trace: malformed files and folders in one line, 5,000 lanes kept."""

import json

from tests.app.test_cli import run_cli


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
    from tests.core.xla.test_timeline import _cpu_trace

    for trace, line in [
        ({"traceEvents": 5}, "The trace's traceEvents is 5, not a list of events."),
        (_cpu_trace(ts="abc"), "traceEvents[0].ts is 'abc', not a number."),
        (_cpu_trace(pid={}), "traceEvents[0].pid is an object, not a number."),
        (
            _cpu_trace(args__device_ordinal=10**30),
            "traceEvents[0].args.device_ordinal is a 31-digit number, not a device number.",
        ),
    ]:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(trace))
        assert cli.main(["trace", str(path)]) == 2
        assert capsys.readouterr().err == f"pmapviz: {line}\n"


def test_trace_of_the_root_folder_gives_up_in_bounds(capsys):
    """`trace /` looks at a bounded part of the file system (tracefiles.find_trace) and says so
    in one line, or reads a trace it found there."""
    from pmapviz.app import cli

    rc = cli.main(["trace", "/"])
    err = capsys.readouterr().err
    assert rc == 0 or (rc == 2 and err.startswith("pmapviz: ") and err.count("\n") == 1)


def test_trace_json_keeps_every_one_of_5000_lanes(tmp_path, capsys):
    import gzip

    from pmapviz.app import cli
    from tests.core.xla.test_timeline import many_lanes

    path = tmp_path / "many.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": many_lanes()}).encode(), 1))
    assert cli.main(["trace", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["lanes"]) == 5_000 and out["lanes"][-1]["device"] == "cpu:4999"
    assert all(len(lane["events"]) == 3 for lane in out["lanes"])
