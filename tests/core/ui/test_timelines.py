"""Per-device timelines from real profiler traces: shown, or why not; captured or loaded."""

from pmapviz import timeline
from tests.conftest import ROOT
from tests.core.ui.conftest import render

GPU_TRACE = (
    ROOT / "tests" / "core" / "fixtures" / "gpu-h200" / "pmap_psum_gpu.perfetto_trace.json.gz"
)
TPU_TRACE = (
    ROOT / "tests" / "core" / "fixtures" / "tpu-v5e" / "psum_and_matmul_tpu.perfetto_trace.json.gz"
)


def _show(tl):
    from pmapviz.ui import timelines

    timelines.show(tl, "t")


def test_a_trace_from_a_gpu_has_a_lane_per_device_and_a_chart():
    tl = timeline.from_trace(timeline.parse_trace(GPU_TRACE.read_bytes(), GPU_TRACE.name))
    at = render(_show, tl)
    assert f"{len(tl.lanes)} device lane(s)" in at.caption[0].value
    assert len(at.get("plotly_chart")) == 1


def _show_tpu(floor_gbs, here):
    from pmapviz import timeline
    from pmapviz.ui import timelines
    from tests.core.ui.test_timelines import TPU_TRACE

    tl = timeline.from_trace(timeline.read_trace(str(TPU_TRACE)))
    timelines.show(tl, "t", floor_gbs, here)


def test_a_tpu_trace_shows_each_ops_bandwidth_beside_the_floor_of_the_machine_it_ran_on():
    tl = timeline.from_trace(timeline.read_trace(str(TPU_TRACE)))
    rows = timeline.op_rates(tl)
    at = render(_show_tpu, 555.0, False)  # uploaded: this machine's floor is not drawn
    assert not at.exception
    assert tl.module in at.caption[0].value and "another machine" in at.caption[1].value
    assert "pmapviz doctor" in at.caption[1].value
    table = at.dataframe[0].value
    assert list(table["op"]) == [r["op"] for r in rows] and "GB/s" in table
    assert "% of the floor's bandwidth" not in table
    timeline_chart, rates_chart = at.get("plotly_chart")
    assert '"type":"line"' not in rates_chart.proto.spec  # no floor line
    at = render(_show_tpu, 555.0, True)  # captured here: this machine's floor
    assert "555 GB/s" in at.caption[1].value and "another machine" not in at.caption[1].value
    assert "% of the floor's bandwidth" in at.dataframe[0].value
    assert '"type":"line"' in at.get("plotly_chart")[1].proto.spec


def test_a_trace_with_no_complete_call_says_so():
    tl = timeline.Timeline({}, None, 3, 0.0)
    at = render(_show, tl)
    assert "3 call(s)" in at.warning[0].value and not at.get("plotly_chart")


def _sections(call):
    from pmapviz.ui import timelines
    from pmapviz.ui.shell import device_report

    timelines.capture(call, device_report().facts)
    timelines.upload()


def test_capture_waits_for_its_button_and_upload_for_a_file():
    from pmapviz.ui.compiled_program import Call

    at = render(_sections, Call("psum", 2, 2, None, None))
    assert not at.exception
    assert [s.value for s in at.subheader] == ["One call, device by device",
                                               "A trace from any machine"]  # fmt: skip
    at.button(key="cp_trace").click().run(timeout=300)
    assert not at.exception and len(at.get("plotly_chart")) == 1
