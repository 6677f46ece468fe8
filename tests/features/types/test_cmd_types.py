"""python -m pmapviz types: every equation's type per mode, as text and as JSON; bad flags
one line, exit 2."""

import json
import subprocess
import sys

import pytest

from pmapviz.core.devices import jaxstartup
from tests.conftest import ROOT


@pytest.fixture()
def cli(monkeypatch):
    from pmapviz.app import cli

    # the suite's 8 devices are up already (tests/features/meshes/test_cmd_mesh.py says why)
    monkeypatch.setattr(jaxstartup, "apply", lambda settings: None)
    return cli


def test_json_has_every_mode_asked_for(cli, capsys):
    argv = ["types", "--mesh", "2x4", "--shape", "8,16", "--spec", "P('data', None)"]
    argv += ["--shape", "16,8", "--spec", "P(None, 'model')", "--mode", "auto,manual", "--json"]
    argv += ["--local-f", "lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["modes"]) == ["auto", "manual"] and out["mesh"]["axis_names"] == [
        "data",
        "model",
    ]
    auto = out["modes"]["auto"]
    assert auto["equations"][0]["out_types"] == ["f32[8,8]"]
    assert auto["equations"][0]["chosen"] == ["P('data', 'model')"]
    manual = out["modes"]["manual"]["equations"]
    assert manual[-1]["collectives"][0]["kind"] == "all-gather"
    assert "{V:" in manual[1]["out_types"][0]


def test_text_and_catalog_programs(cli, capsys):
    assert cli.main(["types", "--program", "training", "--mode", "manual", "--model", "mlp"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("training step (mlp, pmean)") and "<-> all-reduce" in text
    assert cli.main(["types", "--program", "normalise", "--mode", "explicit"]) == 1  # refused
    assert "JAX refused it (compile)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--program", "<b>"], "--program `<b>`: choose one of"),
        (["--mode", "nope"], "--mode: `nope` is not a mode"),
        (["--mesh", "9x<b>"], "--mesh `9x<b>` is not a mesh shape"),
        (["--shape", "1" + "0" * 30, "--spec", "P()"], "--shape 1: the size"),
        (["--shape", "8,8"], "give --shape and --spec once per argument"),
        (["--mesh", "2x8"], "has 16 devices and this server 8"),
        (["--spec", "P(" * 64, "--shape", "8,16"], "--spec 1"),
        (["--program", "training", "--batch", "9"], "does not split evenly"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(cli, capsys, argv, words):
    assert cli.main(["types", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


def test_the_command_runs_in_a_process_of_its_own():
    r = subprocess.run(
        [sys.executable, "-m", "pmapviz", "types", "--devices", "3", "--mode", "all", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mesh"]["shape"] == [3]  # the Meshes page's default on 3 devices: one axis
    assert all(m["error"] is None for m in out["modes"].values())
