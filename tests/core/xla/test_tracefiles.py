"""Finding a trace file within bounds, and reading one: gzip, JSON, limits, and the memory
parsing takes."""

import gzip
import json
import os
import tempfile

import pytest

from pmapviz.core.xla import timeline, traceevents, tracefiles
from tests.core.xla.test_timeline import TPU_TRACE, _cpu_trace, _event, _x


def test_read_trace_finds_the_gzipped_json():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "plugins", "profile", "x"))
        with gzip.open(
            os.path.join(d, "plugins", "profile", "x", "perfetto_trace.json.gz"), "wt"
        ) as f:
            json.dump({"traceEvents": [_event(0, "a", 0, 1)]}, f)
        assert len(traceevents.device_events(tracefiles.read_trace(d))) == 1
        with pytest.raises(tracefiles.TraceError, match="neither a file nor a folder"):
            tracefiles.read_trace(os.path.join(d, "plugins", "profile", "y"))
        os.makedirs(os.path.join(d, "empty"))
        with pytest.raises(tracefiles.TraceError, match="No perfetto_trace"):
            tracefiles.read_trace(os.path.join(d, "empty"))


def test_bad_trace_files_are_refused_with_the_reason():
    with pytest.raises(tracefiles.TraceError, match="not trace JSON"):
        tracefiles.parse_trace(b"{not json", "t.json")
    with pytest.raises(tracefiles.TraceError, match="not a readable gzip"):
        tracefiles.parse_trace(b"\x1f\x8b garbage", "t.json.gz")
    bomb = gzip.compress(b" " * (2 * 2**20))  # 2 KB that inflate to 2 MiB
    with pytest.raises(tracefiles.TraceError, match="more than 1 MiB of JSON"):
        tracefiles.parse_trace(bomb, "bomb.json.gz", limit=2**20)
    with pytest.raises(tracefiles.TraceError, match="host events only"):
        timeline.from_trace({"traceEvents": [_x(9, 1, "python", 0, 5)]})


def test_json_nested_too_deep_or_a_bad_gzip_is_one_line():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(tracefiles.TraceError, match="nests its JSON too deep"):
        tracefiles.parse_trace(deep, "deep.json")
    with pytest.raises(tracefiles.TraceError, match="nests its JSON too deep"):
        tracefiles.parse_trace(gzip.compress(b'{"traceEvents": ' + deep + b"}"), "deep.json.gz")
    broken = bytearray(gzip.compress(json.dumps(_cpu_trace()).encode()))
    broken[20:40] = b"\xff" * 20  # a corrupt deflate stream: zlib.error, not OSError
    with pytest.raises(tracefiles.TraceError, match="not a readable gzip"):
        tracefiles.parse_trace(bytes(broken), "t.json.gz")
    with pytest.raises(tracefiles.TraceError, match="not trace JSON"):
        tracefiles.parse_trace(b'{"traceEvents": [' + b"9" * 5000 + b"]}", "long.json")


