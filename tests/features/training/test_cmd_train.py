"""python -m pmapviz train: a short run checked against one device, and bad numbers in one line."""

import json

import pytest

from tests.app.test_cli import run_cli


def test_train_json_matches_one_device_and_learns():
    r = run_cli("train", "--devices", "2", "--steps", "3", "--batch", "16", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["config"]["devices"] == 2 and len(out["losses"]) == 3
    assert out["losses"] == pytest.approx(out["single_device_losses"], rel=1e-5)


def test_train_bad_numbers_are_one_line_and_exit_2():
    r = run_cli("train", "--devices", "2", "--batch", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--batch" in r.stderr
