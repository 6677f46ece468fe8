"""Device set-up: how many devices this process has, and on which platform.

JAX fixes its device count when its backend starts, so the count is a property of the whole server
process. This module:

* parses the settings from command-line arguments and the environment (pure, no JAX);
* applies them *before* JAX starts (environment variables plus ``jax_num_cpu_devices``), and
  says clearly when the platform asked for cannot start here;
* describes the devices JAX actually gave us (:mod:`pmapviz.core.devices.devicefacts` knows what
they are),
  and says so when that differs from what was asked.

Only :func:`apply` and :func:`describe` import JAX, and only when called.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
from dataclasses import dataclass, field

from pmapviz.core.base import room
from pmapviz.core.base.pathparse import parse_folder
from pmapviz.core.base.valueparse import SettingError, parse_bytes
from pmapviz.core.devices import accelerators, compilecache, devicefacts, deviceset, startcommands
from pmapviz.core.devices.devicefacts import DeviceInfo, physical_cores  # noqa: F401  re-exported

MIN_DEVICES = 1
MAX_DEVICES = 64
DEFAULT_DEVICES = 8
PLATFORMS = ("auto", "cpu", "gpu", "tpu")
ENV_DEVICES = "PMAPVIZ_DEVICES"
ENV_PLATFORM = "PMAPVIZ_PLATFORM"
ENV_MAX_BYTES = "PMAPVIZ_MAX_BYTES"
ENV_MAX_DEVICE_BYTES = "PMAPVIZ_MAX_DEVICE_BYTES"
ENV_MAX_SECONDS = "PMAPVIZ_MAX_SECONDS"
ENV_REPORTS = "PMAPVIZ_REPORTS"  # the folder whose cluster reports the Multi-process page opens
MIN_SECONDS, MAX_SECONDS, DEFAULT_MAX_SECONDS = 1, 3600, 60
_FORCE_FLAG = "--xla_force_host_platform_device_count"


@dataclass(frozen=True)
class Settings:
    """How this server was asked to start: the device count (and where it came from), the
    platform, its memory and time limits and its reports folder."""

    devices: int = DEFAULT_DEVICES
    platform: str = "auto"
    devices_source: str = "default"  # "flag", "env" or "default"
    max_bytes: int | None = None  # the server's host memory budget; None: a share of what is free
    max_seconds: int | None = None  # time limit per action; None: DEFAULT_MAX_SECONDS
    max_device_bytes: int | None = None  # the server's device memory budget (GPU, TPU)
    reports: str | None = None  # the folder of cluster reports (absolute), None: uploads only
    compile_cache: str | None = None  # JAX's persistent compilation cache folder; None: off
    presenter_key: str | None = None  # the room's key (base.room); None: one made at start


class PlatformUnavailable(SettingError):
    """The platform asked for cannot start here; the message says how to install it."""


def _parse_count(text: str, where: str) -> int:
    raw = text.strip()
    bounds = f"Use a whole number from {MIN_DEVICES} to {MAX_DEVICES}, e.g. {where} 8."
    if not re.fullmatch(r"[+-]?[0-9]{1,19}", raw):
        raise SettingError(f"{where} {text!r} is not a whole number of devices. {bounds}")
    n = int(raw)
    if n < MIN_DEVICES:
        raise SettingError(
            f"{where} {n} asks for {n} devices; pmap needs at least {MIN_DEVICES}. {bounds}"
        )
    if n > MAX_DEVICES:
        raise SettingError(
            f"{where} {n:,} is more emulated devices than this tool supports "
            f"(at most {MAX_DEVICES}: each one is a thread pool sharing this machine's "
            f"{physical_cores()} CPU core(s), and more only adds overhead). {bounds}"
        )
    return n


def _parse_platform(text: str, where: str) -> str:
    p = text.strip().lower()
    if p not in PLATFORMS:
        raise SettingError(
            f"{where} {text!r} is not a known platform. Choose one of: {', '.join(PLATFORMS)} "
            "('auto' uses GPUs or TPUs when present, 'cpu' forces emulated CPU devices)."
        )
    return p


def parse_settings(argv: list[str], env: dict[str, str] | os._Environ) -> Settings:
    """Read ``--devices N`` / ``--platform P`` (also ``--devices=N``) and the environment.

    The command line wins over ``PMAPVIZ_DEVICES`` / ``PMAPVIZ_PLATFORM``, which win over the
    defaults. Raises :class:`SettingError` with a message meant for the user.
    """
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name not in OPTIONS:
            raise SettingError(
                f"Unknown option {arg!r}. pmapviz understands --devices N, --platform "
                f"{{{','.join(PLATFORMS)}}}, --max-bytes SIZE, --max-device-bytes SIZE, "
                "--max-seconds N, --reports DIR, --compile-cache DIR|off and --presenter-key KEY, "
                "e.g. pmapviz serve --devices 4"
            )
        if not eq:
            if i + 1 >= len(argv):
                raise SettingError(
                    f"{name} needs a value, e.g. {name} {'8' if name == '--devices' else 'cpu'}."
                )
            value = argv[i + 1]
            i += 1
        flags[name] = value
        i += 1

    if "--devices" in flags:
        devices, source = _parse_count(flags["--devices"], "--devices"), "flag"
    elif env.get(ENV_DEVICES, "").strip():
        devices, source = _parse_count(env[ENV_DEVICES], f"{ENV_DEVICES}="), "env"
    else:
        devices, source = DEFAULT_DEVICES, "default"

    if "--platform" in flags:
        platform = _parse_platform(flags["--platform"], "--platform")
    elif env.get(ENV_PLATFORM, "").strip():
        platform = _parse_platform(env[ENV_PLATFORM], f"{ENV_PLATFORM}=")
    else:
        platform = "auto"
    return Settings(
        devices=devices,
        platform=platform,
        devices_source=source,
        max_bytes=_bytes(flags, env, "--max-bytes", ENV_MAX_BYTES),
        max_seconds=_max_seconds(flags, env),
        max_device_bytes=_bytes(flags, env, "--max-device-bytes", ENV_MAX_DEVICE_BYTES),
        reports=_reports(flags, env),
        compile_cache=compilecache.parse(
            flags.get(compilecache.FLAG, env.get(compilecache.ENV)),
            compilecache.FLAG if compilecache.FLAG in flags else f"{compilecache.ENV}=",
            env,
        ),
        presenter_key=_presenter_key(flags, env),
    )


def _presenter_key(flags: dict[str, str], env) -> str | None:
    """The presenter key from --presenter-key, else PMAPVIZ_PRESENTER_KEY, else None."""
    if room.FLAG in flags:
        return room.parse_key(flags[room.FLAG], room.FLAG)
    if env.get(room.ENV_KEY, "").strip():
        return room.parse_key(env[room.ENV_KEY], f"{room.ENV_KEY}=")
    return None


OPTIONS = (
    "--devices",
    "--platform",
    "--max-bytes",
    "--max-device-bytes",
    "--max-seconds",
    "--reports",
    compilecache.FLAG,
    room.FLAG,
)


def _reports(flags: dict[str, str], env) -> str | None:
    """The reports folder from --reports, else PMAPVIZ_REPORTS, else None: an existing folder."""
    if "--reports" in flags:
        return parse_folder(flags["--reports"], "--reports")
    if env.get(ENV_REPORTS, "").strip():
        return parse_folder(env[ENV_REPORTS], f"{ENV_REPORTS}=")
    return None


def _bytes(flags: dict[str, str], env, flag: str, variable: str) -> int | None:
    """A memory budget from its flag, else its variable, else None (a share of what is free)."""
    if flag in flags:
        return parse_bytes(flags[flag], flag)
    if env.get(variable, "").strip():
        return parse_bytes(env[variable], f"{variable}=")
    return None


# ---------------------------------------------------------------- time limit per action
def _max_seconds(flags: dict[str, str], env: dict[str, str] | os._Environ) -> int | None:
    if "--max-seconds" in flags:
        return parse_seconds(flags["--max-seconds"], "--max-seconds")
    if env.get(ENV_MAX_SECONDS, "").strip():
        return parse_seconds(env[ENV_MAX_SECONDS], f"{ENV_MAX_SECONDS}=")
    return None


def parse_seconds(text: str, where: str) -> int:
    """'60' -> 60: whole seconds, ASCII digits only, from MIN_SECONDS to MAX_SECONDS."""
    raw = (text or "").strip()
    bounds = f"Use whole seconds from {MIN_SECONDS} to {MAX_SECONDS}, e.g. --max-seconds 60."
    if not re.fullmatch(r"[0-9]{1,7}", raw):
        raise SettingError(f"{where} {text[:20]!r} is not a whole number of seconds. {bounds}")
    if not MIN_SECONDS <= int(raw) <= MAX_SECONDS:
        raise SettingError(f"{where} {int(raw):,} is out of range. {bounds}")
    return int(raw)


def time_limit() -> int:
    """Seconds one action may run: --max-seconds / PMAPVIZ_MAX_SECONDS, else 60."""
    settings = _applied[0] if _applied is not None else None
    if settings is not None and settings.max_seconds:
        return settings.max_seconds
    return DEFAULT_MAX_SECONDS


# ---------------------------------------------------------------- end of time limit


def merge_xla_flags(existing: str | None, n_devices: int) -> str:
    """Return XLA_FLAGS with the host device count set to ``n_devices``.

    Every other flag the user set is kept, in order; an earlier device-count flag is replaced.
    """
    kept = [f for f in shlex.split(existing or "") if not f.startswith(_FORCE_FLAG)]
    return " ".join([*kept, f"{_FORCE_FLAG}={n_devices}"])


def platforms_for(platform: str) -> str:
    """JAX's ``jax_platforms`` for a ``--platform``: an accelerator keeps the CPU backend
    beside it (the emulated devices, a second device set); ``cpu`` starts the CPU alone (no
    accelerator is opened, so it runs beside a process that holds a TPU)."""
    return platform if platform == "cpu" else f"{platform},cpu"


def environment_for(settings: Settings, env: dict[str, str] | os._Environ) -> dict[str, str]:
    """The environment variables to set before JAX starts (pure: returns only the changes)."""
    changes = {
        "XLA_FLAGS": merge_xla_flags(env.get("XLA_FLAGS"), settings.devices),
        "JAX_NUM_CPU_DEVICES": str(settings.devices),
    }
    if settings.platform != "auto":
        changes["JAX_PLATFORMS"] = platforms_for(settings.platform)
    elif not env.get("JAX_PLATFORMS") and not accelerators.accelerators_present():
        # No chip here: start the CPU alone. With libtpu installed (the pods extra), JAX would
        # try its TPU plugin first: 2-3 s more and libtpu's warnings in the terminal.
        changes["JAX_PLATFORMS"] = "cpu"
    if "tpu" not in accelerators.accelerators_present() and "TPU_SKIP_MDS_QUERY" not in env:
        changes["TPU_SKIP_MDS_QUERY"] = "1"  # libtpu (pods) asks no cloud metadata server
    return changes


@dataclass(frozen=True)
class DeviceReport:
    """What JAX really gave this process, next to what was asked."""

    requested: Settings
    facts: devicefacts.Facts
    notes: tuple[str, ...] = field(default=())

    platform = property(lambda self: self.facts.platform)
    device_kind = property(lambda self: self.facts.device_kind)
    devices = property(lambda self: self.facts.devices)
    process_count = property(lambda self: self.facts.process_count)
    jax_version = property(lambda self: self.facts.jax_version)
    physical_cores = property(lambda self: self.facts.physical_cores)
    logical_cpus = property(lambda self: self.facts.logical_cpus)

    @property
    def count(self) -> int:
        """How many devices JAX gave (every process's, in ``jax.devices()`` order)."""
        return len(self.facts.devices)

    @property
    def labels(self) -> list[str]:
        """Each device's name as JAX prints it (``str(device)``: cpu:0, cuda:0, TPU_0 ...)."""
        return self.facts.labels

    @property
    def matches_request(self) -> bool:
        """Whether JAX gave what was asked (no notes on a difference)."""
        return not self.notes

    @property
    def sets(self) -> list[devicefacts.Facts]:
        """Every device set this process holds (accelerators first), this one among them."""
        return devicefacts.every_set()

    def cpu_restart_command(self, n: int) -> str:
        """The command that restarts this server with ``n`` emulated CPU devices (beside the
        accelerators, which stay; on a CPU-only machine, the devices themselves)."""
        return self.restart_command(n)

    def restart_command(self, n: int | None = None, platform: str | None = None) -> str:
        """The command that restarts this server with ``n`` devices (on ``platform``: e.g.
        "cpu" for emulated devices on an accelerator machine): :mod:`startcommands`."""
        return startcommands.restart(self.requested, n, platform)


_applied: tuple[Settings, tuple[str, ...]] | None = None


def apply(settings: Settings, env: os._Environ | dict[str, str] = os.environ) -> tuple[str, ...]:
    """Configure JAX for ``settings``; call before anything else imports JAX.

    Idempotent per process. Returns notes for the user when JAX had already been started
    with a different configuration (then the request cannot take effect in this process).
    Raises :class:`PlatformUnavailable` when JAX cannot start the platform asked for (no GPU
    backend, no libtpu), with how to install it. Starts the backend and times its first
    ``device_put`` (:func:`devicefacts.start_backend`), so no later timing counts it.
    """
    global _applied
    if _applied is not None and _applied[0] == settings:
        return _applied[1]
    notes: list[str] = []
    if settings.platform == "tpu" and "tpu" not in accelerators.accelerators_present():
        # no chip: say so before libtpu (installed for the pods extra) tries and prints
        raise PlatformUnavailable(accelerators.unavailable_message("tpu"))
    changes = environment_for(settings, env)
    for key, value in changes.items():
        env[key] = value
    import jax
    from jax._src import xla_bridge

    if "JAX_PLATFORMS" in changes and not xla_bridge.backends_are_initialized():
        # JAX read the environment when it was imported (a notebook's `import jax` first)
        jax.config.update("jax_platforms", changes["JAX_PLATFORMS"])
    with contextlib.suppress(RuntimeError):  # backend already up: compared below
        jax.config.update("jax_num_cpu_devices", settings.devices)
    large_arrays_return_to_the_os()  # freed big arrays go back to the OS
    cache_note = compilecache.enable(settings.compile_cache)
    notes.extend([cache_note] if cache_note else [])
    try:  # jax.devices() and each set's first device_put, timed where they happen
        devicefacts.start_backend()
    except RuntimeError as err:  # "Unable to initialize backend 'tpu' ...", "libtpu.so" ...
        raise PlatformUnavailable(accelerators.unavailable_message(settings.platform, err)) from err
    notes.extend(_mismatch_notes(settings, jax.devices()))
    _applied = (settings, tuple(notes))
    return _applied[1]


_ALLOCATOR_SET: list[bool] = []


def large_arrays_return_to_the_os() -> None:
    """Make glibc give every allocation of 1 MiB or more its own mapping, returned to the OS
    the moment it is freed. By default glibc raises that threshold after the first free (up to
    32 MiB), and XLA's per-device threads then leave freed device buffers in per-thread heaps:
    measured, a live run of 5 timed calls held 3 outputs' worth of RSS instead of 1, and
    training's peak drifted with the number of steps (mlp: 104 MB at 5, 154 MB at 40). Chunks
    of host-side work stay below the threshold (``memory.CHUNK`` float64 = 512 KiB). Once per
    process; a no-op where glibc's ``mallopt`` is not available."""
    if _ALLOCATOR_SET:
        return
    _ALLOCATOR_SET.append(True)
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 2**20)  # M_MMAP_THRESHOLD
        libc.mallopt(-8, 2)  # M_ARENA_MAX: a new script thread shares an arena, not a new one


