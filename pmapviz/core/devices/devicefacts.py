"""Device facts: the one place that knows platforms, with its neighbours for the rest.

Every statement pmapviz makes about the machine comes from here, read from JAX or measured on
the device itself, never assumed. This module: **what the devices are** (:func:`facts`): the
platform (cpu, gpu, tpu), the kind, each device's name as JAX prints it, whether the devices
are emulated (CPU devices are thread pools that share the host's cores and memory) or real
accelerators with their own; the host's cores and sockets; **each device's memory**
(:func:`device_memory`, from ``Device.memory_stats()``, ``None`` where a backend reports none,
as on CPU); and **start-up** (:func:`start_backend`): the backend's first ``device_put`` (CUDA
takes about 2 s), timed once and kept out of every other timing. Beside it, one concept each:
:mod:`pmapviz.core.devices.hostmemory` (the host's memory and a process's growth),
:mod:`pmapviz.core.devices.devicerates`
(bandwidth, FLOP, sort and transfer rates, measured warm once per process, and the one timing loop),
:mod:`pmapviz.core.devices.accelerators` (what JAX could use but does not, and who holds a chip),
:mod:`pmapviz.core.xla.tracelanes` (which trace events belong to which device on CPU, GPU and TPU)
and
:mod:`pmapviz.core.devices.devicewords` (every platform sentence, so nothing tells the CPU story on
a GPU).

JAX is imported inside the functions that need it; importing this module starts nothing.
Tests swap the device list for fake GPU or TPU devices with :func:`override`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pmapviz.core.devices import accelerators, deviceset, hostmemory

MiB = 2**20


# ---------------------------------------------------------------- what the devices are
@dataclass(frozen=True)
class DeviceInfo:
    """One device as JAX reports it: its id, process, platform, kind and printed name."""

    id: int
    process_index: int
    platform: str
    kind: str
    label: str  # str(device), e.g. "cpu:3", "cuda:0"


@dataclass(frozen=True)
class Facts:
    """The devices of this process, as JAX reports them, and the host they run on."""

    platform: str  # "cpu", "gpu", "tpu" (the platform of this process's devices)
    device_kind: str  # e.g. "cpu", "NVIDIA H200", "TPU v5 lite"
    devices: tuple[DeviceInfo, ...]  # every global device, in jax.devices() order
    local_count: int  # this process's devices
    process_count: int
    jax_version: str
    physical_cores: int
    logical_cpus: int
    startup: Startup | None = None  # what starting JAX cost, measured once where it happened
    hints: tuple[str, ...] = ()  # what the machine has that JAX does not use
    sets: tuple[str, ...] = ()  # every device set this process holds (deviceset.names())

    @property
    def emulated(self) -> bool:
        """CPU devices are thread pools on the host: they share its cores and its memory."""
        return self.platform == "cpu"

    @property
    def shares_host_memory(self) -> bool:
        """Device arrays live in the host's RAM (one memory budget for both)."""
        return self.platform == "cpu"

    @property
    def name(self) -> str:
        """The platform's name: CPU, GPU, TPU (or its own name, upper-cased)."""
        return accelerators.PLATFORM_NAMES.get(self.platform, self.platform.upper())

    @property
    def labels(self) -> list[str]:
        """Each device's name as JAX prints it (``str(device)``: cpu:0, cuda:0, TPU_0 ...)."""
        return [d.label for d in self.devices]

    @property
    def exclusive(self) -> bool:
        """A TPU chip serves one process at a time: a second process that starts JAX on it
        fails while the first holds it (GPUs and CPU devices can be shared)."""
        return self.platform == "tpu"

    @property
    def beside(self) -> bool:
        """Whether this process holds another device set beside this one (an accelerator
        and emulated CPU devices at once)."""
        return len(self.sets) > 1

    @property
    def startup_s(self) -> float | None:
        """The first transfer to this set's first device, measured once at start."""
        return None if self.startup is None else self.startup.first_put_s(self.platform)

    def devices_phrase(self, n: int | None = None) -> str:
        """'8 emulated CPU devices', '1 NVIDIA H200 GPU', '8 TPU v5 lite devices'."""
        n = self.local_count if n is None else n
        s = "s" if n != 1 else ""
        if self.emulated:
            return f"{n} emulated CPU device{s}"
        kind = self.device_kind if self.device_kind.lower() not in (self.platform, "") else ""
        if self.platform == "gpu":
            return f"{n} {kind} GPU{s}" if kind else f"{n} GPU{s}"
        return f"{n} {kind} device{s}" if kind else f"{n} {self.name} device{s}"


