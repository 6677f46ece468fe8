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
