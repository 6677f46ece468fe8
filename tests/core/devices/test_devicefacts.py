"""Device facts: what the devices are (read from JAX, or from fake GPUs and TPUs), their memory
and start-up."""

import json
import os
from pathlib import Path

import jax
import numpy as np
import pytest

from pmapviz.core.devices import devicefacts
from tests.conftest import TEST_DEVICES
from tests.fakes import H200, TPU_FIXTURES, TPU_LIMIT


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
    s = devicefacts.Startup(
        info["jax_devices_s"],
        (("tpu", info["first_put_s"]), ("cpu", 0.01)),
        info["rss_mb_after_import"] * mb,
        info["rss_mb_after_first_put"] * mb,
        40 * 2**30,
        36 * 2**30,
    )
    assert s.runtime_bytes == (13810 - 370) * mb
    first, mapped = devicefacts.startup_lines(s)
    assert "7.14 s to start the runtime" in first and "TPU 0.63 s, CPU 0.01 s" in first
    assert "13.1 GiB into this process" in mapped and "growth over it" in mapped


def test_warm_transfer_copies_once_and_frees_it():
    host = np.ones((1000, 3), np.float32)
    before = {id(a) for a in jax.live_arrays()}  # others' arrays may be freed meanwhile
    assert devicefacts.warm_transfer(host) >= 0
    assert not {id(a) for a in jax.live_arrays()} - before  # its copy is gone


def _cpuinfo_cores(allowed: set[int]) -> int | None:
    """The physical cores among ``allowed`` as /proc/cpuinfo pairs them (physical id, core
    id): how pmapviz counted them before psutil; None where it names no cores (ARM, macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    cores, cpu, package = set(), None, None
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            cpu = int(value)
        elif key == "physical id":
            package = value
        elif key == "core id" and cpu in allowed:
            cores.add((package, value))
    return len(cores) or None


def test_the_hosts_cpus_are_what_linux_says_here():
    """Real oracles: the affinity, and the cores /proc/cpuinfo pairs its CPUs with."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if allowed is None:
        pytest.skip("no CPU affinity to compare with")
    assert devicefacts.logical_cpus() == len(allowed)
    cores = _cpuinfo_cores(allowed)
    if cores is not None:
        assert devicefacts.physical_cores() == cores
    assert 1 <= devicefacts.physical_cores() <= len(allowed)


class _Process:
    """psutil.Process as on Windows or FreeBSD: an affinity of ``AFFINITY``."""

    AFFINITY = [0, 1, 2, 3]

    def __init__(self, pid=None):
        self.pid = pid

    def cpu_affinity(self):
        return list(self.AFFINITY)


class _MacProcess:
    """psutil.Process on macOS: no cpu_affinity at all."""

    def __init__(self, pid=None):
        self.pid = pid


def _machine(monkeypatch, process, logical: int, physical: int | None, sys_cpu: Path) -> None:
    import psutil

    monkeypatch.setattr(psutil, "Process", process)
    counts = {True: logical, False: physical}
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: counts[logical])
    monkeypatch.setattr(devicefacts, "SYS_CPU", str(sys_cpu))


def test_a_mac_has_every_cpu_and_psutils_cores(monkeypatch, tmp_path):
    _machine(monkeypatch, _MacProcess, logical=12, physical=6, sys_cpu=tmp_path)
    assert (devicefacts.logical_cpus(), devicefacts.physical_cores()) == (12, 6)
    _machine(monkeypatch, _MacProcess, logical=12, physical=None, sys_cpu=tmp_path)
    assert devicefacts.physical_cores() == 12  # psutil cannot tell: every CPU counts


def test_an_affinity_without_a_topology_gets_its_share_of_the_cores(monkeypatch, tmp_path):
    """Windows: 4 of 8 logical CPUs (hyper-threaded, 4 cores), no topology to read."""
    _machine(monkeypatch, _Process, logical=8, physical=4, sys_cpu=tmp_path)
    assert (devicefacts.logical_cpus(), devicefacts.physical_cores()) == (4, 2)
    _machine(monkeypatch, _Process, logical=4, physical=4, sys_cpu=tmp_path)
    assert devicefacts.physical_cores() == 4  # every CPU: psutil's count as it is


@pytest.mark.parametrize("name", ["core_cpus_list", "thread_siblings_list"])
def test_an_affinity_on_linux_counts_the_cores_its_cpus_sit_on(monkeypatch, tmp_path, name):
    """taskset -c 0,4,1 on 4 cores of 2 threads each (CPU n and n+4 share a core): 2 cores,
    from the topology a newer (core_cpus_list) or older (thread_siblings_list) kernel gives."""
    for cpu in range(8):
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / name).write_text(f"{cpu % 4},{cpu % 4 + 4}\n")

    class Pinned(_Process):
        AFFINITY = [0, 4, 1]

    _machine(monkeypatch, Pinned, logical=8, physical=4, sys_cpu=tmp_path)
    assert (devicefacts.logical_cpus(), devicefacts.physical_cores()) == (3, 2)
    Pinned.AFFINITY = [0, 1, 2]
    assert devicefacts.physical_cores() == 3
