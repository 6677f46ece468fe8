"""Malformed traces made from the real ones (a TPU v5e's, an H200's, a CPU one): values of the
wrong type, huge numbers, text, null, lists, objects, keys taken away, JSON nested too deep.
Reading one gives a Timeline or a TraceError of one line, never anything else (issue 36)."""

import copy
import gzip
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmapviz.core.xla import timeline, tracefiles, tracelanes
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "core" / "fixtures"
REAL = {
    "tpu": FIXTURES / "tpu-v5e" / "psum_and_matmul_tpu.perfetto_trace.json.gz",
    "gpu": FIXTURES / "gpu-h200" / "pmap_psum_gpu.perfetto_trace.json.gz",
    "cpu": FIXTURES / "cpu" / "pmap_psum_cpu4.perfetto_trace.json.gz",
}
TEXT = {name: gzip.decompress(path.read_bytes()) for name, path in REAL.items()}
# where a mutation does the most: the metadata events and those the reader keeps
_READ = ("device_ordinal", "hlo_op", "run_id", "correlation_id")
FOCUS = {
    name: [
        k
        for k, e in enumerate(json.loads(text)["traceEvents"])
        if e.get("ph") == "M" or set(e.get("args", {})) & set(_READ)
    ]
    for name, text in TEXT.items()
}
# stand-ins that only JSON text can hold, put in after json.dumps
DEEP, NESTED, HUGE = "__deep__", "__nested__", "__huge__"
SPLICE = {
    json.dumps(DEEP): "[" * 50_000 + "]" * 50_000,  # past json.loads' recursion limit
    json.dumps(NESTED): "[" * 400 + "]" * 400,  # parses: a list 400 deep inside an event
    json.dumps(HUGE): "9" * 5_000,  # past Python's 4,300 digits for an int
}
BAD = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**400,
    -(10**30),
    float("nan"),
    float("inf"),
    "",
    "abc",
    "9" * 5_000,
    "-1",
    "1e400",
    " 3",
    "²",
    [],
    [1, "a"],
    {},
    {"name": None},
    {"a": [1]},
    "X",
    "M",
    "XLA Ops",
    "XLA Modules",
    "process_name",
    "thread_name",
    "/device:TPU:0",
    "/device:GPU:" + "9" * 5_000,
    DEEP,
    NESTED,
    HUGE,
]
EVENT_KEYS = ["ph", "pid", "tid", "ts", "dur", "name", "args"]
ARG_KEYS = [
    "name",
    "device_ordinal",
    "hlo_op",
    "hlo_module",
    "run_id",
    "correlation_id",
    "bytes_accessed",
    "model_flops",
    "hlo_category",
]


def _mutate(draw, trace: dict, name: str) -> dict | list:
    """One change to ``trace``: an event's value, an arg's value, a key taken away, a whole
    event replaced, or the top level itself."""
    events = trace["traceEvents"]
    kind = draw(st.sampled_from(["key", "arg", "arg", "drop", "event", "top"]))
    k = draw(st.sampled_from(FOCUS[name]) | st.integers(0, len(events) - 1)) % len(events)
    event, bad = events[k], copy.deepcopy(draw(st.sampled_from(BAD)))  # BAD stays as it is
    if kind == "top":
        return draw(st.sampled_from([{**trace, "traceEvents": bad}, {}, events, bad]))
    if kind == "event" or not isinstance(event, dict):
        events[k] = bad
    elif kind == "key":
        event[draw(st.sampled_from(EVENT_KEYS + sorted(event)))] = bad
    elif kind == "arg" and isinstance(event.get("args"), dict):
        event["args"][draw(st.sampled_from(ARG_KEYS + sorted(event["args"])))] = bad
    elif kind == "drop" and event:
        del event[draw(st.sampled_from(sorted(event)))]
    return trace


@st.composite
def malformed(draw) -> bytes:
    """A real trace with one to four changes, as JSON text, gzipped or not."""
    name = draw(st.sampled_from(sorted(REAL)))
    trace = json.loads(TEXT[name])
    for _ in range(draw(st.integers(1, 4))):
        trace = _mutate(draw, trace, name)
        events = trace.get("traceEvents") if isinstance(trace, dict) else None
        if not (isinstance(events, list) and events):
            break
    text = json.dumps(trace)
    for stand_in, json_text in SPLICE.items():
        text = text.replace(stand_in, json_text)
    data = text.encode()
    return gzip.compress(data, 1) if draw(st.booleans()) else data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(malformed())
def test_a_mutated_real_trace_reads_as_a_timeline_or_one_trace_error(data):
    try:
        tl = timeline.load(data, "fuzz.json.gz", 16 * 2**20)
    except tracefiles.TraceError as err:
        line = str(err)
        assert line and "\n" not in line and len(line) < 400
        return
    assert isinstance(tl, timeline.Timeline)
    json.dumps(tl.to_json(), allow_nan=False)  # every value plain, finite JSON
    timeline.summary_lines(tl)
    timeline.lane_rows(tl)
    timeline.op_rates(tl, 100.0, 1e12)
    timeline.drawn(tl)


def test_the_unchanged_fixtures_read():
    for name, text in TEXT.items():
        tl = timeline.load(text, f"{name}.json", 16 * 2**20)
        assert tl.lanes, name


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(BAD[:-3]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
RAW_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "M"]) | JSON,
        "pid": st.sampled_from([1, 2]) | JSON,
        "tid": st.sampled_from([5]) | JSON,
        "name": JSON,
        "args": st.fixed_dictionaries({}, optional={k: JSON for k in ARG_KEYS}) | JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(RAW_EVENT)
def test_event_lane_never_raises_on_a_raw_event(event):
    """tracelanes.event_lane, given an event as any JSON holds it (not checked first)."""

    where = tracelanes.event_lane(event, {1: "tpu:0"}, {(1, 5): tracelanes.OPS_THREAD})
    assert where is None or (isinstance(where[0], str) and isinstance(where[1], str))
