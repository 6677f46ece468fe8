"""Device facts: the one place that knows platforms.

Every statement pmapviz makes about the machine comes from here, read from JAX or measured on
the device itself, never assumed:

* **what the devices are** (:func:`facts`): the platform (cpu, gpu, tpu), the kind, each
  device's name as JAX prints it, whether the devices are emulated (CPU devices are thread
  pools that share the host's cores and memory) or real accelerators with their own;
* **memory** (:func:`device_memory`, :func:`host_memory`): each device's limit, bytes in use
  and peak from ``Device.memory_stats()`` (``None`` where a backend reports none, as on CPU),
  and the host's total and available memory;
* **measured rates** (:func:`rates`): the device's memory bandwidth, the faster of a jitted
  copy (bytes read + written) and a jitted sum (bytes read) on one device, its FLOP rate from
  a jitted matmul, and the host-to-device transfer rate; all warm, with
  ``block_until_ready``, once per process;
* **start-up** (:func:`start_backend`): the backend's first ``device_put`` (CUDA takes about
  2 s), timed once and kept out of every other timing;
* **profiler traces** (:func:`trace_planes`, :func:`event_lane`): which events belong to which
  device on CPU (``args.device_ordinal``), GPU (a ``/device:GPU:N`` process) and TPU
  (``/device:TPU:N``);
* **the words** for all of it (:func:`speed_story` and friends), so no page, command, budget
  or exported script tells the CPU story on a GPU.

JAX is imported inside the functions that need it; importing this module starts nothing.
Tests swap the device list for fake GPU or TPU devices with :func:`override`.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz import deviceset
from pmapviz.settings import digits_or

PLATFORM_NAMES = {"cpu": "CPU", "gpu": "GPU", "tpu": "TPU"}
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
        return PLATFORM_NAMES.get(self.platform, self.platform.upper())

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
    """For tests: describe ``devicesetup`` (objects with ``id``, ``process_index``, ``platform``,
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
        hints=tuple(accelerator_hints(first.platform, deviceset.names())),
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
    """The logical CPUs this process may run on (its affinity; the CPU count off Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def physical_cores() -> int:
    """Physical CPU cores available to this process (not hyper-threads), best effort."""
    try:
        allowed = os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        allowed = set(range(os.cpu_count() or 1))
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return len(allowed)
    cores, proc = set(), None
    phys = core = None
    for line in text.splitlines() + [""]:
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "processor":
            proc = int(value)
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
        elif not line.strip() and proc is not None:
            if proc in allowed:
                cores.add((phys, core) if core is not None else ("p", proc))
            proc = phys = core = None
    return len(cores) or len(allowed)


@dataclass(frozen=True)
class HostMemory:
    """The host's RAM in bytes: total, and available now."""

    total: int
    available: int  # what the OS says is available now (MemAvailable)


def host_memory() -> HostMemory:
    """The host's RAM: total and available now, from /proc/meminfo (4 GiB if unreadable)."""
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    fallback = 4 * 1024**3
    return HostMemory(found.get("MemTotal", fallback), found.get("MemAvailable", fallback))


def rss_bytes() -> int | None:
    """This process's resident memory now (``/proc/self/statm``), or None where unreadable.
    On a TPU it counts the chip's memory windows the runtime maps in (see :class:`Startup`):
    read it as growth over a baseline, never as the process's own use."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class HostGrowth:
    """The peak growth of this process's RSS during a block (``with HostGrowth() as g:``,
    then ``g.peak_bytes``): sampled every ``interval`` s on a thread and at both ends, over
    the RSS at its start. Other sessions' work in the same process counts too; where RSS
    cannot be read, ``peak_bytes`` is None."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.start: int | None = None
        self.peak: int | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        now = rss_bytes()
        if now is not None and self.peak is not None:
            self.peak = max(self.peak, now)

    def _watch(self) -> None:
        while not self._done.wait(self.interval):
            self._sample()

    def __enter__(self) -> HostGrowth:
        self.start = self.peak = rss_bytes()
        if self.start is not None:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="pmapviz-rss")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    @property
    def peak_bytes(self) -> int | None:
        """How far the RSS rose above its value at the start, at its highest."""
        if self.start is None or self.peak is None:
            return None
        return max(0, self.peak - self.start)


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

    rss_before, avail_before = rss_bytes(), host_memory().available
    t = clock()
    jax.devices()
    backend_s = clock() - t
    first = []
    for name in deviceset.names():
        t = clock()
        jax.block_until_ready(jax.device_put(np.zeros(1, np.float32), deviceset.devices(name)[0]))
        first.append((name, clock() - t))
    started = Startup(
        backend_s, tuple(first), rss_before, rss_bytes(), avail_before, host_memory().available
    )
    with _LOCK:
        _STARTUP.setdefault("startup", started)
        _FACTS.clear()  # facts now carry it
        return _STARTUP["startup"]