_FACTS: dict[str, Facts] = {}
_LOCK = threading.Lock()


@contextlib.contextmanager
def override(devices: Sequence, cpu: bool = True) -> Iterator[None]:
    """For tests: describe ``jaxstartup`` (objects with ``id``, ``process_index``, ``platform``,
    ``device_kind``, ``memory_stats()`` and a ``str``) instead of JAX's. Fake accelerators
    come with this process's CPU devices beside them as a second set, as on a real machine
    with accelerators (``cpu=False``: without). Programs still run on JAX's real devices;
    every fact, budget and word comes from the fakes."""
    fakes = list(devices)
    sets = {fakes[0].platform: fakes}
    if cpu and deviceset.CPU not in sets:
        import jax

        sets[deviceset.CPU] = list(jax.local_devices(backend=deviceset.CPU))
    with deviceset.override(sets):
        with _LOCK:
            _FACTS.clear()
        try:
            yield
        finally:
            with _LOCK:
                _FACTS.clear()


def jax_devices(name: str | None = None) -> list:
    """Every global device of set ``name`` (default: the current set), or the test's fakes."""
    name = deviceset.current() if name is None else name
    if deviceset.overridden():
        return deviceset.described()[name]
    import jax

    return jax.devices(name)


def local_devices(name: str | None = None) -> list:
    """This process's devices of set ``name`` (default: the current set), or the fakes."""
    return deviceset.described()[deviceset.current() if name is None else name]


def facts(name: str | None = None) -> Facts:
    """What the devices of set ``name`` are (default: the set the current action runs on);
    read once per set, since JAX fixes them when its backend starts."""
    name = deviceset.current() if name is None else name
    with _LOCK:
        if name not in _FACTS:
            _FACTS[name] = _read_facts(name)
        return _FACTS[name]


def every_set() -> list[Facts]:
    """The facts of every set this process holds, accelerators first."""
    return [facts(name) for name in deviceset.names()]


def _read_facts(name: str) -> Facts:
    import jax

    devs = jax_devices(name)
    local = local_devices(name)
    first = local[0]
    return Facts(
        platform=first.platform,
        device_kind=first.device_kind,
        devices=tuple(
            DeviceInfo(d.id, d.process_index, d.platform, d.device_kind, str(d)) for d in devs
        ),
        local_count=len(local),
        process_count=1 + max(d.process_index for d in devs),
        jax_version=jax.__version__,
        physical_cores=physical_cores(),
        logical_cpus=logical_cpus(),
        startup=_STARTUP.get("startup"),
        hints=tuple(accelerators.accelerator_hints(first.platform, deviceset.names())),
        sets=deviceset.names(),
    )


