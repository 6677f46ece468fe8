"""Measured against estimated: the calibration path, run on the emulated CPU devices (the TPU
runs are quoted in the README), and a machine without a chip told so."""

import pytest

from pmapviz.core.pods import podcalibrate, podprograms


def test_a_program_runs_on_the_local_devices_and_is_timed():
    c = podcalibrate.calibrate(podprograms.dot(4096), repeat=3, platform="cpu")
    assert c.devices >= 1 and c.device_kind == "cpu"
    assert 0 < c.measured_s < 5
    d = c.to_dict()
    assert d["measured_s"] == c.measured_s
    # the label names the program as compiled: its arguments' global types (rows on 8 devices)
    assert d["label"] == "dot products of 3-vectors: x f32[4096,3], y f32[4096,3]"
    if c.estimate_s:  # the CPU's cost model may give none; the ratio follows it
        assert c.ratio == pytest.approx(c.measured_s / c.estimate_s)
    else:
        assert c.ratio is None


def test_no_chip_says_so(monkeypatch):
    import jax

    def no_tpu(platform=None):
        raise RuntimeError("Unknown backend tpu")

    monkeypatch.setattr(jax, "devices", no_tpu)
    with pytest.raises(podcalibrate.NoChip, match="needs a TPU machine"):
        podcalibrate.local_pod()
