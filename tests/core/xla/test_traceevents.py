"""A trace's events read on hand-made and real traces (CPU, an H200's, a TPU v5e's): each op
told its call, the counts a trace gives, and malformed events refused in one line."""

import json

import pytest

from pmapviz.core.xla import timeline, traceevents, tracefiles
from tests.core.xla.test_timeline import (
    GPU_TRACE,
    TPU_TRACE,
    _cpu_trace,
    _meta,
    _tpu_fixture,
    _x,
)


def test_the_real_h200_trace_gives_one_gpu_lane_with_the_last_call():
    """Captured on an H200: device events sit under the process named /device:GPU:0 and carry
    no device_ordinal (the old reader found nothing there); the two calls are told apart by
    their correlation ids, which lead to the host's Execute events and their run ids."""
    raw = tracefiles.read_trace(str(GPU_TRACE))
    events = traceevents.device_events(raw)
    assert [(e.lane, e.op) for e in events] == [("gpu:0", "loop_multiply_fusion")] * 2
    assert len({e.run for e in events}) == 2 and "" not in {e.run for e in events}
    tl = timeline.from_trace(raw)
    assert list(tl.lanes) == ["gpu:0"] and tl.module == "jit__fun" and tl.calls_seen == 2
    (only,) = tl.lanes["gpu:0"]
    assert (only.start_us, only.dur_us, only.collective) == (0.0, 2.624, None)  # the 2nd call


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
            events.append(
                _x(
                    pid,
                    3,
                    "k",
                    t0 + 10 + (lag if pid == 2 else 0),
                    4,
                    hlo_op="all-reduce-start.2",
                    hlo_module="jit_f",
                    correlation_id=corr,
                )
            )
    tl = timeline.from_trace(events)
    assert list(tl.lanes) == ["gpu:0", "gpu:1"] and tl.calls_seen == 2
    assert tl.lanes["gpu:1"][0].start_us == 150.0  # call 2: lagging on gpu:1, still call 2
    assert tl.lanes["gpu:0"][0].collective == "all-reduce"


def test_the_real_tpu_v5e_trace_names_each_call_after_its_module():
    """Captured on a TPU v5e: op events carry neither module nor run_id; each lies inside
    one event of the plane's "XLA Modules" line, which names the module and the call. Two
    calls of a pmapped psum, then two of a jitted matmul: the last call is the matmul's."""
    fx = _tpu_fixture()
    last = fx["modules"][-1]
    tl = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)))
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
        (e.op, e.ts): e.run
        for e in traceevents.device_events(tracefiles.read_trace(str(TPU_TRACE)))
    }
    assert len(runs) == len(fx["ops"]) == sum(len(v) for v in fx["inside"].values())
    for run, ops in fx["inside"].items():
        assert {runs[(o["name"], o["ts"])] for o in ops} == {run}
    # the module filter: the psum's last call, one op
    first = fx["modules"][0]["name"]
    psum = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)), module=first)
    assert psum.module == first and first.startswith("jit__fun(")
    assert psum.calls_seen == sum(m["name"] == first for m in fx["modules"]) == 2
    assert [e.op for e in psum.lanes["tpu:0"]] == ["sine_multiply_fusion"]


def _tpu_ops(values: list) -> list[dict]:
    """A one-chip TPU trace: one call, one op per value of bytes_accessed (and model_flops)."""
    events = [
        _meta(1, "/device:TPU:0"),
        _meta(1, "XLA Modules", 2),
        _meta(1, "XLA Ops", 3),
        _x(1, 2, "jit_f(1)", 0, 100 + len(values), run_id="5"),
    ]
    for k, v in enumerate(values):
        events.append(
            _x(1, 3, f"op.{k}", 1 + k, 1, bytes_accessed=v, model_flops=v, hlo_category=v)
        )
    return events


def test_counts_that_are_not_plain_non_negative_integers_become_none():
    bad = [
        "abc",
        -5,
        "-5",
        "9" * 5000,
        None,
        [1],
        {"n": 1},
        True,
        1.5,
        "1e3",
        " 12",
        "12\n",
        "0x10",
        "²",
        float("nan"),
        float("inf"),
        10**30,
        "",
    ]
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


# ---------------------------------------------------------------- malformed traces (issue 36)
@pytest.mark.parametrize(
    ("trace", "line"),
    [
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
        (
            _cpu_trace(args__device_ordinal="9" * 5000),
            "traceEvents[0].args.device_ordinal is '" + "9" * 40 + "...', not a device number.",
        ),
        (
            _cpu_trace(args__device_ordinal=10**4000),
            "traceEvents[0].args.device_ordinal is a 4,001-digit number, not a device number.",
        ),
        (
            _cpu_trace(args__device_ordinal=-1),
            "traceEvents[0].args.device_ordinal is -1, not a device number.",
        ),
        (_cpu_trace(args__hlo_op=[[[]]]), "traceEvents[0].args.hlo_op is a list, not a name."),
        (_cpu_trace(args__run_id=float("nan")), "traceEvents[0].args.run_id is nan, not a name."),
    ],
)
def test_a_malformed_trace_is_one_line_saying_what_is_wrong_and_where(trace, line):
    with pytest.raises(tracefiles.TraceError) as err:
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
