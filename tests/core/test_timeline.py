"""A real profiler capture on 4 devices, and the trace reading on hand-made events."""

import gzip
import json
import os
import tempfile
import threading

import pytest

from pmapviz import timeline
from tests.fakes import FIXTURES


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
    assert list(tl.lanes) == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
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
    assert [(e.op, e.start_us, e.dur_us) for e in lanes["cpu:0"]] == [("psum.7", 0.0, 4)]
    assert lanes["cpu:1"][0].start_us == 1.0 and lanes["cpu:1"][0].collective == "all-reduce"


def test_read_trace_finds_the_gzipped_json():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "plugins", "profile", "x"))
        with gzip.open(os.path.join(d, "plugins", "profile", "x", "perfetto_trace.json.gz"),
                       "wt") as f:  # fmt: skip
            json.dump({"traceEvents": [_event(0, "a", 0, 1)]}, f)
        assert len(timeline.device_events(timeline.read_trace(d))) == 1
        with pytest.raises(timeline.TraceError, match="neither a file nor a folder"):
            timeline.read_trace(os.path.join(d, "plugins", "profile", "y"))
        os.makedirs(os.path.join(d, "empty"))
        with pytest.raises(timeline.TraceError, match="No perfetto_trace"):
            timeline.read_trace(os.path.join(d, "empty"))


def test_a_second_capture_waits_in_the_queue_then_says_the_profiler_is_busy():
    holder = timeline.TURNS.acquire(timeout=1)
    try:
        done = threading.Event()
        errors, places = [], []

        def other():
            try:
                timeline.capture(lambda: None, {}, timeout_s=0.6,
                                 on_wait=lambda pos, *_: places.append(pos))  # fmt: skip
            except timeline.ProfilerBusy as err:
                errors.append(str(err))
            done.set()

        threading.Thread(target=other).start()
        assert done.wait(10)
        assert errors and places and places[0] == 1  # it saw its place in the queue
    finally:
        holder.release()


# ---------------------------------------------------------------- traces from any machine
GPU_TRACE = FIXTURES / "pmap_psum_gpu.perfetto_trace.json.gz"


def test_the_real_h200_trace_gives_one_gpu_lane_with_the_last_call():
    """Captured on an H200: device events sit under the process named /device:GPU:0 and carry
    no device_ordinal (the old reader found nothing there); the two calls are told apart by
    their correlation ids, which lead to the host's Execute events and their run ids."""
    raw = timeline.read_trace(str(GPU_TRACE))
    events = timeline.device_events(raw)
    assert [(e.lane, e.op) for e in events] == [("gpu:0", "loop_multiply_fusion")] * 2
    assert len({e.run for e in events}) == 2 and "" not in {e.run for e in events}
    tl = timeline.from_trace(raw)
    assert list(tl.lanes) == ["gpu:0"] and tl.module == "jit__fun" and tl.calls_seen == 2
    (only,) = tl.lanes["gpu:0"]
    assert (only.start_us, only.dur_us, only.collective) == (0.0, 2.624, None)  # the 2nd call


def _meta(pid, name, tid=None):
    e = {"ph": "M", "pid": pid, "name": "thread_name" if tid else "process_name",
         "args": {"name": name}}  # fmt: skip
    return {**e, "tid": tid} if tid else e


def _x(pid, tid, name, ts, dur, **args):
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur, "args": args}


def test_tpu_planes_by_name_one_lane_each_and_sparsecore_left_out():
    """TPU planes are /device:TPU:N; their "XLA Ops" line names each op. Checked by the
    names JAX's profiler uses (no TPU trace is at hand); SparseCore planes share the prefix
    and are not device lanes."""
    events = [
        _meta(1, "/device:TPU:0"),
        _meta(2, "/device:TPU:1"),
        _meta(3, "/device:TPU:0 SparseCore 0"),
        _meta(9, "/host:CPU"),
        _meta(1, "XLA Ops", 5),
        _meta(2, "XLA Ops", 5),
        _meta(3, "XLA Ops", 5),
        _meta(1, "XLA Modules", 6),
        _x(9, 1, "Execute", 0, 50, run_id="7"),
        _x(9, 1, "Execute", 100, 50, run_id="8"),
    ]
    for pid in (1, 2):
        for t0 in (10, 110):
            events += [
                _x(pid, 5, "fusion.1", t0, 4),
                _x(pid, 5, "all-reduce.3", t0 + 5, 9),
                _x(pid, 6, "jit_step", t0, 20),
            ]  # the module line: not an op
    events.append(_x(3, 5, "sparse-op", 12, 1))
    tl = timeline.from_trace({"traceEvents": events})
    assert list(tl.lanes) == ["tpu:0", "tpu:1"] and tl.calls_seen == 2
    for lane in tl.lanes.values():
        assert [(e.op, e.start_us, e.collective) for e in lane] == [
            ("fusion.1", 0.0, None),
            ("all-reduce.3", 5.0, "all-reduce"),
        ]


