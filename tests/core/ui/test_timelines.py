"""Per-device timelines from real profiler traces: shown, or why not; captured or loaded."""

from pmapviz import timeline
from tests.conftest import ROOT
from tests.core.ui.conftest import render

GPU_TRACE = (
    ROOT / "tests" / "core" / "fixtures" / "gpu-h200" / "pmap_psum_gpu.perfetto_trace.json.gz"
)


def _show(tl):
    from pmapviz.ui import timelines

    timelines.show(tl, "t")


def test_a_trace_from_a_gpu_has_a_lane_per_device_and_a_chart():
    tl = timeline.from_trace(timeline.parse_trace(GPU_TRACE.read_bytes(), GPU_TRACE.name))
    at = render(_show, tl)
    assert f"{len(tl.lanes)} device lane(s)" in at.caption[0].value
    assert len(at.get("plotly_chart")) == 1


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
