"""Measured rates: the device's memory bandwidth, FLOP and sort rates and host-to-device
transfer, and the one warm timing loop (timed_calls), once per process and device set.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.devices import devicefacts, deviceset

MiB = 2**20


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

    dev = devicefacts.local_devices_for_work()[0]
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

    a = jax.device_put(jnp.ones((n, n), jnp.float32), devicefacts.local_devices_for_work()[0])
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

    x = jax.device_put(
        np.random.default_rng(0).random(n, np.float32), devicefacts.local_devices_for_work()[0]
    )
    srt = jax.jit(jnp.sort).lower(x).compile()
    return best_time(lambda: srt(x), repeat, clock) / (n * math.log2(n))


def measure_transfer(
    nbytes: int = 16 * MiB,
    repeat: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """GB/s of a host-to-device copy (``device_put`` of a numpy array) to the first device."""
    import jax
    import numpy as np

    host = np.ones(nbytes // 4 + 1, np.float32)[1:]  # off the 64-byte boundary: a real copy
    dev = devicefacts.local_devices_for_work()[0]
    return nbytes / best_time(lambda: jax.device_put(host, dev), repeat, clock) / 1e9


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
            devicefacts.start_backend()
            own = not devicefacts.facts().shares_host_memory
            nbytes = probe_nbytes(budget if budget is not None else 4096 * MiB, own)
            gbs, method = measure_bandwidth(nbytes)
            _RATES[name] = Rates(
                gbs,
                measure_flops(),
                measure_transfer(),
                str(devicefacts.local_devices()[0]),
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
