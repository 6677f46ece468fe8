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


def test_a_capture_holds_its_collectives_memory_first_then_takes_the_profilers_turn(
        monkeypatch):  # fmt: skip
    """The Compiled page's trace reserves what the compiled collective holds (the same need
    as a run of it) from before its input exists until the trace is read, and waits for
    memory before it takes the profiler's turn (never holding the profiler while waiting)."""
    import contextlib

    from pmapviz import collectiveops, memory

    events, needs, waits = [], [], []
    real_capture, real_put = timeline.capture, timeline.col.make_input

    @contextlib.contextmanager
    def held():
        events.append("memory held")
        yield
        events.append("memory released")

    def reserve(need, label, on_wait=None, *args, **kwargs):
        assert timeline.TURNS.held_for() is None  # no profiler turn held while it waits
        needs.append(need)
        waits.append(on_wait)
        return held()

    def capture(*args, **kwargs):
        events.append("capture")
        return real_capture(*args, **kwargs)

    def make_input(*args, **kwargs):
        events.append("input")
        return real_put(*args, **kwargs)

    monkeypatch.setattr(memory, "reserve", reserve)
    monkeypatch.setattr(timeline, "capture", capture)
    monkeypatch.setattr(timeline.col, "make_input", make_input)
    on_wait = lambda *a: None  # noqa: E731
    tl, rows = timeline.collective_timeline("all_gather", 4, 256, on_wait=on_wait)
    assert events == ["memory held", "input", "capture", "memory released"]
    assert waits == [on_wait] and rows and len(tl.lanes) == 4
    fn = collectiveops.compile_collective("all_gather", 4, None, ())
    (need,) = needs
    assert need == collectiveops.run_need(collectiveops.compiled_for(fn, 4, 256), 4, 256)
    assert need.device >= 4 * (4 * 256 + 4 * 4 * 256)  # each device: its block, 4 blocks out


