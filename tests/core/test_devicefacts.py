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
from tests.fakes import FIXTURES, H200, TPU_FIXTURES, TPU_LIMIT


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


def test_start_up_is_measured_once_where_it_happens():
    """jax.devices() (where a TPU's runtime starts: 7 s) and each set's first transfer, each
    timed apart, once; the RSS before and after is the baseline of host-memory growth."""
    first = devicefacts.start_backend()
    assert devicefacts.start_backend() is first and devicefacts.startup() is first
    assert first.backend_s >= 0 and [name for name, _ in first.first_put] == ["cpu"]
    assert devicefacts.facts().startup_s == first.first_put_s("cpu") >= 0
    assert first.rss_before > 0 and first.rss_after >= first.rss_before
    (line,) = devicefacts.startup_lines(first)  # a CPU runtime maps little: one line
    assert "to start the runtime (`jax.devices()`)" in line and "kept out of every timing" in line


def test_a_tpus_start_up_is_said_as_the_chip_measured_it():
    """The v5e: 7.1 s in jax.devices(), 0.63 s first transfer, RSS 370 MB -> 13,810 MB of
    runtime mappings (tests/core/fixtures/tpu-v5e/tpu_device_info.json)."""
    info = json.loads((TPU_FIXTURES / "tpu_device_info.json").read_text())
    mb = 2**20
    s = devicefacts.Startup(info["jax_devices_s"], (("tpu", info["first_put_s"]), ("cpu", 0.01)),
                            info["rss_mb_after_import"] * mb, info["rss_mb_after_first_put"] * mb,
                            40 * 2**30, 36 * 2**30)  # fmt: skip
    assert s.runtime_bytes == (13810 - 370) * mb
    first, mapped = devicefacts.startup_lines(s)
    assert "7.14 s to start the runtime" in first and "TPU 0.63 s, CPU 0.01 s" in first
    assert "13.1 GiB into this process" in mapped and "growth over it" in mapped


def test_host_growth_is_the_blocks_own_memory_not_the_process_rss():
    before = devicefacts.rss_bytes()
    assert before and before > 10 * 2**20
    with devicefacts.HostGrowth() as g:
        block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
        block.sum()
        del block
    assert 60 * 2**20 <= g.peak_bytes < 200 * 2**20  # the block, not the ~0.5 GB process
    with devicefacts.HostGrowth() as quiet:
        pass
    assert quiet.peak_bytes < 16 * 2**20


def test_the_bandwidth_probe_is_xla_on_the_device_not_numpy(monkeypatch):
    """The old floor was numpy's single-threaded host copy (93x above an H200's real time);
    numpy's copy is made impossible here and the bandwidth is still measured, by XLA."""

    def no_numpy_copy(*_a, **_k):
        raise AssertionError("the floor must not come from a numpy copy")

    monkeypatch.setattr(np, "copyto", no_numpy_copy)
    gbs, method = devicefacts.measure_bandwidth(16 * 2**20, repeat=2)
    assert gbs > 0.5 and method.startswith(("a jitted in-place copy", "a jitted sum"))


def test_rates_are_measured_once_and_say_where(fake_devices):
    saved = devicefacts._RATES.get("cpu")
    devicefacts.set_rates(None)
    try:
        with fake_devices("gpu"):
            r = devicefacts.rates(64 * 2**20)
            assert devicefacts.rates() is r and devicefacts.rates_measured()
        assert not devicefacts.rates_measured()  # each set has its own rates
        assert r.device == "cuda:0" and r.probe_bytes == 16 * 2**20
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
    # the emulated CPU set beside a GPU the process holds: no "restart without it" advice
    assert devicefacts.accelerator_hints("cpu", ("gpu", "cpu")) == []


def test_the_unavailable_platform_message_names_backends_and_the_install():
    err = RuntimeError(
        "Unable to initialize backend 'rocm': Backend 'rocm' is not in the list of known "
        "backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' to ...)"
    )
    text = devicefacts.unavailable_message("gpu", err)
    assert "JAX cannot start the GPU here" in text and "set JAX_PLATFORMS" not in text
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
    assert f"cannot start the {platform.upper()} here" in line
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
    assert "cannot start the GPU here" in text and "jax[cuda13]==" in text
    assert "--platform cpu" in text


def _jax_said(row: dict) -> RuntimeError:
    """What JAX raised in the doctor's subprocess on the TPU, from its one line."""
    said = row["stderr"].split("(JAX said: ", 1)[1]
    return RuntimeError(said.rsplit(").", 1)[0] + ")")


def test_a_chip_held_by_another_process_is_said_in_one_true_line():
    """On the v5e, every command beside a process holding the chip said 'JAX cannot start
    the auto platform ... For a auto, install ...' (doctor_tpu_v5e.json). Now: which process
    holds it, and what works beside it; never 'auto', never libtpu's sudo rm."""
    doctor = json.loads((TPU_FIXTURES / "doctor_tpu_v5e.json").read_text())
    err = _jax_said(doctor["commands"][0])
    assert "pid 1491" in str(err)
    text = devicefacts.unavailable_message("auto", err)
    assert text.startswith("The TPU here is in use by process 1491")
    assert "--platform cpu" in text and "one process at a time" in text
    assert "auto" not in text and "install" not in text and "\n" not in text
    lock = RuntimeError("Unable to initialize backend 'tpu': INTERNAL: Internal error when "
                        "accessing libtpu multi-process lockfile. Run \"$ sudo rm "
                        "/tmp/libtpu_lockfile\". (set JAX_PLATFORMS='' to ...)")  # fmt: skip
    text = devicefacts.unavailable_message("tpu", lock)
    assert "lock file is taken" in text and "sudo" not in text and "rm /tmp" not in text


