"""python -m pmapviz hlo: a collective's compiled program as JSON, and its exit codes."""

import json
import os

import pytest

from tests.app.test_cli import run_cli
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_cli_hlo_json():
    r = run_cli("hlo", "--collective", "psum", "--devices", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (c,) = out["collectives"]
    assert {
        k: c[k]
        for k in ("kind", "shape", "dtype", "bytes", "replica_groups", "source_target_pairs")
    } == {
        "kind": "all-reduce",
        "shape": [4],
        "dtype": "f32",
        "bytes": 16,
        "replica_groups": [[0, 1, 2, 3]],
        "source_target_pairs": None,
    }
    assert "collectivedefs.py" in c["source_line"]
    assert set(out["memory"]) >= {
        "argument_bytes",
        "output_bytes",
        "temp_bytes",
        "generated_code_bytes",
    }
    assert set(out["variants"]) == {"pmap", "vmap", "jit_sharded", "shard_map"}
    assert "flops" in out["cost"]


@pytest.mark.parametrize(
    "args, code, words",
    [
        (("--collective", "ppermute", "--perm", "0->9"), 2, "outside 0 to 7"),
        (("--fn", "double", "--shape", "9,3"), 1, "NOT OK"),
        (("--elements", "x", "--collective", "psum"), 2, "--elements"),
        (("--collective", "all_to_all", "--elements", "3"), 2, "multiple of 8"),
        (
            ("--collective", "psum", "--groups", "0 1 | 2 3 4 5 6 7"),
            0,
            "[[0, 1], [2, 3, 4, 5, 6, 7]]",
        ),
    ],
)
def test_cli_hlo_exit_codes(capsys, monkeypatch, args, code, words):
    from pmapviz.app import cli
    from pmapviz.core.devices import jaxstartup

    monkeypatch.setattr(jaxstartup, "_applied", jaxstartup._applied)  # restored afterwards
    saved = dict(os.environ)
    try:
        rc = cli.main(["hlo", "--devices", str(N), *args])  # in-process: the same 8 devices
    finally:
        os.environ.clear()
        os.environ.update(saved)
    out = capsys.readouterr()
    assert rc == code and words in out.out + out.err
    if code == 2:
        assert len(out.err.strip().splitlines()) == 1
