"""A cluster's result: each process's local devices on the global axis, the check, timings."""

from pmapviz.features.cluster.cluster import ClusterResult
from pmapviz.features.cluster.ui import cluster_result
from tests.core.ui.conftest import render


def _process(p: int, ids: list[int], axis: list[int], psum: float = 10.0) -> dict:
    return {
        "process_index": p,
        "local_device_ids": ids,
        "axis_index": axis,
        "local_inputs": [a + 1.0 for a in axis],
        "global_devices": 4,
        "psum": psum,
        "all_gather": [1.0, 2.0, 3.0, 4.0],
        "init_s": 0.5,
        "first_call_s": 0.2,
        "steady_s": 0.001,
    }


def _result(psum_of_1: float = 10.0) -> ClusterResult:
    return ClusterResult(
        2,
        2,
        4,
        [_process(0, [0, 1], [0, 1]), _process(1, [2048, 2049], [2, 3], psum_of_1)],
        1.0,
        {"steady_s": 0.0005, "first_call_s": 0.1},
    )


def test_one_row_per_process_coloured_by_global_position():
    rows = cluster_result.process_rows(_result())
    assert [label for label, _ in rows] == ["process 0", "process 1"]
    assert [pos for _, pos, _ in rows[1][1]] == [2, 3]
    assert "id 2048" in rows[1][1][0][0] and "global device id 2049" in rows[1][1][1][2]


def _show(res):
    import streamlit as st

    from pmapviz.features.cluster.ui import cluster_result

    if res is not None:
        st.session_state["cl_result"] = res
    cluster_result.show()


def test_a_correct_cluster_passes_and_compares_its_timings_with_one_process():
    at = render(_show, _result())
    assert not at.exception
    assert "2 processes x 2 devices = 4 global devices" in at.subheader[0].value
    assert "equal to numpy" in at.success[0].value and len(at.dataframe[0].value) == 2
    assert "**Timings.**" in at.markdown[-1].value


def test_processes_that_disagree_are_called_out_and_no_result_draws_nothing():
    at = render(_show, _result(psum_of_1=11.0))
    assert "DISAGREE" in at.error[0].value
    assert not render(_show, None).main.children