def test_the_cli_beside_a_held_chip_said_one_line_naming_the_holder(monkeypatch):
    """What the v5e said (beside_cli_v5e.txt): libtpu's ABORTED lock-file message names no
    process; the line pmapviz printed names the one /proc showed holding the chip."""
    seen = (TPU_FIXTURES / "beside_cli_v5e.txt").read_text().splitlines()
    jax_said = next(line for line in seen if line.startswith("RuntimeError: "))
    printed = seen[seen.index("rc=2") + 1]
    monkeypatch.setattr(devicefacts, "tpu_holder", lambda: 5440)
    monkeypatch.setattr(devicefacts, "_command_of", lambda pid: " (python3 .tpu_check/hold.py 45)")
    err = RuntimeError(jax_said.removeprefix("RuntimeError: "))
    assert "pmapviz: " + devicefacts.unavailable_message("auto", err) == printed
    assert "sudo" not in printed and "auto" not in printed


def test_the_holder_is_found_by_its_open_device_files_when_jax_does_not_name_it(tmp_path):
    """On the v5e, libtpu's lock-file message named no process: the one with the chip's
    device files open is found in /proc (here a fake /proc: one bystander, one holder)."""
    for pid, target in ((111, "/dev/null"), (222, "/dev/vfio/0"), (os.getpid(), "/dev/accel0")):
        fd = tmp_path / str(pid) / "fd"
        fd.mkdir(parents=True)
        (fd / "3").symlink_to(target)
    assert devicefacts.tpu_holder(str(tmp_path)) == 222  # never this process itself
    (tmp_path / "222" / "fd" / "3").unlink()
    assert devicefacts.tpu_holder(str(tmp_path)) is None


def test_the_holder_is_named_by_its_command_without_markup():
    said = f"The TPU is already in use by process with pid {os.getpid()}. Not attempting"
    text = devicefacts.held_message(said)
    assert f"process {os.getpid()} (" in text and ")," in text  # its command, as /proc says
    assert not set(text.split("(", 1)[1]) & set("[]`*<>!")  # no Markdown from a command line
    assert devicefacts.held_message("some other failure") is None


def test_the_failing_backend_is_named_where_auto_was_asked():
    err = RuntimeError("Unable to initialize backend 'cuda': no supported devices found")
    text = devicefacts.unavailable_message("auto", err)
    assert text.startswith("JAX cannot start the GPU here") and "auto" not in text


STORIES = [
    lambda f: devicefacts.summary(f),
    lambda f: devicefacts.speed_story(f),
    lambda f: devicefacts.speed_story(f, 1),
    lambda f: devicefacts.speed_caveat(f, 4),
    lambda f: devicefacts.step_time_story(f, 256),
    lambda f: devicefacts.devices_note(f) or "",
    *(lambda f, k=k: devicefacts.say(f, k, 8) for k in devicefacts.WORDS if k != "restart beside"),
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
    with fake_devices("gpu", cpu=False):  # one set: what is said of the set beside is apart
        gpu = story(devicefacts.facts())
    with fake_devices("tpu", cpu=False):
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
    assert 'jax.config.update("jax_platforms", "cpu")' in setup  # CPU anywhere, beside a chip


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


def test_two_sets_are_told_apart_and_each_knows_the_other(fake_devices):
    """A one-chip TPU machine: the chip and 8 emulated CPU devices in one process."""
    with fake_devices("tpu", 1):
        tpu, cpu = devicefacts.every_set()
        assert (tpu.platform, tpu.local_count, cpu.platform, cpu.local_count) == (
            "tpu",
            1,
            "cpu",
            TEST_DEVICES,
        )
        assert tpu.beside and cpu.beside and tpu.sets == ("tpu", "cpu")
        assert devicefacts.beside(tpu) == cpu and devicefacts.beside(cpu) == tpu
        assert devicefacts.sets_sentence(cpu) == (
            f"This page runs on **{TEST_DEVICES} emulated CPU devices**; the server also holds "
            "1 TPU v5 lite device (switch at the top of the page)."
        )
        assert "pick it at the top of the page to time the real device" in (
            devicefacts.speed_story(cpu)
        )
        assert "Both device sets are **fixed" in devicefacts.say(tpu, "restart")
        assert "beside the TPU" in devicefacts.say(cpu, "restart")
        about, setup = devicefacts.export_header(cpu, 8)
        assert "1 TPU v5 lite device" in about and '"jax_platforms", "cpu"' in setup
        assert "--device-set cpu --devices 8" in devicefacts.more_devices(tpu, 8)
        assert tpu.exclusive and not cpu.exclusive
    assert devicefacts.facts().sets == ("cpu",) and devicefacts.beside(devicefacts.facts()) is None
    assert devicefacts.more_devices(devicefacts.facts(), 16) == "run it with --devices 16"