def startup() -> Startup | None:
    """This process's start-up, once :func:`start_backend` has run."""
    return _STARTUP.get("startup")


def startup_lines(s: Startup) -> list[str]:
    """The start-up in words, once (the sidebar, ``devicesetup``, ``doctor``)."""
    puts = ", ".join(f"{PLATFORM_NAMES.get(name, name)} {sec:.2f} s" for name, sec in s.first_put)
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
_PLUGINS = {
    "gpu": ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_rocm7_plugin"),
    "tpu": ("libtpu",),
}


def backends_installed() -> list[str]:
    """The platforms this JAX installation can start: cpu always, gpu or tpu when their
    plugin is installed (found without importing it)."""
    have = ["cpu"]
    for platform, modules in _PLUGINS.items():
        if any(importlib.util.find_spec(m) is not None for m in modules):
            have.append(platform)
    return have


def accelerators_present() -> list[str]:
    """Accelerators the machine itself shows (device files), whatever JAX can use."""
    found = []
    if glob.glob("/dev/nvidia[0-9]*"):
        found.append("gpu")
    if glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"):
        found.append("tpu")
    return found


def install_commands(platform: str) -> list[str]:
    """The pip commands that install the accelerator build of the pinned JAX."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        version = "0.10.2"
    if platform == "tpu":
        return [f".venv/bin/pip install 'jax[tpu]=={version}'"]
    return [
        f".venv/bin/pip install 'jax[cuda12]=={version}'  # CUDA 12 driver",
        f".venv/bin/pip install 'jax[cuda13]=={version}'  # CUDA 13 driver",
    ]


def install_advice(platform: str) -> str:
    """How to install the accelerator build of the pinned JAX, in one sentence."""
    return " or ".join(c.split("  #")[0] for c in install_commands(platform))


def accelerator_hints(platform: str, held: Sequence[str] = ()) -> list[str]:
    """A line per accelerator the machine has but this process does not use (``held``: the
    device sets this process has; an accelerator among them is in use, beside the CPU set)."""
    if platform != "cpu":
        return []
    hints = []
    installed = backends_installed()
    for acc in (a for a in accelerators_present() if a not in held):
        name = PLATFORM_NAMES[acc]
        if acc in installed:
            hints.append(
                f"This machine has a {name} and JAX can use it, but this server runs "
                f"on CPU devices (--platform cpu). Restart without it to use the {name}."
            )
        else:
            hints.append(
                f"This machine has a {name}, but this JAX is the CPU-only build. "
                f"Install the accelerator build: {install_advice(acc)}, then restart."
            )
    return hints


_BACKEND = re.compile(r"Unable to initialize backend '([a-z0-9_]+)'")
_BACKEND_PLATFORM = {"cuda": "gpu", "rocm": "gpu", "gpu": "gpu", "tpu": "tpu", "cpu": "cpu"}
_HELD_BY = re.compile(r"in use by process with pid ([0-9]{1,10})")
_JAX_ADVICE = re.compile(r"\s*\((set JAX_PLATFORMS|you may need to uninstall).*$")


def unavailable_message(platform: str, error: BaseException | None = None) -> str:
    """One clear paragraph for a platform JAX cannot start here, naming the platform that
    failed (from JAX's own message where ``platform`` is "auto"). A TPU that another process
    holds gets :func:`held_message` instead: that is no missing installation."""
    said = _JAX_ADVICE.sub("", str(error).splitlines()[0]) if error and str(error) else ""
    failed = _BACKEND.search(said)
    if platform == "auto" and failed:
        platform = _BACKEND_PLATFORM.get(failed.group(1), failed.group(1))
    if held := held_message(said):
        return held
    said = re.sub(r"\s*Run \"?\$? ?sudo rm[^.]*\.?", "", said)  # never relay a harmful fix
    why = f" (JAX said: {said[:200]})" if said else ""
    have = ", ".join(backends_installed())
    if platform == "auto":
        return (
            f"JAX cannot start its backend here{why}. Backends this JAX installation has: "
            f"{have}. Start with --platform cpu (emulated CPU devices)."
        )
    name = PLATFORM_NAMES.get(platform, platform.upper())
    files = "/dev/nvidia*" if platform == "gpu" else "/dev/accel*"
    machine = (
        f"This machine does show a {name} ({files})."
        if platform in accelerators_present()
        else f"This machine shows no {name} device files ({files}) either."
    )
    return (
        f"JAX cannot start the {name} here{why}. Backends this JAX installation has: {have}. "
        f"{machine} For a {name}, install the accelerator build of the pinned JAX: "
        f"{install_advice(platform)}; or start with --platform cpu (emulated CPU devices)."
    )


def held_message(said: str) -> str | None:
    """When JAX's message says another process holds the TPU (a chip serves one process at a
    time): one line naming the holder where JAX does, and what works beside it; else None.
    libtpu's own advice to delete its lock file is never passed on: the holder is alive."""
    found = _HELD_BY.search(said)
    if found is None and "libtpu_lockfile" not in said:
        return None
    pid = int(found.group(1)) if found else tpu_holder()
    holder = (
        f"process {pid}{_command_of(pid)}"
        if pid
        else "another process (libtpu's lock file is taken)"
    )
    return (
        f"The TPU here is in use by {holder}, and a TPU chip serves one process at a time. "
        "Beside it, run with --platform cpu (emulated CPU devices); if that process is a "
        "pmapviz server, its own pages run on the TPU."
    )


