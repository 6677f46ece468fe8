"""Device facts: what the devices are (read from JAX, or from fake GPUs and TPUs), their
memory, the rates measured on them, start-up, trace lanes, and every platform sentence."""

import gzip
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from pmapviz import devicefacts
from tests.conftest import ROOT, TEST_DEVICES
from tests.fakes import FIXTURES, H200, TPU_LIMIT


def test_cpu_facts_come_from_jax():
    f = devicefacts.facts()
    assert f.platform == "cpu" and f.emulated and f.shares_host_memory
    assert f.labels == [str(d) for d in jax.devices()] and f.local_count == TEST_DEVICES
    assert f.device_kind == jax.devices()[0].device_kind and f.jax_version == jax.__version__
    assert 1 <= f.physical_cores <= f.logical_cpus
    assert f.devices_phrase() == f"{TEST_DEVICES} emulated CPU devices"
    assert f.devices_phrase(1) == "1 emulated CPU device"
    assert devicefacts.device_memory() is None  # CPU reports no memory_stats
    assert devicefacts.peak_device_bytes() is None


def test_fake_gpus_give_gpu_facts_and_the_fixture_memory(fake_devices):
    with fake_devices("gpu") as devs:
        f = devicefacts.facts()
        assert (f.platform, f.device_kind, f.emulated) == ("gpu", "NVIDIA H200", False)
        assert f.labels == [f"cuda:{i}" for i in range(len(devs))] and not f.shares_host_memory
        assert f.devices_phrase() == f"{len(devs)} NVIDIA H200 GPUs"
        assert f.devices_phrase(1) == "1 NVIDIA H200 GPU"
        mem = devicefacts.device_memory()
        after = H200["memory_stats_after"]
        assert [(m.limit, m.in_use, m.peak) for m in mem] == [
            (after["bytes_limit"], after["bytes_in_use"], after["peak_bytes_in_use"])
        ] * len(devs)
        assert mem[0].free == after["bytes_limit"] - after["bytes_in_use"]
        assert devicefacts.peak_device_bytes() == after["peak_bytes_in_use"]
    assert devicefacts.facts().platform == "cpu"  # the override is gone, and the cache with it


def test_fake_tpus(fake_devices):
    with fake_devices("tpu", 4):
        f = devicefacts.facts()
        assert f.devices_phrase() == "4 TPU v5 lite devices" and f.name == "TPU"
        assert devicefacts.device_memory()[3].limit == TPU_LIMIT
        assert f.local_count == 4


def test_start_up_is_measured_once():
    first = devicefacts.start_backend()
    assert first >= 0 and devicefacts.start_backend() == first
    assert devicefacts.facts().startup_s == first


def test_the_bandwidth_probe_is_xla_on_the_device_not_numpy(monkeypatch):
    """The old floor was numpy's single-threaded host copy (93x above an H200's real time);
    numpy's copy is made impossible here and the bandwidth is still measured, by XLA."""

    def no_numpy_copy(*_a, **_k):
        raise AssertionError("the floor must not come from a numpy copy")

    monkeypatch.setattr(np, "copyto", no_numpy_copy)
    gbs, method = devicefacts.measure_bandwidth(16 * 2**20, repeat=2)
    assert gbs > 0.5 and method.startswith(("a jitted in-place copy", "a jitted sum"))


def test_rates_are_measured_once_and_say_where(fake_devices):
    saved = devicefacts._RATES.get("rates")
    devicefacts.set_rates(None)
    try:
        with fake_devices("gpu"):
            r = devicefacts.rates(64 * 2**20)
        assert r.device == "cuda:0" and r.probe_bytes == 16 * 2**20
        assert devicefacts.rates() is r and devicefacts.rates_measured()
        assert r.bandwidth_gbs > 0 and r.flops_per_s > 0 and r.transfer_gbs > 0
        words = r.floor_words()
        assert "measured on cuda:0 with XLA" in words and "16 MiB" in words
        assert r.transfer_s(r.transfer_gbs * 1e9) == pytest.approx(1.0)
    finally:
        devicefacts.set_rates(saved)


def test_warm_transfer_copies_once_and_frees_it():
    host = np.ones((1000, 3), np.float32)
    before = len(jax.live_arrays())
    assert devicefacts.warm_transfer(host) >= 0
    assert len(jax.live_arrays()) == before