def return_freed_memory() -> None:
    """Give the heap's free memory back to the OS now (glibc's ``malloc_trim``), after an
    action that freed a lot: a server's script threads each leave freed chunks in their own
    arenas, which the OS otherwise keeps counting. A no-op without glibc."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


@functools.cache
def _libc():
    """The C library's handle, loaded once (every rerun of the app gives memory back)."""
    import ctypes

    return ctypes.CDLL(None)


def is_applied() -> bool:
    """Whether :func:`apply` has run in this process (JAX is up)."""
    return _applied is not None


def applied_settings() -> Settings:
    """The settings :func:`apply` used in this process (defaults from the environment if none)."""
    if _applied is None:
        settings = parse_settings([], os.environ)
        apply(settings)
        return settings
    return _applied[0]


def _mismatch_notes(settings: Settings, devs: list) -> list[str]:
    notes = []
    platform = devs[0].platform
    if settings.platform not in ("auto", platform):
        notes.append(
            f"Asked for platform '{settings.platform}' but JAX is running on '{platform}' "
            "in this process (it was started before pmapviz could configure it)."
        )
    cpu = deviceset.devices(deviceset.CPU) if deviceset.CPU in deviceset.names() else []
    if cpu and len(cpu) != settings.devices:
        notes.append(
            f"Asked for {settings.devices} emulated CPU devices but JAX was already "
            f"initialised in this process with {len(cpu)}; the count cannot change until the "
            "server restarts."
        )
    return notes


def describe(settings: Settings) -> DeviceReport:
    """Describe the devices JAX gave this process (applies ``settings`` first if needed)."""
    notes = apply(settings)
    return DeviceReport(requested=settings, facts=devicefacts.facts(), notes=notes)
