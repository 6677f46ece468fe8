"""A cluster's report: built from the processes' records, read back from any text (refusing,
in one message, whatever is not a report), checked against numpy, and opened only from inside
the reports folder."""

from __future__ import annotations

import copy
import json

import pytest

from pmapviz.features.cluster import clusterreport
from pmapviz.features.cluster.clusterreport import ReportError
from tests.conftest import ROOT

REAL = json.loads((ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json").read_text())


def _text(data) -> str:
    return json.dumps(data)


def test_a_real_report_reads_back_and_checks_against_numpy():
    r = clusterreport.parse(_text(REAL))
    assert r.process_count == 4 and len(r.devices) == 8
    assert r.devices[:3] == ((0, 0), (1, 0), (2048, 1))
    assert list(r.hosts) == ["vm"] and [p.index for p in r.hosts["vm"]] == [0, 1, 2, 3]
    assert r.processes[3].local_device_ids == (6144, 6145)
    assert r.environment["jax_class"] == "SlurmCluster"
    check = clusterreport.check(r)
    assert check.ok and check.expected_psum == 36.0 and check.inputs_as_designed
    assert REAL["check"] == check.to_json()


def test_build_groups_hosts_and_lists_every_global_device():
    records = copy.deepcopy(REAL["per_process"])
    for r in records:
        r["hostname"] = f"node{r['process_index'] // 2}"
    report = clusterreport.build(records[::-1], {"name": "Slurm"}, 1.5, "now", "0.10.2")
    assert report["hosts"] == [
        {"hostname": "node0", "process_indices": [0, 1]},
        {"hostname": "node1", "process_indices": [2, 3]},
    ]
    assert report["global_devices"][2] == {"id": 2048, "process_index": 1, "host": "node0"}
    assert report["global_devices"][7] == {"id": 6145, "process_index": 3, "host": "node1"}
    assert report["process_count"] == 4 and report["check"]["ok"]
    assert [p["process_index"] for p in report["per_process"]] == [0, 1, 2, 3]


def _broken(path: list, value):
    data = copy.deepcopy(REAL)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return _text(data)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not valid JSON: Expecting property name"),
        (b"\xff\xfe\x00", "not"),
        ("[1, 2]", "not a pmapviz cluster report"),
        ('{"a": NaN}', "holds NaN"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (" " * (clusterreport.MAX_BYTES + 1), "a report is at most 8 MiB"),
        (_broken(["process_count"], True), "process_count is `true`, not a whole number"),
        (_broken(["process_count"], 5), "needs one for each of 0..4"),
        (
            _broken(["per_process", 1, "psum"], "![x](http://example.invalid/a.png)"),
            'per_process[1].psum is `"![x](http://example.inv...`, not a number',
        ),
        (_broken(["per_process", 0, "local_device_ids"], [0, 2048]), "are not the global devices"),
        (_broken(["per_process", 0, "axis_index"], [0, 99]), "axis_index is 99; expected 0 to 7"),
        (_broken(["per_process", 0, "local_inputs"], [1.0]), "2 local devices but 1 inputs"),
        (_broken(["global_devices", 1, "id"], 0), "name a device id twice"),
        (_broken(["global_devices"], {}), "global_devices is not a list"),
        (_broken(["per_process"], [1, 2]), "holds something that is not an object"),
    ],
)
def test_what_is_not_a_report_is_said_in_one_message(text, said):
    with pytest.raises(ReportError) as err:
        clusterreport.parse(text)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_the_check_catches_disagreement_and_wrong_answers():
    data = copy.deepcopy(REAL)
    data["per_process"][2]["psum"] = 35.0
    c = clusterreport.check(clusterreport.parse(_text(data)))
    assert not c.psum_equal and c.psum_correct and not c.ok
    data = copy.deepcopy(REAL)
    for p in data["per_process"]:
        p["psum"] = 40.0
    c = clusterreport.check(clusterreport.parse(_text(data)))
    assert c.psum_equal and not c.psum_correct
    data = copy.deepcopy(REAL)
    data["per_process"][1]["all_gather"][0] = 9.0
    assert not clusterreport.check(clusterreport.parse(_text(data))).gather_correct
    data = copy.deepcopy(REAL)
    data["per_process"][1]["axis_index"] = [0, 1]  # positions 0, 1 twice, 2, 3 never
    assert not clusterreport.check(clusterreport.parse(_text(data))).axis_complete


def test_paths_stay_inside_the_reports_folder(tmp_path):
    inside = tmp_path / "reports"
    (inside / "runs").mkdir(parents=True)
    (inside / "runs" / "a.json").write_text(_text(REAL))
    (tmp_path / "secret.json").write_text("{}")
    (inside / "link.json").symlink_to(tmp_path / "secret.json")
    folder = str(inside)
    assert clusterreport.resolve(folder, "runs/a.json") == inside / "runs" / "a.json"
    assert clusterreport.read(folder, " runs/a.json ").process_count == 4
    for name in ("../secret.json", str(tmp_path / "secret.json"), "link.json", "."):
        with pytest.raises(ReportError, match="outside the reports folder"):
            clusterreport.resolve(folder, name)
    with pytest.raises(ReportError, match="No reports folder was named"):
        clusterreport.resolve(None, "a.json")
    with pytest.raises(ReportError, match="There is no report `nope.json`"):
        clusterreport.read(folder, "nope.json")
    with pytest.raises(ReportError, match="characters at most"):
        clusterreport.resolve(folder, "a" * 300)
    assert clusterreport.listing(folder) == ["runs/a.json"]  # link.json leads out: not listed
    assert clusterreport.listing(None) == []


def test_the_listing_never_leaves_the_folder_nor_follows_a_linked_folder(tmp_path, monkeypatch):
    """Issue 36: `*/*.json` followed a linked subfolder out of the folder. Only what
    clusterreport.read would open is listed: links to outside files and folders, a link back
    to the folder itself and links that loop are left out; a link to a file inside stays."""
    inside, outside = tmp_path / "reports", tmp_path / "elsewhere"
    (inside / "runs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.json").write_text(_text(REAL))
    (inside / "a.json").write_text(_text(REAL))
    (inside / "runs" / "b.json").write_text(_text(REAL))
    (inside / "notes.txt").write_text("")
    (inside / "out").symlink_to(outside)  # a linked folder: out/secret.json is not listed
    (inside / "out.json").symlink_to(outside / "secret.json")  # a linked file outside
    (inside / "runs" / "up.json").symlink_to(outside / "secret.json")  # the same, one down
    (inside / "self").symlink_to(inside)  # a link back to the folder: never entered
    (inside / "loop.json").symlink_to(inside / "loop.json")  # a link to itself
    (inside / "ping.json").symlink_to(inside / "pong.json")
    (inside / "pong.json").symlink_to(inside / "ping.json")
    (inside / "same.json").symlink_to(inside / "a.json")  # a link to a file inside: opens
    listed = clusterreport.listing(str(inside))
    assert listed == ["a.json", "runs/b.json", "same.json"]
    for name in listed:
        assert clusterreport.read(str(inside), name).process_count == 4
    assert clusterreport.listing(str(inside / "self")) == listed  # the folder named by a link
    assert clusterreport.listing(str(inside), most=2) == ["a.json", "runs/b.json"]
    assert clusterreport.listing(str(tmp_path / "gone")) == []
    many = tmp_path / "many"
    many.mkdir()
    for i in range(10):
        (many / f"r{i}.json").write_text("{}")
    monkeypatch.setattr(clusterreport, "MAX_SCANNED", 4)  # entries looked at, at most
    assert len(clusterreport.listing(str(many))) == 4


def test_the_upload_widget_says_the_same_limit_the_reader_keeps():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == clusterreport.MAX_BYTES


def test_a_report_name_that_is_a_looping_link_is_one_line_not_a_crash(tmp_path):
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    with pytest.raises(clusterreport.ReportError, match="cannot be opened"):
        clusterreport.resolve(str(tmp_path), "loop.json")
