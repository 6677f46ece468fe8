"""Timelines read from hand-made and real traces: the last complete call on every lane,
collectives by name, the roofline of a TPU trace, the CLI, and what a figure draws."""

import gzip
import json

import pytest

from pmapviz.core.xla import timeline, traceevents, tracefiles
from tests.fakes import FIXTURES


def _event(dev, op, ts, dur, run="1", module="jit_f"):
    return {
        "ph": "X",
        "pid": 1,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "name": op,
        "args": {"device_ordinal": str(dev), "hlo_op": op, "hlo_module": module, "run_id": run},
    }


def test_lanes_keep_the_last_complete_call_and_mark_collectives():
    events = [
        _event(0, "fusion", 10, 5, "1"),
        _event(1, "psum.7", 12, 3, "1"),
        _event(0, "psum.7", 100, 4, "2"),
        _event(1, "psum.7", 101, 6, "2"),
        _event(0, "psum.7", 200, 4, "3"),  # a call seen on device 0 only
        {"ph": "X", "ts": 1, "dur": 1, "name": "end: psum.7", "args": {}},
        {"ph": "M", "name": "thread_name", "args": {"name": "python"}},
    ]
    lanes, module, seen = timeline.lanes_of(
        traceevents.device_events(events), {"psum.7": "all-reduce"}
    )
    assert module == "jit_f" and seen == 3
    assert [(e.op, e.start_us, e.dur_us) for e in lanes["cpu:0"]] == [("psum.7", 0.0, 4)]
    assert lanes["cpu:1"][0].start_us == 1.0 and lanes["cpu:1"][0].collective == "all-reduce"


# ---------------------------------------------------------------- traces from any machine
GPU_TRACE = FIXTURES / "pmap_psum_gpu.perfetto_trace.json.gz"


def _meta(pid, name, tid=None):
    e = {
        "ph": "M",
        "pid": pid,
        "name": "thread_name" if tid else "process_name",
        "args": {"name": name},
    }
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


def test_collective_kinds_by_name():
    assert timeline.collective_kind("all-reduce-start.12") == "all-reduce"
    assert timeline.collective_kind("collective-permute-done") == "collective-permute"
    assert timeline.collective_kind("all-gather") == "all-gather"
    assert timeline.collective_kind("fusion.3") is None
    assert timeline.collective_kind("all-reduce-fusion") is None
    assert timeline.collective_kind("psum.7") == "all-reduce"  # JAX names it after psum
    assert timeline.collective_kind("ppermute.2") == "collective-permute"


def test_cli_trace_prints_one_lane_per_device_for_cpu_and_gpu_traces(tmp_path, capsys):
    """python -m pmapviz trace on the H200 fixture and on a CPU trace captured here now."""
    import jax
    import numpy as np

    from pmapviz.app import cli

    assert cli.main(["trace", str(GPU_TRACE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["module"] == "jit__fun" and [la["device"] for la in out["lanes"]] == ["gpu:0"]
    (event,) = out["lanes"][0]["events"]
    assert set(event) == {
        "op",
        "start_us",
        "dur_us",
        "collective",
        "bytes_accessed",
        "model_flops",
        "category",
    }
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
    tid = {
        e["args"]["name"]: e["tid"] for e in meta if e["pid"] == pid and e["name"] == "thread_name"
    }

    def on(line: str) -> list[dict]:
        return sorted(
            (e for e in events if e.get("ph") == "X" and e["pid"] == pid and e["tid"] == tid[line]),
            key=lambda e: e["ts"],
        )

    modules, ops = on("XLA Modules"), on("XLA Ops")
    inside = {
        m["args"]["run_id"]: [o for o in ops if m["ts"] - 1e-3 <= o["ts"] <= m["ts"] + m["dur"]]
        for m in modules
    }
    return {"modules": modules, "ops": ops, "inside": inside}


def test_the_tpu_roofline_is_the_traces_bytes_and_flops_over_each_ops_duration():
    fx = _tpu_fixture()
    raw = tracefiles.read_trace(str(TPU_TRACE))
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
    assert timeline.op_rates(timeline.from_trace(tracefiles.read_trace(str(GPU_TRACE)))) == []


def test_tpu_lanes_across_chips_keep_the_last_call_that_reached_every_chip():
    """A pmapped step on two chips (one run_id for both, as one launch), then a jitted
    function on tpu:0 only: the jit ran last, but the call shown is the step's, one module."""
    events = [_meta(p, n) for p, n in ((1, "/device:TPU:0"), (2, "/device:TPU:1"))]
    for pid in (1, 2):
        events += [_meta(pid, "XLA Modules", 2), _meta(pid, "XLA Ops", 3)]
        for run, t0 in (("7", 0), ("8", 100)):
            events += [
                _x(pid, 2, "pmap_step(9)", t0, 20, run_id=run),
                _x(pid, 3, "fusion", t0 + 1, 5, bytes_accessed="4000"),
                _x(pid, 3, "all-reduce.1", t0 + 7, 9, bytes_accessed="64"),
            ]
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
    got = [(e["op"], e["bytes_accessed"], e["model_flops"], e["category"]) for e in lane["events"]]
    assert got == [
        (
            o["name"],
            int(o["args"]["bytes_accessed"]),
            int(o["args"]["model_flops"]),
            o["args"]["hlo_category"],
        )
        for o in want
    ]
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


# ---------------------------------------------------------------- a trace's bytes, loaded
def _cpu_trace(**change) -> list[dict]:
    """Two calls on two CPU devices; ``change``: event 0's keys (``args__key`` for its args)."""
    events = [_event(d, "psum.7", 10 * r + d, 2, str(r)) for r in (1, 2) for d in (0, 1)]
    for key, value in change.items():
        where, key = (events[0]["args"], key[6:]) if key.startswith("args__") else (events[0], key)
        where[key] = value
    return events


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
    n = tracefiles.PARSE_FACTOR * len(text)
    assert log == [("hold", n), ("release", n)] and tracefiles.parse_bytes(len(text)) == n
    log.clear()
    with pytest.raises(tracefiles.TraceError, match="ts is 'abc'"):
        timeline.load(json.dumps(_cpu_trace(ts="abc")).encode(), "t.json", 2**20, hold=hold)
    assert [what for what, _ in log] == ["hold", "release"]  # released on a refusal too
    assert tracefiles.trace_limit(100 * 2**20) == 100 * 2**20 // tracefiles.PARSE_FACTOR


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