# ---------------------------------------------------------------- finding a trace, bounded
def _touch(path, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": _cpu_trace()}).encode()))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_find_trace_takes_the_newest_perfetto_trace_else_a_trace_json(tmp_path):
    _touch(tmp_path / "p" / "profile" / "a" / "host.trace.json.gz", 3000)
    assert tracefiles.find_trace(str(tmp_path)).endswith("host.trace.json.gz")
    _touch(tmp_path / "p" / "profile" / "a" / "perfetto_trace.json.gz", 1000)
    newest = _touch(tmp_path / "p" / "profile" / "b" / "perfetto_trace.json.gz", 2000)
    assert tracefiles.find_trace(str(tmp_path)) == str(newest)


def test_find_trace_looks_at_most_so_deep_so_many_entries_and_so_long(tmp_path):
    deep = tmp_path / "deep"
    _touch(deep / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "perfetto_trace.json.gz")
    with pytest.raises(tracefiles.TraceError) as err:
        tracefiles.find_trace(str(deep))
    assert str(err.value) == (
        f"Looked at 6 entries in 6 level(s) under {str(deep)!r} (it looks 6 levels down at "
        "most) and found no perfetto_trace.json.gz or *.trace.json.gz; give the file or the "
        "folder jax.profiler.trace wrote."
    )
    assert tracefiles.find_trace(str(deep), depth=8).endswith("perfetto_trace.json.gz")
    wide = tmp_path / "wide"
    _touch(wide / "b" / "perfetto_trace.json.gz")
    for k in range(60):
        (wide / f"f{k}").touch()
    with pytest.raises(
        tracefiles.TraceError,
        match=r"Looked at 50 entries in 1 level\(s\) .*"
        r"\(the most it looks at\)",
    ):
        tracefiles.find_trace(str(wide), entries=50)
    assert tracefiles.find_trace(str(wide), entries=70).endswith("perfetto_trace.json.gz")
    with pytest.raises(tracefiles.TraceError, match=r"\(it looks for 0 s at most\)"):
        tracefiles.find_trace(str(wide), seconds=0)


def test_find_trace_never_follows_a_symlinked_folder(tmp_path):
    """A link back up (a loop) and a link to a folder holding a trace: neither is entered."""
    outside = tmp_path / "outside"
    _touch(outside / "perfetto_trace.json.gz")
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "loop").symlink_to(root, target_is_directory=True)
    (root / "there").symlink_to(outside, target_is_directory=True)
    with pytest.raises(tracefiles.TraceError) as err:
        tracefiles.find_trace(str(root))
    assert str(err.value).startswith("No perfetto_trace.json.gz or *.trace.json.gz under")
    assert "(3 entries in 2 level(s))" in str(err.value)


# ---------------------------------------------------------------- within the memory budget
def test_a_file_or_gzip_over_the_limit_is_refused_naming_it_before_parsing(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 * 2**20))
    with pytest.raises(tracefiles.TraceError, match="larger than 1 MiB, the most read here"):
        tracefiles.read_trace(str(big), limit=2**20)
    held = []
    bomb = gzip.compress(b" " * (3 * 2**20))
    with pytest.raises(tracefiles.TraceError, match="more than 2 MiB of JSON, the most read"):
        timeline.load(bomb, "bomb.json.gz", 2 * 2**20, hold=held.append)
    assert held == []  # refused before any reservation


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
    assert 3 < peak / len(text) < tracefiles.PARSE_FACTOR


def test_parse_factor_covers_a_trace_of_nothing_but_device_ops():
    """The worst real shape: every event a device op, all kept (the hostile-load benchmark's
    100 MiB trace took 10.7x its JSON). 20 calls make 2 MB of JSON, past the fixed 1 MiB
    inflate buffer; the ratio is the same to three digits at 10, 20 and 60 calls (10.82), and
    tracemalloc makes every event slow, so more calls cost time and check nothing more."""
    import tracemalloc

    events = [
        {"ph": "M", "pid": 3 + d, "name": "process_name", "args": {"name": f"/device:TPU:{d}"}}
        for d in range(4)
    ]
    events += [
        {"ph": "M", "pid": 3 + d, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}}
        for d in range(4)
    ]
    for call in range(20):
        for d in range(4):
            events += [
                {
                    "ph": "X",
                    "pid": 3 + d,
                    "tid": 3,
                    "ts": call * 1000 + k * 2.01,
                    "dur": 1.5,
                    "name": f"fusion.{k % 40}",
                    "args": {"bytes_accessed": str(2 ** (10 + k % 8)), "model_flops": str(k % 100)},
                }
                for k in range(200)
            ]
    text = json.dumps({"traceEvents": events}, separators=(",", ":")).encode()
    data = gzip.compress(text, 1)
    del events
    tracemalloc.start()
    try:
        tl = timeline.load(data, "ops.json.gz", 2**30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(tl.lanes) == 4 and len(text) > 2**20
    assert 5 < peak / len(text) < tracefiles.PARSE_FACTOR, peak / len(text)
