"""A real profiler capture on 4 devices, and the trace reading on hand-made events."""

import gzip
import json
import os
import tempfile
import threading

import pytest

from pmapviz import timeline


def test_one_real_capture_has_a_lane_per_device_with_the_collective_on_each():
    made = []
    real = tempfile.TemporaryDirectory

    def spy(*a, **k):
        made.append(real(*a, **k))
        return made[-1]

    tl, rows = None, None
    import unittest.mock as mock

    with mock.patch.object(timeline.tempfile, "TemporaryDirectory", spy):
        tl, rows = timeline.collective_timeline("psum", 4, 256, bandwidth_gbs=10.0)
    assert sorted(tl.lanes) == [0, 1, 2, 3]
    (row,) = rows
    for lane in tl.lanes.values():
        assert [e.op for e in lane if e.collective == "all-reduce"] == [row.op]
    assert len(row.per_device_us) == 4 and row.measured_us > 0
    assert row.model_bytes == pytest.approx(2 * 3 / 4 * 1024) and row.model_us > 0
    assert tl.capture_s < 2.0
    assert made and not os.path.exists(made[0].name)  # the trace folder is gone


def _event(dev, op, ts, dur, run="1", module="jit_f"):
    return {"ph": "X", "pid": 1, "tid": 7, "ts": ts, "dur": dur, "name": op,
            "args": {"device_ordinal": str(dev), "hlo_op": op, "hlo_module": module,
                     "run_id": run}}  # fmt: skip


def test_lanes_keep_the_last_complete_call_and_mark_collectives():
    events = [_event(0, "fusion", 10, 5, "1"), _event(1, "psum.7", 12, 3, "1"),
              _event(0, "psum.7", 100, 4, "2"), _event(1, "psum.7", 101, 6, "2"),
              _event(0, "psum.7", 200, 4, "3"),  # a call seen on device 0 only
              {"ph": "X", "ts": 1, "dur": 1, "name": "end: psum.7", "args": {}},
              {"ph": "M", "name": "thread_name", "args": {"name": "python"}}]  # fmt: skip
    lanes, module, seen = timeline.lanes_of(
        timeline.device_events(events), {"psum.7": "all-reduce"}
    )
    assert module == "jit_f" and seen == 3
    assert [(e.op, e.start_us, e.dur_us) for e in lanes[0]] == [("psum.7", 0.0, 4)]
    assert lanes[1][0].start_us == 1.0 and lanes[1][0].collective == "all-reduce"


def test_read_trace_finds_the_gzipped_json():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "plugins", "profile", "x"))
        with gzip.open(os.path.join(d, "plugins", "profile", "x", "perfetto_trace.json.gz"),
                       "wt") as f:  # fmt: skip
            json.dump({"traceEvents": [_event(0, "a", 0, 1)]}, f)
        assert len(timeline.device_events(timeline.read_trace(d))) == 1
        with pytest.raises(RuntimeError, match="no perfetto"):
            timeline.read_trace(os.path.join(d, "plugins", "profile", "y"))


def test_a_second_capture_waits_in_the_queue_then_says_the_profiler_is_busy():
    holder = timeline.TURNS.acquire(timeout=1)
    try:
        done = threading.Event()
        errors, places = [], []

        def other():
            try:
                timeline.capture(lambda: None, {}, timeout_s=0.6,
                                 on_wait=lambda pos, waited: places.append(pos))  # fmt: skip
            except timeline.ProfilerBusy as err:
                errors.append(str(err))
            done.set()

        threading.Thread(target=other).start()
        assert done.wait(10)
        assert errors and places and places[0] == 1  # it saw its place in the queue
    finally:
        holder.release()