def test_trace_planes_and_lanes_on_the_h200_trace():
    with gzip.open(FIXTURES / "pmap_psum_gpu.perfetto_trace.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    planes, threads = devicefacts.trace_planes(events)
    assert planes == {1: "gpu:0"} and threads[(1, 14)] == "Stream #14(Compute)"
    lanes = [devicefacts.event_lane(e, planes, threads) for e in events]
    assert [x for x in lanes if x] == [("gpu:0", "loop_multiply_fusion")] * 2
    cpu_event = {"ph": "X", "pid": 7, "args": {"device_ordinal": "3", "hlo_op": "psum.7"}}
    assert devicefacts.event_lane(cpu_event, {}, {}) == ("cpu:3", "psum.7")
    assert sorted(["cpu:10", "cpu:2", "gpu:0"], key=devicefacts.lane_order) == [
        "cpu:2", "cpu:10", "gpu:0"]  # fmt: skip


def test_a_machine_with_a_gpu_but_the_cpu_only_jax_is_told_how_to_install(monkeypatch):
    monkeypatch.setattr(devicefacts, "accelerators_present", lambda: ["gpu"])
    monkeypatch.setattr(devicefacts, "backends_installed", lambda: ["cpu"])
    (hint,) = devicefacts.accelerator_hints("cpu")
    assert "CPU-only build" in hint and "jax[cuda12]==" in hint and "jax[cuda13]==" in hint
    monkeypatch.setattr(devicefacts, "backends_installed", lambda: ["cpu", "gpu"])
    assert "--platform cpu" in devicefacts.accelerator_hints("cpu")[0]
    assert devicefacts.accelerator_hints("gpu") == []


def test_the_unavailable_platform_message_names_backends_and_the_install():
    err = RuntimeError(
        "Unable to initialize backend 'rocm': Backend 'rocm' is not in the list of known "
        "backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' to ...)"
    )
    text = devicefacts.unavailable_message("gpu", err)
    assert "JAX cannot start the gpu platform here" in text and "set JAX_PLATFORMS" not in text
    assert "Backends this JAX installation has: cpu" in text and "jax[cuda12]==" in text
    assert "--platform cpu" in text and "\n" not in text
    assert "jax[tpu]==" in devicefacts.unavailable_message("tpu")


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_asking_for_a_missing_accelerator_is_one_line_and_exit_2(platform):
    """python -m pmapviz devices --platform gpu (or tpu) on this CPU-only machine."""
    r = subprocess.run([sys.executable, "-m", "pmapviz", "devices", "--platform", platform],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"cannot start the {platform} platform" in line
    assert ("jax[cuda12]" if platform == "gpu" else "jax[tpu]") in line


def test_the_app_asked_for_a_missing_gpu_shows_one_page_with_the_install():
    """streamlit run app.py -- --platform gpu without a GPU backend: every page used to show
    Streamlit's redacted error. A fresh process (JAX must not be started yet)."""
    code = ("import sys; from streamlit.testing.v1 import AppTest; sys.argv = ['app.py', "
            "'--platform', 'gpu']; at = AppTest.from_file('app.py', default_timeout=60).run(); "
            "print(len(at.exception)); print(at.title[0].value); print(at.error[0].value); "
            "print(at.code[0].value)")  # fmt: skip
    env = {**os.environ, "PMAPVIZ_PLATFORM": ""}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    exceptions, title, *rest = r.stdout.splitlines()
    text = "\n".join(rest)
    assert exceptions == "0" and title == "pmapviz could not start"
    assert "cannot start the gpu platform" in text and "jax[cuda13]==" in text
    assert "--platform cpu" in text


STORIES = [
    lambda f: devicefacts.summary(f),
    lambda f: devicefacts.speed_story(f),
    lambda f: devicefacts.speed_story(f, 1),
    lambda f: devicefacts.speed_caveat(f, 4),
    lambda f: devicefacts.step_time_story(f, 256),
    lambda f: devicefacts.devices_note(f) or "",
    *(lambda f, k=k: devicefacts.say(f, k, 8) for k in devicefacts.WORDS),
    lambda f: devicefacts.devices_story(f, 8),
    lambda f: devicefacts.scaling_story(f, 8),
    lambda f: "\n".join(devicefacts.export_header(f, 8)),
]
CPU_WORDS = ("emulated", "share", "jax_num_cpu_devices", "no speed-up", "no gain")


@pytest.mark.parametrize("story", STORIES, ids=range(len(STORIES)))
def test_every_platform_sentence_tells_the_platform_its_own_story(story, fake_devices):
    """On CPU devices the sentences say what is emulated or shared; on GPUs or TPUs none of
    the CPU story remains, and they name the real devices."""
    cpu = story(devicefacts.facts())
    with fake_devices("gpu"):
        gpu = story(devicefacts.facts())
    with fake_devices("tpu"):
        tpu = story(devicefacts.facts())
    assert gpu != cpu and tpu != cpu
    for text in (gpu, tpu):
        assert not [w for w in CPU_WORDS if w in text], text


def test_exported_scripts_on_a_gpu_set_no_cpu_devices(fake_devices):
    with fake_devices("gpu"):
        about, setup = devicefacts.export_header(devicefacts.facts(), 8)
    assert "NVIDIA H200" in about and "jax.config" not in setup
    assert setup.startswith("assert jax.device_count() >= 8")
    about, setup = devicefacts.export_header(devicefacts.facts(), 8)
    assert "8 emulated CPU device(s)" in about and '"jax_num_cpu_devices", 8' in setup


def test_timed_calls_is_one_warm_loop_that_frees_each_output():
    import time

    import jax

    outputs = []

    def run():
        time.sleep(0.01)
        outputs.append(jax.numpy.ones(2) + 1)
        return outputs[-1]

    out, times = devicefacts.timed_calls(run, 3)
    assert len(outputs) == 4 and len(times) == 3  # a warm-up, then three timed calls
    assert all(0.009 < t < 1.0 for t in times), times
    assert [o.is_deleted() for o in outputs] == [True, True, True, False]  # one at a time
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])
    _, times = devicefacts.timed_calls(run, 2, warm=False, free=False)
    assert len(outputs) == 6 and not outputs[4].is_deleted()  # no warm-up, nothing freed


def test_timed_calls_reads_the_clock_around_each_call_only():
    ticks = iter([0.0, 0.5, 1.0, 3.0])
    _, times = devicefacts.timed_calls(lambda: None, 2, clock=lambda: next(ticks))
    assert times == [0.5, 2.0]
