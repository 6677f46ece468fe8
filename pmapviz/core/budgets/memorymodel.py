"""The memory model's words: what one action needs at its peak (a :class:`Need`), what it may
use (a :class:`Budget`), the arithmetic on needs, and refusing what does not fit.

A :class:`Need` is two views of the same moments:

* ``total``: the process's RSS when the devices use the host's memory (CPU devices). This is
  the measured model (:mod:`pmapviz.core.budgets.memoryestimates` says what each action needs;
  ``tests/core/budgets/test_memoryestimates.py`` measures each action's peak RSS in a fresh process
  and holds it to ``measured <= total <= 1.5 * measured``; ``benchmarks/memory_model.py`` prints the
  table).
* ``host`` and ``device``: the same arrays split by where they live when the devices have
  their own memory (GPU, TPU): host-side work (generated inputs, comparisons, read-backs)
  against the host, the placed arrays (all devices together, as if on one: the one-device
  reference holds them whole) against the devices.

A :class:`Budget` knows which view applies (``devicefacts.Facts.shares_host_memory``) and says, in
the user's numbers, which memory an action would overrun. Pure functions: nothing here allocates or
starts JAX work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.core.base.valuetext import fmt_bytes

CHUNK = 1 << 16  # elements per chunk of host-side work (generation, comparisons)
MiB = 2**20
# measured (benchmarks/memory_model.py): the JAX runtime's own growth during an action
# (executables' first runs, thread-local arenas) plus a few float64 chunk buffers
OVERHEAD = 24 * MiB


class BudgetError(ValueError):
    """An action that would not fit the memory budget; the message says what fits."""


@dataclass(frozen=True)
class Need:
    """What one action needs at its peak, in bytes."""

    total: int  # host RSS when the devices are the host's memory (CPU): the measured model
    host: int  # host memory alone, when the devices have their own (GPU, TPU)
    device: int = 0  # device memory then, all devices together

    @classmethod
    def host_only(cls, nbytes: int) -> Need:
        """Work that happens on the host only (worker processes, host copies)."""
        return cls(nbytes, nbytes, 0)

    def words(self, shared: bool) -> str:
        """'1.23 GB' (one pool), or '1.23 GB on the devices and 400 MB on the host'."""
        if shared:
            return fmt_bytes(self.total)
        return f"{fmt_bytes(self.device)} on the devices and {fmt_bytes(self.host)} on the host"


@dataclass(frozen=True)
class Budget:
    """Bytes one action may use: host memory and, where the devices have their own, device
    memory (``device`` None: the devices use the host's memory, one budget for both)."""

    host: int
    device: int | None = None
    host_source: str = ""
    device_source: str = ""

    @classmethod
    def of(cls, value: int | Budget) -> Budget:
        """A plain number of bytes is one pool, shared by the host and its devices (CPU)."""
        return value if isinstance(value, Budget) else cls(int(value))

    @property
    def shared(self) -> bool:
        """Whether the host and its devices share one budget (``device`` is None)."""
        return self.device is None

    def fits(self, need: Need) -> bool:
        """Whether ``need`` fits: in the one pool, or in both host and device memory."""
        if self.device is None:
            return need.total <= self.host
        return need.host <= self.host and need.device <= self.device

    def problem(self, need: Need) -> str | None:
        """Which memory ``need`` overruns, in the user's numbers; None when it fits."""
        if self.device is None:
            if need.total <= self.host:
                return None
            return (
                f"needs about {fmt_bytes(need.total)} at its peak; the memory budget is "
                f"{fmt_bytes(self.host)}"
            )
        if need.device > self.device:
            return (
                f"needs about {fmt_bytes(need.device)} of device memory at its peak; the "
                f"device memory budget is {fmt_bytes(self.device)}"
            )
        if need.host > self.host:
            return (
                f"needs about {fmt_bytes(need.host)} of host memory at its peak; the host "
                f"memory budget is {fmt_bytes(self.host)}"
            )
        return None

    def words(self, need: Need) -> str:
        """``need`` in words, split the way this budget is: '1.23 GB', or devices and host apart."""
        return need.words(self.shared)

    def bytes_of(self, need: Need) -> int:
        """The bytes an action will allocate, wherever they live (for "a large run" cut-offs)."""
        return need.total if self.device is None else need.host + need.device

    def share_of(self, need: Need) -> float:
        """How much of ``need`` fits (1.0 or more: all of it), for "make it N% of its size"."""
        if self.device is None:
            return self.host / max(need.total, 1)
        return min(self.host / max(need.host, 1), self.device / max(need.device, 1))

    def probe_pool(self) -> int:
        """The budget the bandwidth probe (two arrays on one device) is sized by."""
        return self.host if self.device is None else self.device


def refuse_over(need: Need, budget: int | Budget, what: str, fits: str) -> None:
    """Raise BudgetError when ``need`` does not fit; ``fits`` names the largest that does."""
    why = Budget.of(budget).problem(need)
    if why:
        raise BudgetError(f"{what} {why}. {fits}")


def largest_fitting(
    need: Callable[[int], Need], budget: int | Budget, lo: int, hi: int, step: int = 1
) -> int:
    """The largest multiple of ``step`` in [lo, hi] whose need fits ``budget`` (needs grow
    with size), or 0 if none: binary search, exact integers."""
    fits = Budget.of(budget).fits
    lo_k, hi_k = -(-lo // step), hi // step
    if hi_k < lo_k or not fits(need(lo_k * step)):
        return 0
    while lo_k < hi_k:
        mid = (lo_k + hi_k + 1) // 2
        if fits(need(mid * step)):
            lo_k = mid
        else:
            hi_k = mid - 1
    return lo_k * step


def device_dtype(name: str) -> np.dtype:
    """The dtype a device really holds for ``name`` (float64 is float32 unless x64 is on)."""
    import jax
    import jax.numpy as jnp

    return np.dtype(jax.dtypes.canonicalize_dtype(jnp.dtype(name)))


def nbytes(shape, dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype``."""
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


def with_temporaries(need: Need, temp: int) -> Need:
    """``need`` plus the scratch memory XLA's compiled program allocates while it runs (its
    ``memory_analysis().temp_size_in_bytes``): what f makes in between, which inputs and
    outputs alone do not show (an outer product inside f). On the devices where they have
    memory of their own, else in the one pool."""
    return Need(need.total + temp, need.host, need.device + temp)


def larger(need: Need, other: Need | None) -> Need:
    """Each part the larger of the two (a formula and a compiled program's figure)."""
    if other is None:
        return need
    return Need(
        max(need.total, other.total), max(need.host, other.host), max(need.device, other.device)
    )


def scaled(need: Need, factor: float, fixed: int) -> Need:
    """``need`` at ``factor`` times its size: all but its ``fixed`` runtime part (on the
    host) grows with the data (for "the largest size that fits" from one compiled size)."""

    def grow(nbytes: int, fix: int) -> int:
        return fix + math.ceil(max(0, nbytes - fix) * factor)

    return Need(grow(need.total, fixed), grow(need.host, fixed), grow(need.device, 0))
