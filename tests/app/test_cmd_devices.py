"""python -m pmapviz devices: the count asked for, from a flag or the environment."""

import json

from tests.app.test_cli import run_cli


def test_devices_json_reports_the_requested_count():
    r = run_cli("devices", "--devices", "3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["count"] == 3 and [d["label"] for d in out["devices"]] == ["cpu:0", "cpu:1", "cpu:2"]
    assert out["notes"] == []


def test_env_variable_sets_the_count():
    r = run_cli("devices", "--json", env={"PMAPVIZ_DEVICES": "2"})
    assert json.loads(r.stdout)["count"] == 2


def test_bad_count_is_one_line_and_exit_2():
    r = run_cli("devices", "--devices", "100000")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "at most 64" in lines[0] and "Traceback" not in r.stderr
