"""Which trace events belong to which device, on real GPU and TPU traces."""

import gzip
import json

from pmapviz.core.xla import tracelanes
from tests.fakes import FIXTURES


def test_trace_planes_and_lanes_on_the_h200_trace():
    with gzip.open(FIXTURES / "pmap_psum_gpu.perfetto_trace.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    planes, threads = tracelanes.trace_planes(events)
    assert planes == {1: "gpu:0"} and threads[(1, 14)] == "Stream #14(Compute)"
    lanes = [tracelanes.event_lane(e, planes, threads) for e in events]
    assert [x for x in lanes if x] == [("gpu:0", "loop_multiply_fusion")] * 2
    cpu_event = {"ph": "X", "pid": 7, "args": {"device_ordinal": "3", "hlo_op": "psum.7"}}
    assert tracelanes.event_lane(cpu_event, {}, {}) == ("cpu:3", "psum.7")
    assert sorted(["cpu:10", "cpu:2", "gpu:0"], key=tracelanes.lane_order) == [
        "cpu:2",
        "cpu:10",
        "gpu:0",
    ]
