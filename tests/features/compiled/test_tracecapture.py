"""A real profiler capture on 4 devices, one capture at a time, and the memory a traced
collective holds before it takes the profiler's turn."""

import os
import tempfile
import threading

import pytest

from pmapviz.features.compiled import tracecapture


def test_one_real_capture_has_a_lane_per_device_with_the_collective_on_each():
    made = []
    real = tempfile.TemporaryDirectory

    def spy(*a, **k):
        made.append(real(*a, **k))
        return made[-1]

    tl, rows = None, None
    import unittest.mock as mock

    with mock.patch.object(tracecapture.tempfile, "TemporaryDirectory", spy):
        tl, rows = tracecapture.collective_timeline("psum", 4, 256, bandwidth_gbs=10.0)
    assert list(tl.lanes) == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    (row,) = rows
    for lane in tl.lanes.values():
        assert [e.op for e in lane if e.collective == "all-reduce"] == [row.op]
    assert len(row.per_device_us) == 4 and row.measured_us > 0
    assert row.model_bytes == pytest.approx(2 * 3 / 4 * 1024) and row.model_us > 0
    assert tl.capture_s < 2.0
    assert made and not os.path.exists(made[0].name)  # the trace folder is gone


def test_a_second_capture_waits_in_the_queue_then_says_the_profiler_is_busy():
    holder = tracecapture.TURNS.acquire(timeout=1)
    try:
        done = threading.Event()
        errors, places = [], []

        def other():
            try:
                tracecapture.capture(
                    lambda: None, {}, timeout_s=0.6, on_wait=lambda pos, *_: places.append(pos)
                )
            except tracecapture.ProfilerBusy as err:
                errors.append(str(err))
            done.set()

        threading.Thread(target=other).start()
        assert done.wait(10)
        assert errors and places and places[0] == 1  # it saw its place in the queue
    finally:
        holder.release()


def test_a_capture_holds_its_collectives_memory_first_then_takes_the_profilers_turn(monkeypatch):
    """The Compiled page's trace reserves what the compiled collective holds (the same need
    as a run of it) from before its input exists until the trace is read, and waits for
    memory before it takes the profiler's turn (never holding the profiler while waiting)."""
    import contextlib

    from pmapviz.core.budgets import memorypool
    from pmapviz.features.collectives import collectiveruns

    events, needs, waits = [], [], []
    real_capture, real_put = tracecapture.capture, tracecapture.col.make_input

    @contextlib.contextmanager
    def held():
        events.append("memory held")
        yield
        events.append("memory released")

    def reserve(need, label, on_wait=None, *args, **kwargs):
        assert tracecapture.TURNS.held_for() is None  # no profiler turn held while it waits
        needs.append(need)
        waits.append(on_wait)
        return held()

    def capture(*args, **kwargs):
        events.append("capture")
        return real_capture(*args, **kwargs)

    def make_input(*args, **kwargs):
        events.append("input")
        return real_put(*args, **kwargs)

    monkeypatch.setattr(memorypool, "reserve", reserve)
    monkeypatch.setattr(tracecapture, "capture", capture)
    monkeypatch.setattr(tracecapture.col, "make_input", make_input)
    on_wait = lambda *a: None  # noqa: E731
    tl, rows = tracecapture.collective_timeline("all_gather", 4, 256, on_wait=on_wait)
    assert events == ["memory held", "input", "capture", "memory released"]
    assert waits == [on_wait] and rows and len(tl.lanes) == 4
    fn = collectiveruns.compile_collective("all_gather", 4, None, ())
    (need,) = needs
    assert need == collectiveruns.run_need(collectiveruns.compiled_for(fn, 4, 256), 4, 256)
    assert need.device >= 4 * (4 * 256 + 4 * 4 * 256)  # each device: its block, 4 blocks out


def test_a_capture_whose_wait_for_memory_ends_says_so(monkeypatch):
    from pmapviz.core.base import queues
    from pmapviz.core.budgets import memorypool

    def reserve(need, label, on_wait=None, *args, **kwargs):
        raise queues.WaitTimeout("Waited 120 s for memory: other actions hold it.", 1, 120.0)

    monkeypatch.setattr(memorypool, "reserve", reserve)
    with pytest.raises(tracecapture.ProfilerBusy, match="Waited 120 s for memory"):
        tracecapture.collective_timeline("psum", 4, 16)


# ---------------------------------------------------------------- issue 52: the disk
def _trace_folders() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("pmapviz-trace-")}


def test_a_trace_the_disk_refuses_is_one_line_nothing_is_kept_and_the_next_one_works(
    monkeypatch, tmp_path
):
    """A real capture whose last file (perfetto_trace.json.gz, written by JAX's stop_trace)
    meets a full disk: JAX then never resets its profiler, so every later capture in the
    process was refused as "Profile has already been started". Now: one line, the folder
    removed, and the next capture (with room again) works."""
    import errno

    from jax._src import profiler

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's folders only
    before = _trace_folders()

    def full(log_dir):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as disk:
        disk.setattr(profiler, "_write_perfetto_trace_file", full)
        with pytest.raises(tracecapture.TraceNotWritten) as caught:
            tracecapture.collective_timeline("psum", 2, 64)
    assert str(caught.value) == (
        f"The trace could not be written in {tempfile.gettempdir()} (No space left on device): "
        "nothing was kept; free some space there, or set TMPDIR to a folder with room, and "
        "capture again."
    )
    assert isinstance(caught.value, tracecapture.ProfilerBusy)  # the page's warning shows it
    assert not _trace_folders() - before  # none left
    tl, _ = tracecapture.collective_timeline("psum", 2, 64)
    assert list(tl.lanes) == ["cpu:0", "cpu:1"]


def test_the_profilers_own_words_tell_a_full_disk_from_a_busy_profiler(monkeypatch):
    import contextlib

    import jax

    def tracing(said):
        @contextlib.contextmanager
        def trace(folder, **kwargs):
            yield
            raise RuntimeError(said)

        return trace

    xla = "RESOURCE_EXHAUSTED: /tmp/t/plugins/profile/vm.xplane.pb; Disk quota exceeded"
    monkeypatch.setattr(jax.profiler, "trace", tracing(xla))
    with pytest.raises(tracecapture.TraceNotWritten, match=r"\(Disk quota exceeded\): nothing"):
        tracecapture.capture(lambda: None, {})
    busy = "Profile has already been started. Only one profile may be run at a time."
    monkeypatch.setattr(jax.profiler, "trace", tracing(busy))
    with pytest.raises(tracecapture.ProfilerBusy) as caught:
        tracecapture.capture(lambda: None, {})
    assert str(caught.value) == f"The profiler is busy: {busy}"
    assert not isinstance(caught.value, tracecapture.TraceNotWritten)


def test_a_temporary_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    monkeypatch.setattr(tempfile, "tempdir", str(gone))
    with pytest.raises(tracecapture.TraceNotWritten) as caught:
        tracecapture.capture(lambda: None, {})
    assert str(caught.value) == (
        f"The trace could not be written in {gone} (No such file or directory): nothing was "
        "kept; set TMPDIR to a folder you can write to, and capture again."
    )
