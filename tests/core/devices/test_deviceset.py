"""Device sets: which sets a process holds, which runs now, and the defaults a page takes."""

import threading

import jax
import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import deviceset
from tests.conftest import TEST_DEVICES


def test_a_cpu_only_process_has_one_set():
    assert deviceset.names() == ("cpu",) and not deviceset.has_two()
    assert deviceset.default("many") == deviceset.default("real") == deviceset.real() == "cpu"
    assert deviceset.current() == "cpu"
    assert deviceset.devices() == jax.local_devices() and len(deviceset.devices()) == TEST_DEVICES


def test_a_one_chip_machine_teaches_on_the_cpu_set_and_times_the_chip(fake_devices):
    with fake_devices("tpu", 1):
        assert deviceset.names() == ("tpu", "cpu") and deviceset.has_two()
        assert deviceset.default("many") == "cpu"  # 8 devices to split over, not 1
        assert deviceset.default("real") == deviceset.real() == "tpu"
        assert len(deviceset.devices("tpu")) == 1  # the fake chip runs on a real CPU device
        assert len(deviceset.devices("cpu")) == TEST_DEVICES


def test_on_a_tie_the_real_devices_win(fake_devices):
    with fake_devices("gpu", TEST_DEVICES):
        assert deviceset.default("many") == "gpu"
    with fake_devices("gpu", TEST_DEVICES + 0, cpu=False):
        assert deviceset.names() == ("gpu",)


def test_use_sets_the_devices_and_jaxs_default_device_for_this_thread_only(fake_devices):
    seen = {}

    def other_thread():
        seen["other"] = deviceset.current()

    with fake_devices("tpu", 1):
        with deviceset.use("cpu") as name:
            assert name == "cpu" and deviceset.current() == "cpu"
            y = jax.jit(lambda v: v + 1)(jax.numpy.zeros(2))
            assert y.devices() == {deviceset.devices("cpu")[0]}
            t = threading.Thread(target=other_thread)
            t.start()
            t.join()
        assert deviceset.current() == "tpu"  # fake_devices runs its block on the fake set
    assert seen["other"] == "cpu"  # a new thread starts from the default, not this choice
    assert deviceset.current() == "cpu"


def test_a_set_name_goes_through_the_settings_layer(fake_devices):
    assert deviceset.parse("CPU ") == "cpu" and deviceset.parse("auto") == "auto"
    for bad in ("tpu", "²", "cpu;rm", ""):
        with pytest.raises(
            SettingError, match="not a device set here. This process has: auto, cpu"
        ):
            deviceset.parse(bad, "--device-set")
    with fake_devices("tpu", 1):
        assert deviceset.parse("tpu") == "tpu"
    with pytest.raises(ValueError):
        deviceset.default("fast")
