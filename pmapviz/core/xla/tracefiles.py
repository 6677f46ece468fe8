"""Finding and reading a trace file, captured here or on any machine, within bounds.

A trace from elsewhere is untrusted: a folder the profiler wrote is searched within bounds
(:func:`find_trace`: levels, entries, seconds, never through a symlinked folder), a gzip is
inflated only up to a limit (:func:`inflate`), JSON that is not a trace is refused
(:func:`parse_json`), and :func:`parse_bytes` says what parsing takes, for a memory
reservation. Every refusal is a TraceError of one line saying what is wrong and what to load
instead; the events inside are read by :mod:`pmapviz.core.xla.traceevents`.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import zlib

from pmapviz.core.base import folders

MAX_TRACE_BYTES = 256 * 2**20  # decompressed JSON a trace may have (parsing costs ~12x that)
INFLATE_CHUNK = 2**20  # bytes of JSON inflated at a time
# Bytes reading a trace takes at its peak, per byte of its JSON: the JSON itself and json.loads'
# objects (the events read are a few percent of them: trace_events). Measured with tracemalloc over
# timeline.load() (Python 3.11), the fixtures' events repeated 50 times to leave out the fixed 1 MiB
# inflate buffer: TPU v5e 7.0 (12.4 MB of JSON; 6.9 for the fixture itself, 248 KB), H200 6.0 (0.93
# MB), CPU 6.0 (2.7 MB). A trace of nothing but device ops, which every one is kept
# (benchmarks/hostile_load.py: 849k events, 100 MiB), took 10.7: twelve covers it; JSON of nothing
# but empty objects takes 25 (tests/core/xla/test_tracefiles.py measures both again).
PARSE_FACTOR = 12

# how far find_trace looks under a folder: levels below it, entries seen, seconds
SEARCH_DEPTH = 6
SEARCH_ENTRIES = 20_000
SEARCH_S = 5.0
TRACE_NAMES = ("perfetto_trace.json.gz", "*.trace.json.gz")  # what the profiler writes


class TraceError(ValueError):
    """A trace file that cannot be read; the message says why and what to load instead."""


def find_trace(
    path: str, depth: int = SEARCH_DEPTH, entries: int = SEARCH_ENTRIES, seconds: float = SEARCH_S
) -> str:
    """The trace file at ``path``: the file itself, or the newest ``perfetto_trace.json.gz``
    (else ``*.trace.json.gz``) under a folder the profiler wrote, looked for at most
    ``depth`` levels down, ``entries`` entries and ``seconds`` seconds (``trace /`` answers
    quickly), never through a symlinked folder."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise TraceError(f"{path} is neither a file nor a folder.")
    found, looked, levels, stop = _search(path, depth, entries, seconds)
    for pattern in TRACE_NAMES:
        paths = [p for p in found if fnmatch.fnmatch(os.path.basename(p), pattern)]
        if paths:
            return max(paths, key=_mtime)
    names = " or ".join(TRACE_NAMES)
    if stop is None:
        raise TraceError(
            f"No {names} under {path} ({looked:,} entries in {levels} level(s)): "
            "capture with jax.profiler.trace(folder, create_perfetto_trace=True)"
            "."
        )
    raise TraceError(
        f"Looked at {looked:,} entries in {levels} level(s) under {path!r} "
        f"({stop}) and found no {names}; give the file or the folder "
        "jax.profiler.trace wrote."
    )


def _search(
    root: str, depth: int, entries: int, seconds: float
) -> tuple[list[str], int, int, str | None]:
    """Trace files under ``root`` (:func:`folders.entries`): (paths, entries looked at,
    levels opened, why it stopped early or None when it saw every entry ``depth`` levels
    down)."""
    walk = folders.Walk()
    found = [
        e.path
        for e in folders.entries(root, walk, depth, entries, seconds)
        if any(fnmatch.fnmatch(e.name, p) for p in TRACE_NAMES) and folders.is_file(e)
    ]
    return found, walk.looked, walk.levels, walk.stopped


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def inflate(data: bytes, name: str = "trace", limit: int = MAX_TRACE_BYTES) -> bytes | bytearray:
    """The JSON text of ``data``, gunzipped if it is gzip, at most ``limit`` bytes of it: a
    gzip is inflated a chunk at a time and refused as soon as it passes ``limit`` (one read
    of ``limit`` bytes would set aside all of them at once)."""
    if data[:2] != b"\x1f\x8b":
        text: bytes | bytearray = data[: limit + 1]
    else:
        text = bytearray()
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                while len(text) <= limit and (chunk := f.read(INFLATE_CHUNK)):
                    text += chunk
        except (OSError, EOFError, zlib.error) as err:
            raise TraceError(f"{name} is not a readable gzip file ({err}).") from err
    if len(text) > limit:
        raise TraceError(
            f"{name} holds more than {limit / 2**20:,.0f} MiB of JSON, the most "
            "read here; trace fewer calls (two are enough for a timeline)"
            "."
        )
    return text


def parse_json(text: bytes | bytearray, name: str = "trace") -> dict | list:
    """Chrome trace JSON from ``text``; TraceError for what is not JSON, nests too deep for
    Python's parser, or is not an object or a list."""
    try:
        trace = json.loads(text)
    except RecursionError as err:
        raise TraceError(
            f"{name} nests its JSON too deep to read (arrays or objects "
            "thousands of levels inside each other): not a trace."
        ) from err
    except (ValueError, UnicodeDecodeError) as err:
        raise TraceError(
            f"{name} is not trace JSON ({type(err).__name__}: {str(err)[:80]})."
        ) from err
    if not isinstance(trace, dict | list):
        raise TraceError(f"{name} is JSON but not a trace: expected traceEvents.")
    return trace


def parse_trace(data: bytes, name: str = "trace", limit: int = MAX_TRACE_BYTES) -> dict | list:
    """Chrome trace JSON from ``data``, gzipped or not, at most ``limit`` bytes of JSON (a
    gzip that inflates beyond it is refused, not inflated)."""
    return parse_json(inflate(data, name, limit), name)


def read_file(path: str, limit: int = MAX_TRACE_BYTES) -> tuple[str, bytes]:
    """(the file found at ``path``: :func:`find_trace`, its bytes): at most ``limit`` of
    them are read; a larger file is refused."""
    found = find_trace(path)
    with open(found, "rb") as f:
        data = f.read(min(os.fstat(f.fileno()).st_size, limit) + 1)  # a file: it has a size
    if len(data) > limit:
        raise TraceError(
            f"{found} is larger than {limit / 2**20:,.0f} MiB, the most read "
            "here. Trace fewer calls."
        )
    return found, data


def read_trace(path: str, limit: int = MAX_TRACE_BYTES) -> dict | list:
    """The trace at ``path`` (a file, or a folder the profiler wrote), parsed."""
    found, data = read_file(path, limit)
    return parse_trace(data, os.path.basename(found), limit)


def parse_bytes(json_bytes: int) -> int:
    """Bytes reading a trace of ``json_bytes`` of JSON takes at its peak (:data:`PARSE_FACTOR`),
    for a memory reservation."""
    return PARSE_FACTOR * json_bytes


def trace_limit(host_budget: int) -> int:
    """The JSON a trace may hold here: reading it takes :data:`PARSE_FACTOR` times its size,
    so that share of the host budget, at least 1 MiB and at most :data:`MAX_TRACE_BYTES`."""
    return max(2**20, min(MAX_TRACE_BYTES, host_budget // PARSE_FACTOR))