def test_gpu_lanes_follow_correlation_ids_to_their_call():
    """Two GPUs, two calls; the second call's kernels on gpu:1 start late, after the host
    began a third Execute: the correlation id, not the time, puts them in call 2."""
    events = [_meta(1, "/device:GPU:0"), _meta(2, "/device:GPU:1"), _meta(9, "/host:CPU")]
    for run, t0 in (("r1", 0), ("r2", 100), ("r3", 200)):
        events.append(_x(9, 1, "Execute", t0, 30, run_id=run))
    for k, (t0, lag) in enumerate(((0, 0), (100, 150))):
        for pid in (1, 2):
            corr = f"{k}-{pid}"
            events.append(_x(9, 1, "launch", t0 + 5, 1, correlation_id=corr))
            events.append(_x(pid, 3, "k", t0 + 10 + (lag if pid == 2 else 0), 4,
                             hlo_op="all-reduce-start.2", hlo_module="jit_f",
                             correlation_id=corr))  # fmt: skip
    tl = timeline.from_trace(events)
    assert list(tl.lanes) == ["gpu:0", "gpu:1"] and tl.calls_seen == 2
    assert tl.lanes["gpu:1"][0].start_us == 150.0  # call 2: lagging on gpu:1, still call 2
    assert tl.lanes["gpu:0"][0].collective == "all-reduce"


def test_collective_kinds_by_name():
    assert timeline.collective_kind("all-reduce-start.12") == "all-reduce"
    assert timeline.collective_kind("collective-permute-done") == "collective-permute"
    assert timeline.collective_kind("all-gather") == "all-gather"
    assert timeline.collective_kind("fusion.3") is None
    assert timeline.collective_kind("all-reduce-fusion") is None
    assert timeline.collective_kind("psum.7") == "all-reduce"  # JAX names it after psum
    assert timeline.collective_kind("ppermute.2") == "collective-permute"


def test_bad_trace_files_are_refused_with_the_reason():
    with pytest.raises(timeline.TraceError, match="not trace JSON"):
        timeline.parse_trace(b"{not json", "t.json")
    with pytest.raises(timeline.TraceError, match="not a readable gzip"):
        timeline.parse_trace(b"\x1f\x8b garbage", "t.json.gz")
    bomb = gzip.compress(b" " * (2 * 2**20))  # 2 KB that inflate to 2 MiB
    with pytest.raises(timeline.TraceError, match="more than 1 MiB of JSON"):
        timeline.parse_trace(bomb, "bomb.json.gz", limit=2**20)
    with pytest.raises(timeline.TraceError, match="host events only"):
        timeline.from_trace({"traceEvents": [_x(9, 1, "python", 0, 5)]})


def test_cli_trace_prints_one_lane_per_device_for_cpu_and_gpu_traces(tmp_path, capsys):
    """python -m pmapviz trace on the H200 fixture and on a CPU trace captured here now."""
    import jax
    import numpy as np

    from pmapviz import cli

    assert cli.main(["trace", str(GPU_TRACE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["module"] == "jit__fun" and [la["device"] for la in out["lanes"]] == ["gpu:0"]
    assert set(out["lanes"][0]["events"][0]) == {"op", "start_us", "dur_us", "collective"}

    f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i", devices=jax.devices()[:4])
    x = np.arange(4.0, dtype=np.float32)
    jax.block_until_ready(f(x))
    with jax.profiler.trace(str(tmp_path), create_perfetto_trace=True):
        for _ in range(2):
            jax.block_until_ready(f(x))
    assert cli.main(["trace", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [la["device"] for la in out["lanes"]] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    for lane in out["lanes"]:
        assert [e["collective"] for e in lane["events"] if e["collective"]] == ["all-reduce"]
    assert cli.main(["trace", str(tmp_path)]) == 0
    assert "cpu:3:" in capsys.readouterr().out
    assert cli.main(["trace", str(tmp_path / "nothing")]) == 2
    assert "neither a file nor a folder" in capsys.readouterr().err