# ---------------------------------------------------------------- the host
def free_local_port() -> int:
    """A free TCP port on 127.0.0.1, from the kernel (OSError where no socket may open)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_local_sockets() -> str | None:
    """Why this machine lets no process open a TCP socket on 127.0.0.1 (a sandbox can forbid
    them), in words; None where it can. A jax.distributed coordinator needs one, and so does a
    Streamlit server."""
    try:
        free_local_port()
    except OSError as err:
        return (
            f"this machine lets no process open a network socket, not even on 127.0.0.1 "
            f"({err.strerror or err}), and jax.distributed's coordinator needs one. "
            "A sandbox does this; on your own machine or a cluster it works."
        )
    return None


def logical_cpus() -> int:
    """The logical CPUs this process may run on: its affinity where the OS keeps one (Linux,
    Windows, FreeBSD), else every logical CPU (macOS)."""
    return len(_allowed_cpus())


def _allowed_cpus() -> list[int]:
    """The logical CPUs this process may run on, by number (psutil)."""
    import psutil

    process = psutil.Process()
    if hasattr(process, "cpu_affinity"):  # psutil has none on macOS
        try:
            allowed = process.cpu_affinity()
        except (psutil.Error, OSError):
            allowed = []
        if allowed:
            return list(allowed)
    return list(range(psutil.cpu_count() or 1))


def physical_cores() -> int:
    """The physical CPU cores (not hyper-threads) this process may run on: at least 1, at most
    :func:`logical_cpus`. With every CPU allowed, psutil's count of the machine's cores. With
    some (``taskset``, a container's cpuset), the cores those CPUs sit on, from Linux's CPU
    topology (:func:`_linux_cores`); where it has none, the machine's share of cores per CPU."""
    import psutil

    allowed = _allowed_cpus()
    every = psutil.cpu_count() or len(allowed)
    cores = psutil.cpu_count(logical=False) or every
    if len(allowed) < every:
        own = _linux_cores(allowed)
        cores = len(own) if own else -(-len(allowed) * cores // every)  # rounded up
    return max(1, min(cores, len(allowed)))


SYS_CPU = "/sys/devices/system/cpu"  # Linux's CPU topology (tests point it elsewhere)


def _linux_cores(cpus: Sequence[int]) -> set[str] | None:
    """The cores ``cpus`` sit on, each named by the list of its logical CPUs, as psutil itself
    counts the machine's on Linux; None where the topology cannot be read (not Linux). Read
    by hand: psutil counts the whole machine's cores and says nothing of which core a CPU is
    on."""
    cores = set()
    for cpu in cpus:
        topology = os.path.join(SYS_CPU, f"cpu{cpu}", "topology")
        for name in ("core_cpus_list", "thread_siblings_list"):  # the newer name, the older
            try:
                with open(os.path.join(topology, name), encoding="ascii") as f:
                    cores.add(f.read().strip())
                break
            except OSError:
                continue
        else:
            return None
    return cores


# ---------------------------------------------------------------- device memory
@dataclass(frozen=True)
class DeviceMemory:
    """One device's memory as its backend reports it (``Device.memory_stats()``)."""

    device: str  # its label
    limit: int | None  # bytes_limit: what JAX may use on it
    in_use: int  # bytes_in_use now
    peak: int  # peak_bytes_in_use since the process started

    @property
    def free(self) -> int | None:
        """Bytes free under the limit now; None where the backend gives no limit."""
        return None if self.limit is None else max(0, self.limit - self.in_use)


def device_memory(name: str | None = None) -> list[DeviceMemory] | None:
    """Each local device's memory now, of set ``name`` (default: the current set); None where
    the backend reports none (CPU: the devices use the host's memory, see
    :func:`host_memory`)."""
    out = []
    for d in local_devices(name):
        try:
            stats = d.memory_stats()
        except Exception:  # noqa: BLE001 - a backend without memory statistics
            stats = None
        if not stats:
            return None
        limit = stats.get("bytes_limit")
        out.append(
            DeviceMemory(
                str(d),
                None if limit is None else int(limit),
                int(stats.get("bytes_in_use", 0)),
                int(stats.get("peak_bytes_in_use", 0)),
            )
        )
    return out


def peak_device_bytes() -> int | None:
    """The highest ``peak_bytes_in_use`` of the local devices since the process started, or
    None where the backend reports no memory statistics (CPU)."""
    stats = device_memory()
    return None if stats is None else max(m.peak for m in stats)


# ---------------------------------------------------------------- start-up
@dataclass(frozen=True)
class Startup:
    """What starting JAX cost this process, measured once, where it happened, and kept out of
    every other timing and memory figure."""

    backend_s: float  # jax.devices(): the runtime starts here (a TPU v5e's: about 7 s)
    first_put: tuple[tuple[str, float], ...]  # (set, seconds of its first device_put)
    rss_before: int | None  # the process's RSS before the backend started (bytes)
    rss_after: int | None  # after every set's first transfer: host growth is read from here
    available_before: int  # the host's available memory (MemAvailable) before, and after
    available_after: int

    def first_put_s(self, name: str) -> float | None:
        """Seconds of set ``name``'s first ``device_put``; None where it was not measured."""
        return dict(self.first_put).get(name)

    @property
    def runtime_bytes(self) -> int | None:
        """What the backends mapped into this process while starting (a TPU's runtime: 13 GB
        of RSS, two 4 GiB windows onto the chip among them, which are not host memory)."""
        if self.rss_before is None or self.rss_after is None:
            return None
        return max(0, self.rss_after - self.rss_before)


_STARTUP: dict[str, Startup] = {}
RUNTIME_NOTE_BYTES = 2**30  # a runtime that maps this much at start gets a line (a TPU's: 13 GB)


def start_backend(clock: Callable[[], float] = time.perf_counter) -> Startup:
    """Start JAX's backends (``jax.devices()``: the runtime starts there), then make each
    device set's first ``device_put`` (CUDA starts its context there: 1.85 s on an H200),
    once per process, each timed where it happens, so that no later timing counts them.
    Reads the process's RSS and the host's available memory before and after: host-memory
    figures are growth over ``rss_after``. Raises what ``jax.devices()`` raises."""
    with _LOCK:
        if "startup" in _STARTUP:
            return _STARTUP["startup"]
    import jax
    import numpy as np

    rss_before, avail_before = hostmemory.rss_bytes(), hostmemory.host_memory().available
    t = clock()
    jax.devices()
    backend_s = clock() - t
    first = []
    for name in deviceset.names():
        t = clock()
        jax.block_until_ready(jax.device_put(np.zeros(1, np.float32), deviceset.devices(name)[0]))
        first.append((name, clock() - t))
    started = Startup(
        backend_s,
        tuple(first),
        rss_before,
        hostmemory.rss_bytes(),
        avail_before,
        hostmemory.host_memory().available,
    )
    with _LOCK:
        _STARTUP.setdefault("startup", started)
        _FACTS.clear()  # facts now carry it
        return _STARTUP["startup"]


def startup() -> Startup | None:
    """This process's start-up, once :func:`start_backend` has run."""
    return _STARTUP.get("startup")


def startup_lines(s: Startup) -> list[str]:
    """The start-up in words, once (the sidebar, ``jaxstartup``, ``doctor``)."""
    puts = ", ".join(
        f"{accelerators.PLATFORM_NAMES.get(name, name)} {sec:.2f} s" for name, sec in s.first_put
    )
    lines = [
        f"JAX start-up: {s.backend_s:.2f} s to start the runtime (`jax.devices()`); the "
        f"first transfer to each device set: {puts}. Measured once, kept out of every "
        "timing."
    ]
    if (s.runtime_bytes or 0) >= RUNTIME_NOTE_BYTES:
        lines.append(
            f"The runtime mapped {s.runtime_bytes / 2**30:,.1f} GiB into this process "
            "as it started (memory windows onto devices count there too); host "
            "memory figures are growth over it."
        )
    return lines


def warm_transfer(hosts: Sequence) -> float:
    """Copy every array of ``hosts`` (numpy) to the first device at once, as an
    implementation's placement does, and free them: the seconds it took. On a GPU the runtime
    grows its host staging memory on demand, one piece per copy in flight, so the first
    placement of a new size paid for that: about 0.4 ms per MB on an H200, for whichever
    implementation went first (pmap's 199 ms against vmap's 26 ms in the old sweep; with only
    the first input warmed, pmap still took 39 ms against 11). Timed transfers come after this
    one, so every implementation is measured in the same conditions."""
    import jax

    dev = local_devices_for_work()[0]
    t = time.perf_counter()
    placed = [jax.device_put(h, dev) for h in hosts]
    jax.block_until_ready(placed)
    seconds = time.perf_counter() - t
    for p in placed:
        p.delete()
    return seconds


# ---------------------------------------------------------------- what JAX could use but does not


# ---------------------------------------------------------------- measured rates


def local_devices_for_work() -> list:
    """The devices programs really run on: the current device set's (JAX's own, even under
    a test override; :func:`pmapviz.core.devices.deviceset.devices`)."""
    return deviceset.devices()


# ---------------------------------------------------------------- profiler traces


# ---------------------------------------------------------------- the words
