"""Rates measured on the device: the bandwidth probe, FLOP and sort rates, the one timing loop."""

import jax
import numpy as np
import pytest

from pmapviz.core.devices import devicerates


def test_the_bandwidth_probe_is_xla_on_the_device_not_numpy(monkeypatch):
    """The old floor was numpy's single-threaded host copy (93x above an H200's real time);
    numpy's copy is made impossible here and the bandwidth is still measured, by XLA."""

    def no_numpy_copy(*_a, **_k):
        raise AssertionError("the floor must not come from a numpy copy")

    monkeypatch.setattr(np, "copyto", no_numpy_copy)
    gbs, method = devicerates.measure_bandwidth(16 * 2**20, repeat=2)
    assert gbs > 0.5 and method.startswith(("a jitted in-place copy", "a jitted sum"))


def test_rates_are_measured_once_and_say_where(fake_devices):
    saved = devicerates._RATES.get("cpu")
    devicerates.set_rates(None)
    try:
        with fake_devices("gpu"):
            r = devicerates.rates(64 * 2**20)
            assert devicerates.rates() is r and devicerates.rates_measured()
        assert not devicerates.rates_measured()  # each set has its own rates
        assert r.device == "cuda:0" and r.probe_bytes == 16 * 2**20
        assert r.bandwidth_gbs > 0 and r.flops_per_s > 0 and r.transfer_gbs > 0
        words = r.floor_words()
        assert "measured on cuda:0 with XLA" in words and "16 MiB" in words
        assert r.transfer_s(r.transfer_gbs * 1e9) == pytest.approx(1.0)
    finally:
        devicerates.set_rates(saved)


def test_timed_calls_is_one_warm_loop_that_frees_each_output():
    import time

    outputs = []

    def run():
        time.sleep(0.01)
        outputs.append(jax.numpy.ones(2) + 1)
        return outputs[-1]

    out, times = devicerates.timed_calls(run, 3)
    assert len(outputs) == 4 and len(times) == 3  # a warm-up, then three timed calls
    assert all(0.009 < t < 1.0 for t in times), times
    assert [o.is_deleted() for o in outputs] == [True, True, True, False]  # one at a time
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])
    _, times = devicerates.timed_calls(run, 2, warm=False, free=False)
    assert len(outputs) == 6 and not outputs[4].is_deleted()  # no warm-up, nothing freed


def test_timed_calls_reads_the_clock_around_each_call_only():
    ticks = iter([0.0, 0.5, 1.0, 3.0])
    _, times = devicerates.timed_calls(lambda: None, 2, clock=lambda: next(ticks))
    assert times == [0.5, 2.0]