_TPU_FILES = ("/dev/accel", "/dev/vfio/", "/tmp/libtpu_lockfile")


def tpu_holder(proc: str = "/proc") -> int | None:
    """The process (of those this user may read) that has a TPU's device files or libtpu's
    lock file open, when JAX's message does not name it; None when none is found."""
    me = os.getpid()
    for fd_dir in glob.glob(os.path.join(proc, "[0-9]*", "fd")):
        pid = int(fd_dir.split(os.sep)[-2])
        if pid == me:
            continue
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:  # another user's process, or one that ended meanwhile
            continue
        if any(link.startswith(_TPU_FILES) for link in links):
            return pid
    return None


def _command_of(pid: int) -> str:
    """' (streamlit run app.py)' for a process this user may read, else '': its program's
    name and first arguments, letters, digits and ``./=-`` only (no Markdown can form)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = [w.decode(errors="replace") for w in f.read().split(b"\0") if w][:5]
    except OSError:
        return ""
    if not words:
        return ""
    words[0] = os.path.basename(words[0])
    text = re.sub(r"[^A-Za-z0-9 ._/=-]", "?", " ".join(words))
    return f" ({text[:60]}{'...' if len(text) > 60 else ''})"


# ---------------------------------------------------------------- measured rates
@dataclass(frozen=True)
class Rates:
    """What the device itself was measured to do (warm, ``block_until_ready``)."""

    bandwidth_gbs: float  # memory bandwidth: bytes moved per second / 1e9
    flops_per_s: float
    transfer_gbs: float = 0.0  # host to device (one device_put); 0: not measured
    device: str = ""  # the device measured
    probe_bytes: int = 0
    method: str = ""  # which probe gave the bandwidth, in words
    sort_s: float = 0.0  # seconds per compare (n log2 n) of XLA's sort; 0: not measured

    def call_s(
        self, flops: float, nbytes: float, dispatch_s: float = 0.0, compares: float = 0.0
    ) -> float:
        """One call moving ``nbytes``, doing ``flops`` and ``compares`` sort compares: each
        cost, plus dispatch. XLA's cost analysis counts a compare as a FLOP, but on a CPU one
        costs about 100 multiply-adds, so sorts are charged at their own measured rate."""
        return (
            flops / self.flops_per_s
            + nbytes / (self.bandwidth_gbs * 1e9)
            + dispatch_s
            + compares * self.sort_s
        )

    def bytes_s(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` at the measured memory bandwidth."""
        return nbytes / (self.bandwidth_gbs * 1e9)

    def transfer_s(self, nbytes: float) -> float:
        """Host to device; the memory bandwidth where the transfer rate was not measured."""
        return nbytes / ((self.transfer_gbs or self.bandwidth_gbs) * 1e9)

    def describe(self) -> str:
        """The measured rates in words: "cpu:0's measured 12.3 GB/s, 45.6 GFLOP/s"."""
        sort = f", a sort compare in {self.sort_s * 1e9:,.1f} ns" if self.sort_s else ""
        return (
            f"{self.device}'s measured {self.bandwidth_gbs:,.1f} GB/s, "
            f"{self.flops_per_s / 1e9:,.1f} GFLOP/s{sort}"
        )

    def floor_words(self) -> str:
        """How the floor was measured, for the page."""
        return (
            f"{self.bandwidth_gbs:,.1f} GB/s, measured on {self.device} with XLA: "
            f"{self.method} of {self.probe_bytes / MiB:,.0f} MiB, warm, timed with "
            "block_until_ready"
        )


