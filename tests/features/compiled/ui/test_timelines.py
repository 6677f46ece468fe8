"""Per-device timelines from real profiler traces: shown, or why not; captured or loaded."""

import gzip
import json

from pmapviz.core.xla import timeline, tracefiles
from tests.conftest import ROOT
from tests.core.ui.conftest import render

GPU_TRACE = (
    ROOT / "tests" / "core" / "fixtures" / "gpu-h200" / "pmap_psum_gpu.perfetto_trace.json.gz"
)
TPU_TRACE = (
    ROOT / "tests" / "core" / "fixtures" / "tpu-v5e" / "psum_and_matmul_tpu.perfetto_trace.json.gz"
)


def _show(tl):
    from pmapviz.features.compiled.ui import timelines

    timelines.show(tl, "t")


def test_a_trace_from_a_gpu_has_a_lane_per_device_and_a_chart():
    tl = timeline.from_trace(tracefiles.parse_trace(GPU_TRACE.read_bytes(), GPU_TRACE.name))
    at = render(_show, tl)
    assert f"{len(tl.lanes)} device lane(s)" in at.caption[0].value
    assert len(at.get("plotly_chart")) == 1


def _show_tpu(floor_gbs, here):
    from pmapviz.core.xla import timeline, tracefiles
    from pmapviz.features.compiled.ui import timelines
    from tests.features.compiled.ui.test_timelines import TPU_TRACE

    tl = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)))
    timelines.show(tl, "t", floor_gbs, here)


def test_a_tpu_trace_shows_each_ops_bandwidth_beside_the_floor_of_the_machine_it_ran_on():
    tl = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)))
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
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.compiled.ui import timelines

    timelines.capture(call, device_report().facts)
    timelines.upload()


def test_capture_waits_for_its_button_and_upload_for_a_file():
    from pmapviz.features.compiled.ui.compiled_program import Call

    at = render(_sections, Call("psum", 2, 2, None, None))
    assert not at.exception
    assert [s.value for s in at.subheader] == [
        "One call, device by device",
        "A trace from any machine",
    ]
    at.button(key="cp_trace").click().run(timeout=300)
    assert not at.exception and len(at.get("plotly_chart")) == 1


# ---------------------------------------------------------------- malformed, large, many lanes
def _read(data, name):
    from types import SimpleNamespace

    import streamlit as st

    from pmapviz.features.compiled.ui import timelines

    tl = timelines.read(SimpleNamespace(name=name, getvalue=lambda: data))
    if isinstance(tl, str):
        st.error(tl)
    elif tl is not None:
        st.write(f"read {len(tl.lanes)} lane(s)")


def test_a_malformed_upload_is_one_quoted_error_line_never_the_last_resort():
    from tests.core.xla.test_timeline import _cpu_trace

    bad = {
        "t.json": json.dumps(_cpu_trace(ts="abc")).encode(),
        "deep`[x](y).json": b"[" * 100_000 + b"]" * 100_000,
        "five.json": b'{"traceEvents": 5}',
    }
    said = {
        "t.json": "This trace was not read: `traceEvents[0].ts is 'abc', not a number.`",
        "deep`[x](y).json": "This trace was not read: `deep'[x](y).json nests its JSON too "
        "deep",  # the backtick in the file's name cannot close the quote
        "five.json": "This trace was not read: `The trace's traceEvents is 5, not a list "
        "of events.`",
    }
    for name, data in bad.items():
        at = render(_read, data, name)
        assert not at.exception and len(at.error) == 1, name
        assert at.error[0].value.startswith(said[name]), at.error[0].value


def test_an_upload_holds_what_parsing_takes_in_the_servers_memory_pool(monkeypatch):
    from pmapviz.core.budgets import memorypool

    text = GPU_TRACE.read_bytes()
    size = len(gzip.decompress(text))
    seen = []
    real = timeline.from_trace

    def spy(trace, module=None):
        seen.append([(label, amount) for label, amount, _ in memorypool.admission().held()])
        return real(trace, module)

    monkeypatch.setattr(timeline, "from_trace", spy)
    at = render(_read, text, GPU_TRACE.name)
    assert not at.exception and at.markdown[0].value == "read 1 lane(s)"
    (held,) = seen
    assert ("reading an uploaded trace", tracefiles.parse_bytes(size)) in [
        (label, amount[0]) for label, amount in held
    ]
    assert "reading an uploaded trace" not in [h[0] for h in memorypool.admission().held()]
    monkeypatch.setattr(tracefiles, "PARSE_FACTOR", 10**9)  # more than the budget: refused
    at = render(_read, text, GPU_TRACE.name)
    assert not at.exception and "This trace was not read: `Reading an uploaded trace needs" in (
        at.error[0].value
    )


def _many(table):
    from pmapviz.core.xla import timeline
    from pmapviz.features.compiled.ui import timelines
    from tests.core.xla.test_timeline import many_lanes

    timelines.show(timeline.from_trace(many_lanes()), "t", None, False, table)


def test_5000_lanes_draw_the_64_busiest_with_a_line_saying_so_and_a_table_of_every_lane():
    at = render(_many, True)
    assert not at.exception and "5,000 device lane(s)" in at.caption[0].value
    assert at.caption[1].value == (
        "5,000 lanes: showing the 64 busiest (most op time); the table below has every lane."
    )
    (chart,) = at.get("plotly_chart")
    assert len(json.loads(chart.proto.spec)["data"]) == 64
    assert len(at.dataframe[0].value) == 5_000


def _upload_page(data):
    from types import SimpleNamespace
    from unittest import mock

    import streamlit as st

    from pmapviz.features.compiled.ui import timelines

    file = SimpleNamespace(file_id="f1", name="bad.json", getvalue=lambda: data)
    reads = st.session_state.setdefault("reads", [])
    real = timelines.read

    def counted(f, on_wait=None):
        reads.append(f.file_id)
        return real(f, on_wait)

    with (
        mock.patch.object(st, "file_uploader", lambda *a, **k: file),
        mock.patch.object(timelines, "read", counted),
    ):
        timelines.upload()
    st.caption(f"reads: {len(reads)}")


def test_a_refused_upload_is_read_once_and_said_on_every_rerun():
    at = render(_upload_page, b'{"traceEvents": 5}')
    for _ in range(2):
        assert not at.exception and len(at.error) == 1
        assert at.error[0].value.startswith("This trace was not read")
        at = at.run()
    assert at.caption[-1].value == "reads: 1"
