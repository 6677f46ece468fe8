"""Device sets: the groups of devices one process holds at once, and which one runs now.

A learner's machine often has one accelerator: one GPU, or one TPU chip. The lessons need
several devices (a pmap over one device shows one block), the timing needs the real one. So a
process on such a machine holds two sets, both fixed when JAX starts (``jaxstartup.apply``):

* the machine's accelerators, named by their platform (``"gpu"``, ``"tpu"``), and
* ``"cpu"``: ``--devices N`` emulated CPU devices (``jax_num_cpu_devices``), beside them.

On a CPU-only machine there is one set, ``"cpu"``. Every runner asks :func:`devices` for the devices
it runs on, and a page, a command or a test chooses the set with :func:`use`, which also makes the
set's first device JAX's default device (a plain ``jax.jit`` then runs there, not on the
accelerator). The choice lives in a context variable, so each Streamlit session's script thread has
its own.

What a page wants by default is a :data:`NEEDS` word: ``"many"`` (a lesson about splitting
work: the larger set, real devices on a tie) or ``"real"`` (timing: the accelerators).

JAX is imported inside functions only; importing this module starts nothing. Tests describe
fake accelerators with :func:`override`, while programs run on the test process's CPU devices.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Sequence

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import quote

CPU = "cpu"
NEEDS = ("many", "real")  # what a lesson wants: several devices, or the machine's own
ORDER = ("gpu", "tpu", CPU)  # accelerators first
URL_KEY = "on"  # a link's choice of device set: ?on=cpu

_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("pmapviz_set", default=None)
_OVERRIDE: list[dict[str, list]] = []  # tests: fake devices per set (see override)
_LOCK = threading.Lock()
_SETS: dict[str, list] = {}  # JAX's sets, read once: JAX fixes them when its backend starts


# ---------------------------------------------------------------- which sets this process has
def _jax_sets() -> dict[str, list]:
    """Set name -> this process's JAX devices of it, accelerators first: the default
    backend's devices, and the CPU backend's beside them when the default is an
    accelerator (absent when JAX was started without a CPU backend)."""
    if _SETS:
        return _SETS
    import jax

    default = jax.local_devices()
    sets = {default[0].platform: list(default)}
    if CPU not in sets:
        with contextlib.suppress(RuntimeError):
            sets[CPU] = list(jax.local_devices(backend=CPU))
    with _LOCK:
        _SETS.update(sets)
    return _SETS


def described() -> dict[str, list]:
    """Set name -> the device objects that *describe* it: JAX's, or a test's fakes."""
    if _OVERRIDE:
        return dict(_OVERRIDE[-1])
    return _jax_sets()


def names() -> tuple[str, ...]:
    """The sets this process has, accelerators first: ``("tpu", "cpu")`` or ``("cpu",)``."""
    have = described()
    return tuple(sorted(have, key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER)))


def has_two() -> bool:
    """Whether this process holds accelerators and emulated CPU devices at once."""
    return len(names()) > 1


def real() -> str:
    """The machine's own devices: the accelerator set where there is one, else ``"cpu"``."""
    return names()[0]


def default(need: str = "many") -> str:
    """The set a lesson runs on unless the user picks another: ``"real"`` -> the machine's
    own devices; ``"many"`` -> the set with the most devices (the real one on a tie)."""
    if need not in NEEDS:
        raise ValueError(f"need is one of {NEEDS}, not {need!r}")
    if need == "real":
        return real()
    have = described()
    return max(names(), key=lambda s: (len(have[s]), s == real()))


def parse(text: str, where: str = "--device-set") -> str:
    """A set's name as given (``cpu``, ``gpu``, ``tpu``, ``auto``), checked against the sets
    this process has; SettingError names them. ``auto`` is returned as it is."""
    name = (text or "").strip().lower()
    have = names()
    if name == "auto" or name in have:
        return name
    offer = ", ".join(("auto", *have))
    raise SettingError(
        f"{where} {quote(text, 20)} is not a device set here. This process has: "
        f"{offer} ('auto': the set each action prefers)."
    )


# ---------------------------------------------------------------- which set runs now
def current() -> str:
    """The set chosen with :func:`use` in this thread, else the default for lessons."""
    chosen = _CURRENT.get()
    return chosen if chosen is not None and chosen in described() else default("many")


def devices(name: str | None = None) -> list:
    """The JAX devices programs run on in set ``name`` (default: the current set). Under a
    test's :func:`override`, the fake set's size on this process's real devices."""
    name = current() if name is None else name
    if not _OVERRIDE:
        return _jax_sets()[name]
    import jax

    real_devices = jax.local_devices()
    return real_devices[: len(_OVERRIDE[-1][name])]


@contextlib.contextmanager
def use(name: str | None) -> Iterator[str]:
    """Run the block on set ``name`` (None: the current set): :func:`devices` returns it and
    its first device is JAX's default device in this thread. Yields the name."""
    import jax

    name = current() if name is None else name
    token = _CURRENT.set(name)
    try:
        with jax.default_device(devices(name)[0]):
            yield name
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def override(sets: dict[str, Sequence]) -> Iterator[None]:
    """For tests: describe these fake sets (name -> device objects with ``id``,
    ``process_index``, ``platform``, ``device_kind``, ``memory_stats()`` and a ``str``)
    instead of JAX's; programs still run on JAX's real devices (see :func:`devices`)."""
    with _LOCK:
        _OVERRIDE.append({k: list(v) for k, v in sets.items()})
    try:
        yield
    finally:
        with _LOCK:
            _OVERRIDE.pop()


def overridden() -> bool:
    """Whether a test's :func:`override` is in effect (fake sets are described)."""
    return bool(_OVERRIDE)
