"""python -m pmapviz dot: the seed's example, and whether the devices share host memory."""

import json

from tests.app.test_cli import run_cli


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


def test_the_default_is_the_seeds_pairs_as_they_split_over_three_devices():
    """10,000,000 pairs do not split over 3 devices: the default takes the first 9,999,999,
    as the Live page's example does, instead of refusing its own default."""
    r = run_cli("dot", "--devices", "3", "--repeat", "1", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["pairs"] == 9_999_999 and out["allclose"] is True
    assert out["pmap_out_shape"] == [3, 3_333_333]