def test_a_capture_whose_wait_for_memory_ends_says_so(monkeypatch):
    from pmapviz import memory, queues

    def reserve(need, label, on_wait=None, *args, **kwargs):
        raise queues.WaitTimeout("Waited 120 s for memory: other actions hold it.", 1, 120.0)

    monkeypatch.setattr(memory, "reserve", reserve)
    with pytest.raises(timeline.ProfilerBusy, match="Waited 120 s for memory"):
        timeline.collective_timeline("psum", 4, 16)


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

    from pmapviz.app import cli

    assert cli.main(["trace", str(GPU_TRACE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["module"] == "jit__fun" and [la["device"] for la in out["lanes"]] == ["gpu:0"]
    (event,) = out["lanes"][0]["events"]
    assert set(event) == {"op", "start_us", "dur_us", "collective", "bytes_accessed",
                          "model_flops", "category"}  # fmt: skip
    assert event["bytes_accessed"] is event["model_flops"] is event["category"] is None

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


# ---------------------------------------------------------------- a real TPU v5e trace
TPU_TRACE = FIXTURES.parent / "tpu-v5e" / "psum_and_matmul_tpu.perfetto_trace.json.gz"


def _tpu_fixture() -> dict:
    """Read straight from the fixture's JSON, without pmapviz: the TPU plane's module events
    (one per call) and, for each call, the op events that lie inside it in time."""
    with gzip.open(TPU_TRACE, "rt") as f:
        events = json.load(f)["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    (pid,) = [e["pid"] for e in meta if e["args"].get("name") == "/device:TPU:0"]
    tid = {e["args"]["name"]: e["tid"] for e in meta
           if e["pid"] == pid and e["name"] == "thread_name"}  # fmt: skip

    def on(line: str) -> list[dict]:
        return sorted((e for e in events if e.get("ph") == "X" and e["pid"] == pid
                       and e["tid"] == tid[line]), key=lambda e: e["ts"])  # fmt: skip

    modules, ops = on("XLA Modules"), on("XLA Ops")
    inside = {m["args"]["run_id"]: [o for o in ops if m["ts"] - 1e-3 <= o["ts"]
                                    <= m["ts"] + m["dur"]] for m in modules}  # fmt: skip
    return {"modules": modules, "ops": ops, "inside": inside}


def test_the_real_tpu_v5e_trace_names_each_call_after_its_module():
    """Captured on a TPU v5e: op events carry neither module nor run_id; each lies inside
    one event of the plane's "XLA Modules" line, which names the module and the call. Two
    calls of a pmapped psum, then two of a jitted matmul: the last call is the matmul's."""
    fx = _tpu_fixture()
    last = fx["modules"][-1]
    tl = timeline.from_trace(timeline.read_trace(str(TPU_TRACE)))
    assert list(tl.lanes) == ["tpu:0"]
    assert tl.module == last["name"] and tl.module.startswith("jit__lambda(")
    assert tl.calls_seen == len({m["args"]["run_id"] for m in fx["modules"]}) == 4
    want = fx["inside"][last["args"]["run_id"]]
    got = tl.lanes["tpu:0"]
    assert [e.op for e in got] == [o["name"] for o in want] and len(got) == 9
    for e, o in zip(got, want, strict=True):
        assert e.dur_us == o["dur"] and e.start_us == pytest.approx(o["ts"] - want[0]["ts"])
        assert e.bytes_accessed == int(o["args"]["bytes_accessed"])
        assert e.model_flops == int(o["args"]["model_flops"])
        assert e.category == o["args"]["hlo_category"]
    # every op is told its call: the run_id of the module event around it
    runs = {
        (e.op, e.ts): e.run for e in timeline.device_events(timeline.read_trace(str(TPU_TRACE)))
    }
    assert len(runs) == len(fx["ops"]) == sum(len(v) for v in fx["inside"].values())
    for run, ops in fx["inside"].items():
        assert {runs[(o["name"], o["ts"])] for o in ops} == {run}
    # the module filter: the psum's last call, one op
    first = fx["modules"][0]["name"]
    psum = timeline.from_trace(timeline.read_trace(str(TPU_TRACE)), module=first)
    assert psum.module == first and first.startswith("jit__fun(")
    assert psum.calls_seen == sum(m["name"] == first for m in fx["modules"]) == 2
    assert [e.op for e in psum.lanes["tpu:0"]] == ["sine_multiply_fusion"]


def test_the_tpu_roofline_is_the_traces_bytes_and_flops_over_each_ops_duration():
    fx = _tpu_fixture()
    raw = timeline.read_trace(str(TPU_TRACE))
    floor, peak = 555.0, 197e12
    rows = timeline.op_rates(timeline.from_trace(raw), floor, peak)
    want = fx["inside"][fx["modules"][-1]["args"]["run_id"]]
    assert [r["op"] for r in rows] == [o["name"] for o in want]
    for r, o in zip(rows, want, strict=True):
        nbytes, flops, dur = (
            int(o["args"]["bytes_accessed"]),
            int(o["args"]["model_flops"]),
            o["dur"],
        )
        assert (r["bytes"], r["FLOPs"], r["duration (us)"]) == (nbytes, flops, dur)
        if o["name"].endswith(("-start", "-done")):  # an async half: its copy overlaps others
            assert r["GB/s"] is r["TFLOP/s"] is r["% of the floor's bandwidth"] is None
            continue
        assert r["GB/s"] == pytest.approx(nbytes / (dur * 1e-6) / 1e9)
        assert r["TFLOP/s"] == pytest.approx(flops / (dur * 1e-6) / 1e12)
        assert r["% of the floor's bandwidth"] == pytest.approx(100 * r["GB/s"] / floor)
        assert r["% of the FLOP rate"] == pytest.approx(100 * flops / (dur * 1e-6) / peak)
    best = max((r for r in rows if r["GB/s"]), key=lambda r: r["GB/s"])
    matmul = max(want, key=lambda o: int(o["args"]["model_flops"]))
    assert best["op"] == matmul["name"] == "fusion" and best["category"] == "convolution fusion"
    assert 350 < best["GB/s"] < 365 and 180 < best["TFLOP/s"] < 188  # a band: what v5e did
    (psum,) = timeline.op_rates(timeline.from_trace(raw, module=fx["modules"][0]["name"]))
    (op,) = fx["inside"][fx["modules"][1]["args"]["run_id"]]
    assert psum["GB/s"] == pytest.approx(int(op["args"]["bytes_accessed"]) / op["dur"] / 1e3)
    assert 39 < psum["GB/s"] < 41 and "% of the floor's bandwidth" not in psum  # no floor given
    assert timeline.op_rates(timeline.from_trace(timeline.read_trace(str(GPU_TRACE)))) == []


def _tpu_ops(values: list) -> list[dict]:
    """A one-chip TPU trace: one call, one op per value of bytes_accessed (and model_flops)."""
    events = [_meta(1, "/device:TPU:0"), _meta(1, "XLA Modules", 2), _meta(1, "XLA Ops", 3),
              _x(1, 2, "jit_f(1)", 0, 100 + len(values), run_id="5")]  # fmt: skip
    for k, v in enumerate(values):
        events.append(_x(1, 3, f"op.{k}", 1 + k, 1, bytes_accessed=v, model_flops=v,
                         hlo_category=v))  # fmt: skip
    return events


def test_counts_that_are_not_plain_non_negative_integers_become_none():
    bad = ["abc", -5, "-5", "9" * 5000, None, [1], {"n": 1}, True, 1.5, "1e3", " 12", "12\n",
           "0x10", "²", float("nan"), float("inf"), 10**30, ""]  # fmt: skip
    good = ["8388608", 8388608, 8.0, 0]
    tl = timeline.from_trace({"traceEvents": _tpu_ops(bad + good)})
    assert tl.module == "jit_f(1)" and tl.calls_seen == 1
    events = tl.lanes["tpu:0"]
    assert [e.bytes_accessed for e in events] == [None] * len(bad) + [8388608, 8388608, 8, 0]
    assert [e.model_flops for e in events] == [e.bytes_accessed for e in events]
    values = bad + good  # hlo_category got the same values: text is kept (80 characters at most)
    pairs = zip(values, events, strict=True)
    assert all(e.category is None for v, e in pairs if not isinstance(v, str) or not v)
    assert [events[0].category, len(events[3].category)] == ["abc", 80]
    json.dumps(tl.to_json())  # every value is plain JSON
    assert len(timeline.summary_lines(tl)) == 2 + len(bad + good)
    rated = [f"op.{k}" for k in range(len(bad), len(values))]  # the ops with a count
    assert [r["op"] for r in timeline.op_rates(tl)] == rated


def test_tpu_lanes_across_chips_keep_the_last_call_that_reached_every_chip():
    """A pmapped step on two chips (one run_id for both, as one launch), then a jitted
    function on tpu:0 only: the jit ran last, but the call shown is the step's, one module."""
    events = [_meta(p, n) for p, n in ((1, "/device:TPU:0"), (2, "/device:TPU:1"))]
    for pid in (1, 2):
        events += [_meta(pid, "XLA Modules", 2), _meta(pid, "XLA Ops", 3)]
        for run, t0 in (("7", 0), ("8", 100)):
            events += [_x(pid, 2, "pmap_step(9)", t0, 20, run_id=run),
                       _x(pid, 3, "fusion", t0 + 1, 5, bytes_accessed="4000"),
                       _x(pid, 3, "all-reduce.1", t0 + 7, 9, bytes_accessed="64")]  # fmt: skip
    events += [_x(1, 2, "jit_g(3)", 200, 10, run_id="9"), _x(1, 3, "add", 201, 2)]
    tl = timeline.from_trace(events)
    assert list(tl.lanes) == ["tpu:0", "tpu:1"] and tl.module == "pmap_step(9)"
    assert tl.calls_seen == 3
    for lane in tl.lanes.values():
        assert [(e.op, e.start_us, e.bytes_accessed) for e in lane] == [
            ("fusion", 0.0, 4000),
            ("all-reduce.1", 6.0, 64),
        ]
        assert lane[1].collective == "all-reduce"
    assert [r["GB/s"] for r in timeline.op_rates(tl)] == pytest.approx([4000 / 5e3, 64 / 9e3] * 2)
    only_g = timeline.from_trace(events, module="jit_g(3)")
    assert list(only_g.lanes) == ["tpu:0"] and [e.op for e in only_g.lanes["tpu:0"]] == ["add"]


def test_cli_trace_of_the_tpu_fixture_prints_the_module_and_each_ops_bytes(capsys):
    from pmapviz.app import cli

    fx = _tpu_fixture()
    last = fx["modules"][-1]
    assert cli.main(["trace", str(TPU_TRACE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["module"] == last["name"] and out["calls_seen"] == len(fx["modules"])
    (lane,) = out["lanes"]
    want = fx["inside"][last["args"]["run_id"]]
    got = [(e["op"], e["bytes_accessed"], e["model_flops"], e["category"])
           for e in lane["events"]]  # fmt: skip
    assert got == [(o["name"], int(o["args"]["bytes_accessed"]), int(o["args"]["model_flops"]),
                    o["args"]["hlo_category"]) for o in want]  # fmt: skip
    assert cli.main(["trace", str(TPU_TRACE)]) == 0
    text = capsys.readouterr().out
    (fusion,) = [line for line in text.splitlines() if " us  fusion  " in line]
    matmul = max(want, key=lambda o: int(o["args"]["model_flops"]))
    gbs = int(matmul["args"]["bytes_accessed"]) / matmul["dur"] / 1e3
    assert f"{int(matmul['args']['bytes_accessed']):,} B" in fusion and f"{gbs:,.1f} GB/s" in fusion
    first = fx["modules"][0]["name"]  # the psum's module: its last call instead
    assert cli.main(["trace", str(TPU_TRACE), "--module", first, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["module"] == first and out["calls_seen"] == sum(
        m["name"] == first for m in fx["modules"]
    )
    assert cli.main(["trace", str(TPU_TRACE), "--module", "jit_nope"]) == 2
    assert first in capsys.readouterr().err  # the modules it has


# ---------------------------------------------------------------- malformed traces (issue 36)
def _cpu_trace(**change) -> list[dict]:
    """Two calls on two CPU devices; ``change``: event 0's keys (``args__key`` for its args)."""
    events = [_event(d, "psum.7", 10 * r + d, 2, str(r)) for r in (1, 2) for d in (0, 1)]
    for key, value in change.items():
        where, key = (events[0]["args"], key[6:]) if key.startswith("args__") else (events[0], key)
        where[key] = value
    return events


@pytest.mark.parametrize(("trace", "line"), [
    ({"traceEvents": 5}, "The trace's traceEvents is 5, not a list of events."),
    ({"traceEvents": {"a": 1}}, "The trace's traceEvents is an object, not a list of events."),
    ({"displayTimeUnit": "ns"}, "The JSON has no traceEvents"),
    (_cpu_trace(ts="abc"), "traceEvents[0].ts is 'abc', not a number."),
    (_cpu_trace(dur=float("inf")), "traceEvents[0].dur is inf, not a number."),
    (_cpu_trace(ts=10**400), "traceEvents[0].ts is a 401-digit number, not a number."),
    (_cpu_trace(ts=[1]), "traceEvents[0].ts is a list, not a number."),
    (_cpu_trace(ts=True), "traceEvents[0].ts is true, not a number."),
    (_cpu_trace(pid={}), "traceEvents[0].pid is an object, not a number."),
    (_cpu_trace(tid=[]), "traceEvents[0].tid is a list, not a number."),
    (_cpu_trace(name={"x": 1}), "traceEvents[0].name is an object, not a name."),
    (_cpu_trace(args__device_ordinal="9" * 5000),
     "traceEvents[0].args.device_ordinal is '" + "9" * 40 + "...', not a device number."),
    (_cpu_trace(args__device_ordinal=10**4000),
     "traceEvents[0].args.device_ordinal is a 4,001-digit number, not a device number."),
    (_cpu_trace(args__device_ordinal=-1),
     "traceEvents[0].args.device_ordinal is -1, not a device number."),
    (_cpu_trace(args__hlo_op=[[[]]]), "traceEvents[0].args.hlo_op is a list, not a name."),
    (_cpu_trace(args__run_id=float("nan")), "traceEvents[0].args.run_id is nan, not a name."),
])  # fmt: skip
def test_a_malformed_trace_is_one_line_saying_what_is_wrong_and_where(trace, line):
    with pytest.raises(timeline.TraceError) as err:
        timeline.from_trace(trace)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_what_is_not_an_event_or_holds_no_args_is_skipped():
    """Not an object: no event. Args that are not an object (null, a list, text): no device
    ordinal and no op, so not a device op; the rest of the trace reads as before."""
    for bad in (None, [1, 2], "args", 5):
        tl = timeline.from_trace([*_cpu_trace(args=bad), 7, "x", None, [1]])
        assert [len(evs) for evs in tl.lanes.values()] == [1, 1] and tl.calls_seen == 2
    events = _cpu_trace()
    events[0]["args"] = {"device_ordinal": None, "hlo_op": None}  # null: as if absent
    assert timeline.from_trace(events).calls_seen == 2


def test_json_nested_too_deep_or_a_bad_gzip_is_one_line():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(timeline.TraceError, match="nests its JSON too deep"):
        timeline.parse_trace(deep, "deep.json")
    with pytest.raises(timeline.TraceError, match="nests its JSON too deep"):
        timeline.parse_trace(gzip.compress(b'{"traceEvents": ' + deep + b"}"), "deep.json.gz")
    broken = bytearray(gzip.compress(json.dumps(_cpu_trace()).encode()))
    broken[20:40] = b"\xff" * 20  # a corrupt deflate stream: zlib.error, not OSError
    with pytest.raises(timeline.TraceError, match="not a readable gzip"):
        timeline.parse_trace(bytes(broken), "t.json.gz")
    with pytest.raises(timeline.TraceError, match="not trace JSON"):
        timeline.parse_trace(b'{"traceEvents": [' + b"9" * 5000 + b"]}", "long.json")


# ---------------------------------------------------------------- finding a trace, bounded
def _touch(path, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": _cpu_trace()}).encode()))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_find_trace_takes_the_newest_perfetto_trace_else_a_trace_json(tmp_path):
    _touch(tmp_path / "p" / "profile" / "a" / "host.trace.json.gz", 3000)
    assert timeline.find_trace(str(tmp_path)).endswith("host.trace.json.gz")
    _touch(tmp_path / "p" / "profile" / "a" / "perfetto_trace.json.gz", 1000)
    newest = _touch(tmp_path / "p" / "profile" / "b" / "perfetto_trace.json.gz", 2000)
    assert timeline.find_trace(str(tmp_path)) == str(newest)


def test_find_trace_looks_at_most_so_deep_so_many_entries_and_so_long(tmp_path):
    deep = tmp_path / "deep"
    _touch(deep / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "perfetto_trace.json.gz")
    with pytest.raises(timeline.TraceError) as err:
        timeline.find_trace(str(deep))
    assert str(err.value) == (
        f"Looked at 6 entries in 6 level(s) under {str(deep)!r} (it looks 6 levels down at "
        "most) and found no perfetto_trace.json.gz or *.trace.json.gz; give the file or the "
        "folder jax.profiler.trace wrote."
    )
    assert timeline.find_trace(str(deep), depth=8).endswith("perfetto_trace.json.gz")
    wide = tmp_path / "wide"
    _touch(wide / "b" / "perfetto_trace.json.gz")
    for k in range(60):
        (wide / f"f{k}").touch()
    with pytest.raises(timeline.TraceError, match=r"Looked at 50 entries in 1 level\(s\) .*"
                       r"\(the most it looks at\)"):  # fmt: skip
        timeline.find_trace(str(wide), entries=50)
    assert timeline.find_trace(str(wide), entries=70).endswith("perfetto_trace.json.gz")
    with pytest.raises(timeline.TraceError, match=r"\(it looks for 0 s at most\)"):
        timeline.find_trace(str(wide), seconds=0)


def test_find_trace_never_follows_a_symlinked_folder(tmp_path):
    """A link back up (a loop) and a link to a folder holding a trace: neither is entered."""
    outside = tmp_path / "outside"
    _touch(outside / "perfetto_trace.json.gz")
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "loop").symlink_to(root, target_is_directory=True)
    (root / "there").symlink_to(outside, target_is_directory=True)
    with pytest.raises(timeline.TraceError) as err:
        timeline.find_trace(str(root))
    assert str(err.value).startswith("No perfetto_trace.json.gz or *.trace.json.gz under")
    assert "(3 entries in 2 level(s))" in str(err.value)


# ---------------------------------------------------------------- within the memory budget
def test_a_file_or_gzip_over_the_limit_is_refused_naming_it_before_parsing(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 * 2**20))
    with pytest.raises(timeline.TraceError, match="larger than 1 MiB, the most read here"):
        timeline.read_trace(str(big), limit=2**20)
    held = []
    bomb = gzip.compress(b" " * (3 * 2**20))
    with pytest.raises(timeline.TraceError, match="more than 2 MiB of JSON, the most read"):
        timeline.load(bomb, "bomb.json.gz", 2 * 2**20, hold=held.append)
    assert held == []  # refused before any reservation


def test_load_holds_what_parsing_takes_and_releases_it_once_read():
    from contextlib import contextmanager

    text = json.dumps({"traceEvents": _cpu_trace()}).encode()
    log = []

    @contextmanager
    def hold(nbytes):
        log.append(("hold", nbytes))
        try:
            yield
        finally:
            log.append(("release", nbytes))

    tl = timeline.load(gzip.compress(text), "t.json.gz", 2**20, hold=hold)
    assert list(tl.lanes) == ["cpu:0", "cpu:1"]
    n = timeline.PARSE_FACTOR * len(text)
    assert log == [("hold", n), ("release", n)] and timeline.parse_bytes(len(text)) == n
    log.clear()
    with pytest.raises(timeline.TraceError, match="ts is 'abc'"):
        timeline.load(json.dumps(_cpu_trace(ts="abc")).encode(), "t.json", 2**20, hold=hold)
    assert [what for what, _ in log] == ["hold", "release"]  # released on a refusal too
    assert timeline.trace_limit(100 * 2**20) == 100 * 2**20 // timeline.PARSE_FACTOR


def test_parse_factor_covers_the_measured_peak_of_reading_a_real_trace():
    """tracemalloc's peak over load(): the JSON, json.loads' objects, the events read."""
    import tracemalloc

    with gzip.open(TPU_TRACE, "rt") as f:
        trace = json.load(f)
    trace["traceEvents"] = trace["traceEvents"] * 20  # past the fixed 1 MiB inflate buffer
    text = json.dumps(trace).encode()
    data = gzip.compress(text, 1)
    del trace
    tracemalloc.start()
    try:
        timeline.load(data, "tpu.json.gz", 2**30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 3 < peak / len(text) < timeline.PARSE_FACTOR


def test_parse_factor_covers_a_trace_of_nothing_but_device_ops():
    """The worst real shape: every event a device op, all kept (the hostile-load benchmark's
    100 MiB trace took 10.7x its JSON)."""
    import tracemalloc

    events = [{"ph": "M", "pid": 3 + d, "name": "process_name",
               "args": {"name": f"/device:TPU:{d}"}} for d in range(4)]  # fmt: skip
    events += [{"ph": "M", "pid": 3 + d, "tid": 3, "name": "thread_name",
                "args": {"name": "XLA Ops"}} for d in range(4)]  # fmt: skip
    for call in range(60):
        for d in range(4):
            events += [{"ph": "X", "pid": 3 + d, "tid": 3, "ts": call * 1000 + k * 2.01,
                        "dur": 1.5, "name": f"fusion.{k % 40}",
                        "args": {"bytes_accessed": str(2 ** (10 + k % 8)),
                                 "model_flops": str(k % 100)}} for k in range(200)]  # fmt: skip
    text = json.dumps({"traceEvents": events}, separators=(",", ":")).encode()
    data = gzip.compress(text, 1)
    del events
    tracemalloc.start()
    try:
        tl = timeline.load(data, "ops.json.gz", 2**30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(tl.lanes) == 4
    assert 5 < peak / len(text) < timeline.PARSE_FACTOR, peak / len(text)


# ---------------------------------------------------------------- 5,000 lanes
def many_lanes(lanes: int = 5_000, ops: int = 3, long_lane_ops: int = 0) -> list[dict]:
    """A CPU trace of two calls on ``lanes`` devices, ``ops`` ops each (cpu:N busier as N
    grows), and lane 0 with ``long_lane_ops`` more ops in each call."""
    events = []
    for run in ("1", "2"):
        for d in range(lanes):
            for k in range(ops + (long_lane_ops if d == 0 else 0)):
                dur = 1 + d / lanes + (k * 1e-4 if d == 0 else 0)  # lane 0: later is longer
                events.append(_event(d, f"fusion.{k}", 10_000 * int(run) + k, dur, run))
    return events


def test_drawing_keeps_the_64_busiest_lanes_and_each_ones_longest_ops():
    tl = timeline.from_trace(many_lanes(long_lane_ops=5_000))
    assert len(tl.lanes) == 5_000 and len(tl.lanes["cpu:0"]) == 5_003
    shown, cut = timeline.drawn(tl)
    assert list(shown.lanes) == ["cpu:0"] + [f"cpu:{d}" for d in range(4_937, 5_000)]
    assert cut.startswith("5,000 lanes: showing the 64 busiest (most op time)")
    assert sum(len(evs) for evs in shown.lanes.values()) <= timeline.MAX_DRAWN_EVENTS
    small, cut = timeline.drawn(timeline.from_trace(many_lanes(4, long_lane_ops=3_000)))
    lane0 = small.lanes["cpu:0"]
    assert len(lane0) == timeline.MAX_LANE_EVENTS and cut == (
        "1 lane(s) with more than 2,000 ops: showing their 2,000 longest"
    )
    assert [e.op for e in lane0] == [f"fusion.{k}" for k in range(1_003, 3_003)]  # the longest
    assert [e.start_us for e in lane0] == sorted(e.start_us for e in lane0)  # in time order
    assert timeline.drawn(timeline.from_trace(_cpu_trace()))[1] == ""
