"""A real cluster's report drawn: hosts x devices at their global ids, each process's local
view, the check against numpy; how to make one when none is open."""

import copy
import json

from pmapviz.features.cluster import clusterreport
from tests.conftest import ROOT
from tests.core.ui.conftest import render, texts

REAL = json.loads((ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json").read_text())


def _show(data, source):
    from pmapviz.features.cluster import clusterreport
    from pmapviz.features.cluster.ui import report_view

    report_view.show(None if data is None else clusterreport.parse(data), source)


def test_the_report_draws_hosts_processes_and_the_check():
    at = render(_show, json.dumps(REAL), "the upload `r.json`")
    assert not at.exception
    assert at.subheader[0].value == "1 host, 4 processes, 8 global devices"
    said = texts(at)
    assert "From the upload `r.json`: `Slurm` detected by JAX's `SlurmCluster`" in said
    grid = next(m.value for m in at.markdown if "role='img'" in m.value)
    assert "id 6145" in grid and "process 3 · axis 7" in grid and ">vm</div>" in grid
    rows = at.dataframe[0].value
    assert list(rows["psum"]) == [36.0] * 4
    assert list(rows["local devices"]) == ["[0, 1]", "[2048, 2049]", "[4096, 4097]", "[6144, 6145]"]
    assert at.success[0].value.startswith("psum = 36 in **every** process, equal to numpy's")


def test_a_wrong_answer_is_an_error_and_hostile_hostnames_stay_text():
    data = copy.deepcopy(REAL)
    data["per_process"][1]["psum"] = 35.0
    data["per_process"][0]["hostname"] = "<img src=x onerror=alert(1)>"
    at = render(_show, json.dumps(data), "x")
    assert not at.exception and not at.success
    assert "the processes DISAGREE" in at.error[0].value
    grid = next(m.value for m in at.markdown if "role='img'" in m.value)
    assert "<img" not in grid and "&lt;img" in grid


def test_no_report_says_how_to_make_one():
    at = render(_show, None, "")
    assert "python -m pmapviz cluster --join --report cluster-report.json" in at.info[0].value
    assert not at.dataframe


def test_host_grid_puts_each_hosts_processes_on_one_row():
    from pmapviz.features.cluster.ui import report_view

    records = copy.deepcopy(REAL["per_process"])
    for r in records:
        r["hostname"] = f"node{r['process_index'] // 2}"
    built = clusterreport.build(records, {"name": "Slurm"}, 1.0, "now", "0.10.2")
    rows, label = report_view.host_grid(clusterreport.parse(json.dumps(built)))
    assert [name for name, _ in rows] == ["node0", "node1"]
    assert [pos for _, _, pos in [(0, 0, c[1]) for c in rows[1][1]]] == [4, 5, 6, 7]
    assert label.startswith("2 hosts, 4 processes, 8 global devices: node0: processes 0, 1")
