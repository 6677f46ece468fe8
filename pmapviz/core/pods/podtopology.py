"""A TPU slice this machine does not have, as libtpu describes it: its chips, their
coordinates, and the hosts (processes) they belong to.

``jax.experimental.topologies.get_topology_desc(name, platform="tpu")`` gives compile-only
``TpuDevice`` objects: enough to lower and compile, nothing to run. libtpu is the ``pods``
extra (``requirements-pods.txt``); :func:`availability` says, without importing it, whether
this machine can compile for a pod, and the one line that installs it where it can.

libtpu speaks up once, when it first loads: warnings about ``TPU_ACCELERATOR_TYPE`` and worker
hostnames that a machine without a chip cannot act on. That first load runs with the process's
stderr (file descriptor 2) sent to a file, under a lock, and what libtpu said is kept for
:func:`load_notes` (and shown only when the load fails). On a TPU machine the compile runs in
the process that holds the chip (a second process cannot load libtpu: its lockfile); on a machine
without a chip, libtpu's ``ALLOW_MULTIPLE_LIBTPU_LOAD`` lets every process compile.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
import tempfile
import threading
from dataclasses import dataclass

from pmapviz.core.base import valueparse
from pmapviz.core.devices import accelerators
from pmapviz.core.pods.tpuchips import Topology, parse_topology

REQUIREMENTS = "requirements-pods.txt"
MULTIPLE = "ALLOW_MULTIPLE_LIBTPU_LOAD"  # libtpu's own setting for several processes
INSTALL = "pip install 'libtpu==0.0.42.*'  # or: pip install -r requirements-pods.txt"
_LOCK = threading.Lock()
_CACHE: dict[str, Pod] = {}
_NOTES: list[str] = []


@dataclass(frozen=True)
class Chip:
    """One device of the slice (a chip, or one core of a v4 chip)."""

    id: int  # the device's id, as replica groups number devices
    coords: tuple[int, int, int]  # the chip's place in the slice
    core: int  # which core of its chip (v4: 0 or 1; else 0)
    host: int  # process_index: the host whose process holds it
    slice: int = 0  # slice_index: which slice of a multislice target (0: the only one)


@dataclass(frozen=True)
class Pod:
    """A loaded topology: the compile-only devices and what the pictures need of them."""

    topology: Topology
    devices: tuple  # jax TpuDevice objects, in libtpu's order
    chips: tuple[Chip, ...]

    @property
    def name(self) -> str:
        """The topology's name, 'v5e:4x4'."""
        return self.topology.name

    @property
    def n_devices(self) -> int:
        """Devices the compiler sees (v4: two a chip)."""
        return len(self.chips)

    @property
    def n_chips(self) -> int:
        """Physical chips (every slice's)."""
        return len({(c.slice, c.coords) for c in self.chips})

    @property
    def n_hosts(self) -> int:
        """Hosts (processes), from the devices' process_index."""
        return len({c.host for c in self.chips})

    @property
    def n_slices(self) -> int:
        """Slices joined over the data-center network, from the devices' slice_index."""
        return len({c.slice for c in self.chips})

    def slice_order(self, order: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """Per slice (by slice_index), the device ids of ``order`` that belong to it, in that
        order: where a multislice program's HLO numbers devices within one slice, its device k
        on slice s is ``slice_order(order)[s][k]``."""
        by_id = {c.id: c.slice for c in self.chips}
        return tuple(tuple(d for d in order if by_id[d] == s) for s in sorted(set(by_id.values())))

    @property
    def devices_per_chip(self) -> int:
        """1, or 2 where the compiler sees each core (v4)."""
        return self.n_devices // max(1, self.n_chips)

    def summary(self) -> str:
        """'v5e:4x4: 16 chips on 4 hosts (TPU v5e, 16 GiB HBM a chip)'; for several slices
        '2 x v5e:4x4: 2 slices over the data-center network, 32 chips on 8 hosts (...)'; with
        hosts as rented 'v5e:2x4 on 8-chip hosts: 8 chips on 1 host as ct5lp-hightpu-8t (...)'."""
        gen = self.topology.generation
        per = f", {self.devices_per_chip} devices a chip" if self.devices_per_chip > 1 else ""
        dcn = f"{self.n_slices} slices over the data-center network, " if self.n_slices > 1 else ""
        rented = f" as {self.topology.host_layout.machine_type}" if self.topology.host_chips else ""
        return (
            f"{self.name}: {dcn}{self.n_chips} chips on {self.n_hosts} host"
            f"{'s' if self.n_hosts != 1 else ''}{rented}{per} ({gen.title}, "
            f"{gen.hbm_gib:g} GiB HBM a chip)"
        )


@dataclass(frozen=True)
class Availability:
    """Whether this machine can compile for a pod, and if not, the one line that says why."""

    ok: bool
    why: str = ""


def availability() -> Availability:
    """libtpu installed, on a machine it ships for (found without importing it)."""
    if sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        return Availability(
            False,
            f"Compiling for a TPU pod needs libtpu, which ships for Linux x86_64 only; this "
            f"machine is {sys.platform} {platform.machine()}. Run pmapviz on a Linux x86_64 "
            f"machine (a cloud notebook works) to use it.",
        )
    if importlib.util.find_spec("libtpu") is None:
        return Availability(False, f"Compiling for a TPU pod needs libtpu: {INSTALL}")
    return Availability(True)


class PodUnavailable(RuntimeError):
    """libtpu is missing or refused the topology; the message says what to do."""


def load(name: str, multislice: bool = False) -> Pod:
    """The slice ``name`` (e.g. 'v5e:4x4'; with ``multislice``, several: '2 x v5e:4x4'),
    loaded once per process and kept."""
    try:
        topo = parse_topology(name, multislice=multislice)
    except valueparse.SettingError as err:
        raise PodUnavailable(str(err)) from None
    have = availability()
    if not have.ok:
        raise PodUnavailable(have.why)
    with _LOCK:
        if topo.name not in _CACHE:
            _CACHE[topo.name] = _load_locked(topo)
        return _CACHE[topo.name]


def _load_locked(topo: Topology) -> Pod:
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")  # no cloud metadata server to ask
    import jax
    from jax.experimental import topologies

    if "tpu" not in accelerators.accelerators_present() or jax.config.jax_platforms == "cpu":
        # No chip to guard here: libtpu's lockfile (/tmp/libtpu_lockfile) would let one process
        # on the machine compile for pods (a CLI beside a server, the test workers, a process
        # beside the one that holds the chip: measured on a v5e) and fail the others
        os.environ.setdefault(MULTIPLE, "1")

    with _quiet_stderr() as said:
        try:
            more = {"num_slices": topo.slices} if topo.slices > 1 else {}
            if topo.host_bounds:  # hosts as rented, not libtpu's default
                more["chips_per_host_bounds"] = topo.host_bounds
            desc = topologies.get_topology_desc(
                topology_name=topo.slice_name, platform="tpu", **more
            )
        except Exception as err:  # noqa: BLE001  (libtpu's refusal is the message)
            error = err
        else:
            error = None
    if said:
        _NOTES.extend(said)
    if error is not None:
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error)
        fix = (
            " Another process holds this machine's TPU: compile from it, or start this one with "
            "--platform cpu."
            if "lockfile" in str(error)
            else ""
        )
        raise PodUnavailable(f"libtpu could not describe {topo.name}: {first}{fix}")
    chips = tuple(
        Chip(
            int(d.id),
            tuple((list(d.coords) + [0, 0, 0])[:3]),
            int(getattr(d, "core_on_chip", 0) or 0),
            int(d.process_index),
            int(getattr(d, "slice_index", 0) or 0),
        )
        for d in desc.devices
    )
    return Pod(topo, tuple(desc.devices), chips)


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 into a temporary file while libtpu loads; yields the lines it got."""
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield said
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            said.extend(sink.read().decode("utf-8", "replace").splitlines())


def load_notes() -> tuple[str, ...]:
    """What libtpu printed while it loaded in this process (kept off the terminal)."""
    return tuple(_NOTES)
