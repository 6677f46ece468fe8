"""The Timing lab's results: the charts, the table, the downloads (CSV, JSON)."""

import csv
import io

from pmapviz.core.budgets import memorypool
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import benchreports, workloads
from pmapviz.features.timing.ui import sweep_results
from tests.core.ui.conftest import render


def test_csv_has_a_header_line_and_one_line_per_row():
    text = sweep_results.csv_text([{"impl": "pmap", "ms": 1.5}, {"impl": "vmap", "ms": 2.0}])
    assert list(csv.DictReader(io.StringIO(text))) == [
        {"impl": "pmap", "ms": "1.5"},
        {"impl": "vmap", "ms": "2.0"},
    ]


def _results(rep):
    import streamlit as st

    from pmapviz.features.timing.ui import sweep_results

    if rep is not None:
        st.session_state["tl_report"] = rep
    sweep_results.show([1, 2])


def test_no_report_says_what_to_press_and_an_empty_one_says_so():
    assert "press Run" in render(_results, None).info[0].value
    assert (
        render(_results, benchreports.SweepReport({}, 0.0, "dot")).warning[0].value
        == "No measurements yet."
    )


def test_a_small_sweep_has_four_charts_a_table_and_two_downloads():
    wl = workloads.WORKLOADS["dot"]
    rep = bench.sweep(wl, [2**10], [1, 2], ["vmap", "pmap"], repeat=3, budget=memorypool.budget())
    at = render(_results, rep)
    assert not at.exception
    assert len(at.get("plotly_chart")) == 4 and len(at.get("download_button")) == 2
    assert len(at.dataframe[0].value) == len(rep.results)
    assert (
        at.caption[-1].value == f"Same harness from a script: `{sweep_results.bench_command(rep)}`."
    )
    assert sweep_results.bench_command(rep) == (
        "python -m pmapviz bench --workload dot --size 1024 --devices 1,2 --repeat 3 "
        "--json out.json"  # this sweep's, not a fixed size that 3 devices do not divide
    )