def timed_calls(
    run: Callable[[], Any],
    repeat: int,
    clock: Callable[[], float] = time.perf_counter,
    warm: bool = True,
    free: bool = True,
) -> tuple[Any, list[float]]:
    """The one timing loop every measurement in pmapviz uses: a warm-up call (not timed;
    ``warm=False`` when the caller made it), then ``repeat`` calls of ``run``, each timed to
    ``block_until_ready``. With ``free``, the previous output's buffers are deleted before the
    next call, so one output exists at a time (not for a ``run`` that feeds its output back,
    such as a donated in-place update). Returns the last output and the seconds per call."""
    import jax

    out, times = (run() if warm else None), []
    for _ in range(repeat):
        if out is not None:
            jax.block_until_ready(out)
            if free:
                for leaf in jax.tree.leaves(out):
                    if isinstance(leaf, jax.Array):  # freed now, not when the runtime gets to it
                        leaf.delete()
        t = clock()
        out = run()
        jax.block_until_ready(out)
        times.append(clock() - t)
    return out, times


def best_time(
    run: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The fastest of ``repeat`` warm calls of ``run`` (:func:`timed_calls`)."""
    return max(min(timed_calls(run, repeat, clock, free=False)[1]), 1e-9)


def measure_bandwidth(
    nbytes: int, repeat: int = 5, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, str]:
    """GB/s of the first device's memory and the probe that gave it: the faster of a jitted
    in-place copy (x + 1 with x donated: bytes read + written) and a jitted sum (bytes read)
    of ``nbytes``, made on the device (no host copy) and held once: the probe's peak is one
    array. Both probes, because which is faster depends on the device (2 CPU cores here: 43
    GB/s in place, 30 GB/s reading 256 MiB; a copy into a fresh buffer gave 9 GB/s, its time
    spent faulting the new pages in), and a floor must be below every real run."""
    import jax
    import jax.numpy as jnp

    dev = local_devices_for_work()[0]
    held = [jnp.ones(nbytes // 4, jnp.float32, device=dev)]
    add_one = jax.jit(lambda v: v + 1.0, donate_argnums=0)
    read = jax.jit(jnp.sum)

    def in_place():
        held[0] = add_one(held[0])
        return held[0]

    copy_gbs = 2 * nbytes / best_time(in_place, repeat, clock) / 1e9
    read_gbs = nbytes / best_time(lambda: read(held[0]), repeat, clock) / 1e9
    held.clear()
    if copy_gbs >= read_gbs:
        return copy_gbs, "a jitted in-place copy (2 x bytes / time; a jitted sum read more slowly)"
    return read_gbs, "a jitted sum (bytes read / time; a jitted in-place copy moved fewer)"


def measure_flops(
    n: int = 512, repeat: int = 5, clock: Callable[[], float] = time.perf_counter
) -> float:
    """FLOP/s of an (n, n) @ (n, n) float32 matmul, jitted on the first device."""
    import jax
    import jax.numpy as jnp

    a = jax.device_put(jnp.ones((n, n), jnp.float32), local_devices_for_work()[0])
    mm = jax.jit(lambda x: x @ x).lower(a).compile()
    return 2 * n**3 / best_time(lambda: mm(a), repeat, clock)


def measure_sort(
    n: int = 1 << 18, repeat: int = 2, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Seconds per compare of a jitted ``jnp.sort`` of ``n`` shuffled float32 on the first
    device: its time over n log2 n (13-20 ns here on a 2-core CPU, where a FLOP of a matmul
    takes 0.006 ns; 0.1 ns on a TPU v5e)."""
    import math

    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jax.device_put(np.random.default_rng(0).random(n, np.float32), local_devices_for_work()[0])
    srt = jax.jit(jnp.sort).lower(x).compile()
    return best_time(lambda: srt(x), repeat, clock) / (n * math.log2(n))


def measure_transfer(
    nbytes: int = 16 * MiB, repeat: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """GB/s of a host-to-device copy (``device_put`` of a numpy array) to the first device."""
    import jax
    import numpy as np

    host = np.ones(nbytes // 4 + 1, np.float32)[1:]  # off the 64-byte boundary: a real copy
    dev = local_devices_for_work()[0]
    return nbytes / best_time(lambda: jax.device_put(host, dev), repeat, clock) / 1e9


def local_devices_for_work() -> list:
    """The devices programs really run on: the current device set's (JAX's own, even under
    a test override; :func:`pmapviz.deviceset.devices`)."""
    return deviceset.devices()


_RATES: dict[str, Rates] = {}  # per device set
_RATES_LOCK = threading.Lock()


def probe_nbytes(budget: int, own_memory: bool = False) -> int:
    """The bandwidth probe's array (its peak: one such array): 128 MiB where the devices use
    the host's memory (beyond a CPU's caches), 1 GiB on a device with its own memory (an H200
    copies 128 MiB in ~0.1 ms, close enough to a call's dispatch to read 1.6 TB/s of its 4.8),
    or a quarter of a smaller budget; at least 16 MiB, so the copy outlasts the timer."""
    cap = 1024 * MiB if own_memory else 128 * MiB
    return max(16 * MiB, min(cap, budget // 4))


def rates(budget: int | None = None) -> Rates:
    """The current device set's measured rates, measured on the first call (with a probe
    sized by ``budget``, see :func:`probe_nbytes`) and then remembered."""
    name = deviceset.current()
    with _RATES_LOCK:
        if name not in _RATES:
            start_backend()
            own = not facts().shares_host_memory
            nbytes = probe_nbytes(budget if budget is not None else 4096 * MiB, own)
            gbs, method = measure_bandwidth(nbytes)
            _RATES[name] = Rates(
                gbs,
                measure_flops(),
                measure_transfer(),
                str(local_devices()[0]),
                nbytes,
                method,
                measure_sort(),
            )
        return _RATES[name]


def rates_measured() -> bool:
    """Whether the current device set's rates are measured (their probe costs memory once)."""
    return deviceset.current() in _RATES


def set_rates(value: Rates | None) -> None:
    """Replace (or forget, with None) the measured rates: for tests and benchmarks. Every
    set's rates are forgotten; ``value`` becomes the current set's."""
    with _RATES_LOCK:
        _RATES.clear()
        if value is not None:
            _RATES[deviceset.current()] = value


# ---------------------------------------------------------------- profiler traces
_PLANE = re.compile(r"^/device:(GPU|TPU):([0-9]+)$")
OPS_THREAD = "XLA Ops"  # the line of a TPU plane that holds one event per HLO op


def trace_planes(events: Sequence[dict]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """(pid -> lane label, (pid, tid) -> thread name) from a trace's metadata events. A GPU
    plane is a process named ``/device:GPU:N`` (N: the local CUDA ordinal, not JAX's global
    id), a TPU one ``/device:TPU:N``; SparseCore planes (``/device:TPU:N SparseCore M``) and
    the host (``/host:CPU``) are not device lanes."""
    planes, threads = {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = str(e.get("args", {}).get("name", ""))
        if e.get("name") == "process_name" and (m := _PLANE.match(name)):
            planes[e.get("pid")] = lane_label(m.group(1), int(m.group(2)))
        elif e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = name
    return planes, threads


CPU_TRACE_PLATFORM = "CPU"  # a CPU trace marks device events with args.device_ordinal


def lane_label(platform: str, ordinal: int) -> str:
    """A trace lane's label in every trace format: platform and local ordinal (``gpu:0``)."""
    return f"{platform.lower()}:{ordinal}"


def event_lane(
    event: dict, planes: dict[int, str], threads: dict[tuple[int, int], str]
) -> tuple[str, str] | None:
    """(lane label, HLO op) of a complete event that ran an HLO op on a device, else None.
    CPU: any event with ``args.device_ordinal`` and ``args.hlo_op`` (lane ``cpu:N``). GPU and
    TPU: an event under a device plane with ``args.hlo_op``, or (TPU) on its "XLA Ops" line.
    Never raises: an event whose ``args`` is no object, whose ordinal is no plain number
    (at most 9 digits) or whose op or ids are no plain values is not a device op's."""
    if event.get("ph") != "X":
        return None
    args = event.get("args")
    args = args if isinstance(args, dict) else {}
    pid, tid = event.get("pid"), event.get("tid")
    if not (_plain(pid) and _plain(tid)):
        return None
    lane = planes.get(pid)
    if lane is None:
        ordinal = args.get("device_ordinal")
        if "hlo_op" in args and _plain(args["hlo_op"]) and _ordinal(ordinal) is not None:
            return lane_label(CPU_TRACE_PLATFORM, _ordinal(ordinal)), str(args["hlo_op"])
        return None
    if "hlo_op" in args:
        return (lane, str(args["hlo_op"])) if _plain(args["hlo_op"]) else None
    name = event.get("name", "")
    if threads.get((pid, tid)) == OPS_THREAD and _plain(name):
        return lane, str(name)
    return None


def _plain(value: Any) -> bool:
    """A trace's value that is safe to hash and print: text, a bool, None or a number that
    is no longer than 20 digits (not a list or an object, which may nest deep)."""
    if isinstance(value, int):
        return abs(value) < 10**20
    return value is None or isinstance(value, str | float)


def _ordinal(value: Any) -> int | None:
    """A CPU device's ordinal as a trace writes it (``"3"`` or 3): at most 9 digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < 10**9 else None
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value):
        return int(value)
    return None


def lane_order(label: str) -> tuple[str, int]:
    """Sort key of a lane label: platform, then its number (cpu:2 before cpu:10)."""
    platform, _, number = label.partition(":")
    return platform, digits_or(number)


# ---------------------------------------------------------------- the words
def beside(f: Facts) -> Facts | None:
    """The other device set of this process (the accelerators beside the emulated CPU
    devices, or those beside the accelerators), or None on a one-set machine."""
    others = [name for name in f.sets if name != f.platform]
    return facts(others[0]) if others else None


def sets_sentence(f: Facts) -> str:
    """Which set a page runs on, and the other one this server holds (empty on one set)."""
    other = beside(f)
    if other is None:
        return ""
    return (
        f"This page runs on **{f.devices_phrase()}**; the server also holds "
        f"{other.devices_phrase()} (switch at the top of the page)."
    )


def beside_sentences(f: Facts) -> list[str]:
    """What pmapviz says of the set beside ``f``'s on a page running on ``f`` (the words of
    the other set are true there): the sets sentence, the sidebar's restart and tour step 1."""
    if beside(f) is None:
        return []
    return [sets_sentence(f), devices_story(f, f.local_count), say(f, "restart")]


def summary(f: Facts) -> str:
    """One line: what the devices are."""
    share = f", sharing {f.physical_cores} physical CPU core(s)" if f.emulated else ""
    return f"{f.devices_phrase()}{share}"


def speed_story(f: Facts, n: int | None = None) -> str:
    """Why more devices do or do not make things faster here (Timing lab, tour)."""
    n = f.local_count if n is None else n
    if f.emulated:
        other = beside(f)
        real = (
            f" This server also holds {other.devices_phrase()}: pick it at the top of the "
            "page to time the real device."
            if other
            else ""
        )
        return (
            f"**This machine: {f.physical_cores} physical CPU core(s), {f.devices_phrase(n)}.** "
            "Emulated devices share those cores, and `jit` on a single device already uses all "
            "of them, so on a CPU more devices do **not** make the work faster: they add "
            "per-call overhead and, for collectives, copies. On real GPUs or TPUs each device "
            "has its own compute and memory, and pmap does speed up (sub-linearly, once "
            f"communication offsets the gain).{real}"
        )
    if n == 1:
        return (
            f"**This machine: {f.devices_phrase(n)}, a real accelerator.** With one device "
            "there is nothing to split: pmap, `jit` + `NamedSharding` and `shard_map` all run "
            "on the same chip, so the comparison shows each API's own overhead and the transfer "
            "from the host. A speed-up needs more devices, each with its own compute and memory."
        )
    return (
        f"**This machine: {f.devices_phrase(n)}, real devices.** Each has its own compute and "
        "memory, so splitting the work **should speed it up**, limited by communication: "
        "collectives cross the interconnect, and a small problem is dominated by per-call "
        "overhead. The ideal line (k devices, k times faster) is a real target here."
    )


def speed_caveat(f: Facts, n: int) -> str:
    """A sentence on what a timing on n devices can show here (Live, Training)."""
    if f.emulated:
        return (
            f"On {f.physical_cores} CPU core(s) shared by {f.devices_phrase(n)}, expect no "
            "speed-up over one device (see the Timing lab)."
        )
    if n == 1:
        return (
            f"On {f.devices_phrase(1)} there is nothing to split; the Timing lab compares the "
            "APIs' overheads."
        )
    return (
        f"On {f.devices_phrase(n)} each device has its own compute: expect a speed-up, "
        "limited by communication (see the Timing lab)."
    )


def step_time_story(f: Facts, batch: int) -> str:
    """What time per training step versus devices should show here."""
    head = f"The same global batch of {batch:,} split over 1, 2, 4, ... devices. "
    if f.emulated:
        return head + (
            f"On this machine's {f.physical_cores} CPU core(s) the emulated devices "
            "share the cores, so more devices add all-reduce and dispatch overhead "
            "rather than speed; on real accelerators the step time falls until "
            "communication dominates."
        )
    return head + (
        f"These are {f.devices_phrase()}: each has its own compute, so the step "
        "time should fall with more devices until the gradient all-reduce "
        "dominates."
    )


# Two-way sentences: (on emulated CPU devices, on real GPUs or TPUs). Fields: {n} devices,
# {cores} physical cores, {name} GPU or TPU, {phrase} the devices in words.
WORDS: dict[str, tuple[str, str]] = {
    "honesty": (  # the home page: what speed the devices can show
        "emulated CPU devices share this machine's cores, so they show the *mechanics* of "
        "pmap, not a speed-up. Real accelerators do speed up.",
        "this server runs on {phrase}: real devices with their own compute, so the Timing lab "
        "shows real speed-ups and real communication costs.",
    ),
    "wire": (  # Collectives: what crosses a wire
        "Latency and on-device copies are ignored; on emulated CPU devices nothing crosses a wire.",
        "Latency and on-device copies are ignored; on these {name}s the bytes cross the "
        "interconnect between devices.",
    ),
    "trace": (  # Compiled: what a collective's bar means
        "on emulated CPU devices a collective is a copy between threads, so its measured time "
        "is mostly waiting for the slowest device.",
        "on {name}s a collective is a kernel that moves data over the interconnect; its time "
        "includes waiting for the other devices to arrive.",
    ),
    "devices info": (  # tour step 1's closing line
        "These {n} devices share {cores} physical core(s): they show how pmap works, not how "
        "fast it is.",
        "These are real {name}s: each has its own memory and compute, so they show how pmap "
        "works and how fast it is.",
    ),
    "devices title": ("Emulating devices on a CPU", "Your {name} devices"),  # tour step 1
    "restart": (  # the sidebar, above the restart command
        "The device count is **fixed for this server process**: JAX sets it when it starts. "
        "To use another count, stop the server and restart it:",
        "The devices are **fixed for this server process**: JAX found these {name}s when it "
        "started. To show another count, restart on CPU devices instead:",
    ),
    "restart beside": (  # the same, where the server holds an accelerator and CPU devices
        "Both device sets are **fixed for this server process**: JAX found the {real} and "
        "made the emulated CPU devices when it started. To emulate another count beside the "
        "{real_name}, restart the server:",
        "Both device sets are **fixed for this server process**: JAX found the {real} and "
        "made the emulated CPU devices when it started. To emulate another count beside the "
        "{real_name}, restart the server:",
    ),
}


def say(f: Facts, key: str, n: int | None = None) -> str:
    """The sentence ``key`` of :data:`WORDS` for these devices (``n``: how many are meant).
    Where the server holds two sets, ``"restart"`` says so (``"restart beside"``)."""
    other = beside(f)
    if key == "restart" and other is not None:
        key = "restart beside"
    cpu, real = WORDS[key]
    n = f.local_count if n is None else n
    accel = f if not f.emulated else other
    return (cpu if f.emulated else real).format(
        n=n,
        cores=f.physical_cores,
        name=f.name,
        phrase=f.devices_phrase(n),
        real=accel.devices_phrase() if accel else "",
        real_name=accel.name if accel else "",
    )


def devices_note(f: Facts) -> str | None:
    """The sidebar's note on what the devices are, when it matters."""
    other = beside(f)
    if f.emulated and other is not None:
        return (
            f"These {f.local_count} devices are emulated on {f.physical_cores} CPU core(s), "
            f"beside {other.devices_phrase()}: they show how pmap splits work over several "
            f"devices; the {other.name} shows how fast it runs."
        )
    if f.emulated and f.local_count > 1:
        return (
            f"These {f.local_count} devices are emulated on {f.physical_cores} CPU core(s). "
            "They share the cores, so more devices give no speed-up here; on real GPUs or "
            "TPUs they would."
        )
    if not f.emulated:
        return (
            f"{f.devices_phrase()}: real devices, each with its own memory and compute. "
            "Arrays on them are copied from the host (transfer), and collectives cross "
            "the interconnect."
        )
    return None


def devices_story(f: Facts, n: int) -> str:
    """Tour step 1: where the devices come from."""
    other = beside(f)
    emulated = f if f.emulated else other
    how = (
        f"JAX can pretend one CPU is several devices: this server asked for "
        f"**{emulated.local_count}** of them, before JAX started, with "
        f'`jax.config.update("jax_num_cpu_devices", {emulated.local_count})` (or '
        f"`XLA_FLAGS=--xla_force_host_platform_device_count={emulated.local_count}`). After "
        "JAX's first operation the count cannot change: it is fixed for the whole process."
        if emulated is not None
        else ""
    )
    if other is not None:
        real = other if f.emulated else f
        return (
            f"This server holds two device sets at once: the machine's own "
            f"**{real.devices_phrase()}**, and beside it emulated CPU devices for the "
            f"lessons that need several. {how} This step runs on **{f.devices_phrase(n)}**; "
            "switch at the top of the page. To emulate another count, restart the "
            "server:"
        )
    if f.emulated:
        return f"{how} To show another count, restart the server:"
    return (
        f"This server runs on **{f.devices_phrase(n)}**, the real devices JAX found when "
        "its backend started; the set is fixed for the whole process. To teach with more "
        "devices than the machine has, restart on CPU devices (up to 64):"
    )


def scaling_story(f: Facts, n: int) -> str:
    """Tour step 9."""
    head = (
        "More devices speed things up only when each has its own compute, and only until "
        "communication eats the gain: scaling is sublinear. "
    )
    if f.emulated:
        return head + (
            f"Here the {n} devices share {f.physical_cores} core(s), so expect no gain at all:"
        )
    if n == 1:
        return head + f"Here there is {f.devices_phrase(1)}: nothing to split, only overhead:"
    return head + f"Here the {f.devices_phrase(n)} each have their own compute: expect a gain:"


def workers_note(f: Facts) -> str | None:
    """Multi-process page: the local cluster's workers are CPU processes, whatever this is."""
    if f.emulated:
        return None
    return (
        f"This server runs on {f.devices_phrase()}, but the workers launched here are CPU "
        "processes (JAX_PLATFORMS=cpu), so that several of them can share one machine; on a "
        f"real cluster each process would drive its own {f.name}s."
    )


def export_header(f: Facts, n: int) -> tuple[str, str]:
    """(docstring lines, device set-up code) of an exported script that needs ``n`` devices."""
    if f.emulated:
        other = beside(f)
        held = (
            f" It was exported from a server with {other.devices_phrase()}; these lines "
            f"keep it on the CPU, so it also runs beside a process that holds the "
            f"{other.name}."
            if other
            else ""
        )
        return (
            f"Exported by pmapviz for JAX {f.jax_version}: {n} emulated CPU device(s).{held}\n"
            "To use a machine's GPUs or TPUs instead, delete the two jax.config lines.",
            'jax.config.update("jax_platforms", "cpu")  # CPU devices, also beside a GPU/TPU\n'
            f'jax.config.update("jax_num_cpu_devices", {n})'
            "  # before any other JAX call",
        )
    return (
        f"Exported by pmapviz for JAX {f.jax_version} on a {f.name} server "
        f"({f.device_kind}); it runs on {n} of the machine's {f.name}s.\n"
        f"Without {n} of them, emulate them on the CPU: run it with JAX_PLATFORMS=cpu and "
        f"XLA_FLAGS=--xla_force_host_platform_device_count={n}.",
        f'assert jax.device_count() >= {n}, f"needs {n} devices, found {{jax.devices()}}"',
    )


def more_devices(f: Facts, n: int) -> str:
    """How to get ``n`` devices for a command where ``f``'s set has fewer: advice this
    machine can follow (emulated CPU devices; beside an accelerator, that set)."""
    if f.emulated:
        return f"run it with --devices {n}"
    if beside(f) is not None:
        return f"run it on the emulated CPU devices with --device-set cpu --devices {n}"
    return f"run it on emulated CPU devices with --platform cpu --devices {n}"


def facts_json(f: Facts) -> dict:
    """The facts as plain JSON (the CLI, doctor)."""
    from dataclasses import asdict

    out = asdict(f)
    out["emulated"] = f.emulated
    out["count"] = len(f.devices)
    return out
