"""This server's memory budget and the one pool its actions share it through: the host's
budget (``--max-bytes``) and, where the devices have their own memory, the devices'
(``--max-device-bytes``); every allocating action reserves its
:class:`pmapviz.core.budgets.memorymodel.Need`
from the pool first come, first served (:func:`reserve`), and the sidebar says both in words
(:func:`budget_lines`).
"""

from __future__ import annotations

import threading

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import fmt_bytes
from pmapviz.core.budgets.memorymodel import OVERHEAD, Budget, BudgetError, Need
from pmapviz.core.devices import devicefacts, devicerates, deviceset, hostmemory, jaxstartup

# ---------------------------------------------------------------- this server's budget
_DEFAULTS: dict[str, int] = {}  # the default budgets, fixed when the server first needs them


def budget(name: str | None = None) -> Budget:
    """Bytes this server's actions on device set ``name`` (default: the current set) may use
    together (:func:`reserve` shares them): the host's (``--max-bytes``, else a quarter of the
    host memory available once JAX had started) and, where the set's devices have their own
    memory, the devices' (``--max-device-bytes``, else a quarter of the free memory of the
    fullest device then). One action may use all of it; several at once share it, on every
    set of the server alike (:func:`admission`)."""
    settings = jaxstartup.applied_settings()
    host, host_source = _host_budget(settings.max_bytes)
    name = deviceset.current() if name is None else name
    if devicefacts.facts(name).shares_host_memory:
        return Budget(host, None, host_source, "the devices use the host's memory")
    device, device_source = _device_budget(settings.max_device_bytes, host, name)
    return Budget(host, device, host_source, device_source)


def _host_budget(max_bytes: int | None) -> tuple[int, str]:
    """The host's budget and what it is based on, in words (with the numbers)."""
    if max_bytes:
        return max_bytes, "set with --max-bytes"
    started = devicefacts.startup()
    available = started.available_after if started else hostmemory.host_memory().available
    host = _DEFAULTS.setdefault("host", available // 4)
    runtime = (started.runtime_bytes if started else None) or 0
    took = (
        f"; the JAX runtime had mapped {fmt_bytes(runtime)} into the server as it started, "
        "device memory windows included"
        if runtime >= devicefacts.RUNTIME_NOTE_BYTES
        else ""
    )
    return host, (
        f"a quarter of the {fmt_bytes(4 * host)} of host memory available once JAX "
        f"had started{took}; set with --max-bytes"
    )


def _device_budget(max_device_bytes: int | None, host: int, name: str) -> tuple[int, str]:
    if max_device_bytes:
        return max_device_bytes, "set with --max-device-bytes"
    free = [m.free for m in devicefacts.device_memory(name) or [] if m.free is not None]
    if not free:
        return host, (
            "this backend reports no device memory limit, so the host's budget is "
            "used; set one with --max-device-bytes"
        )
    device = _DEFAULTS.setdefault(f"device:{name}", min(free) // 4)
    return device, (
        "a quarter of the free memory of the fullest device when the server "
        "started (memory_stats: bytes_limit - bytes_in_use); set with "
        "--max-device-bytes"
    )


# ---------------------------------------------------------------- sharing it: admission
QUEUE_TIMEOUT_S = 120.0  # how long an action waits for memory before it gives up
_POOLS: dict[tuple[int, ...], queues.Pool] = {}
_POOLS_LOCK = threading.Lock()


def _describe(amount: tuple[int, ...]) -> str:
    if len(amount) == 1:
        return fmt_bytes(amount[0])
    return f"{fmt_bytes(amount[0])} of host and {fmt_bytes(amount[1])} of device memory"


def admission() -> queues.Pool:
    """The server's memory pool, one for every device set: its capacity is the host's budget,
    and the accelerators' device budget where the server has accelerators; shared first come,
    first served by every allocating action."""
    b = _server_budget()
    capacity = (b.host,) if b.shared else (b.host, b.device or 0)
    with _POOLS_LOCK:
        if capacity not in _POOLS:
            _POOLS[capacity] = queues.Pool("memory", capacity, _describe)
        return _POOLS[capacity]


def _server_budget() -> Budget:
    """The budget of the machine's own devices (an accelerator set's has a device part):
    the pool's capacity, whichever set an action runs on."""
    return budget(deviceset.real())


def _amount(need: Need, b: Budget, pool: queues.Pool) -> tuple[int, ...]:
    """What ``need`` takes of a pool: on a set whose devices use the host's memory, all of it
    from the host (and nothing of an accelerator's device memory beside it)."""
    if b.shared:
        return (need.total,) + (0,) * (len(pool.capacity) - 1)
    return (need.host, need.device)


def measured_rates(b: Budget | None = None) -> devicerates.Rates:
    """The device's measured rates (:func:`devicerates.rates`); the first measurement holds
    its probe's memory in the server's budget like any other action."""
    b = budget() if b is None else b
    if devicerates.rates_measured():
        return devicerates.rates()
    probe = devicerates.probe_nbytes(b.probe_pool(), own_memory=not b.shared)
    need = Need(probe + OVERHEAD, OVERHEAD, probe)
    with reserve(need, "measuring the device's bandwidth", b=b):
        return devicerates.rates(b.probe_pool())


def reserve(
    need: Need,
    label: str,
    on_wait=None,
    should_stop=None,
    timeout: float = QUEUE_TIMEOUT_S,
    b: Budget | None = None,
) -> queues.Grant:
    """Wait until ``need`` fits in what the server's other actions leave of the budget, and
    hold it (``with memorypool.reserve(...):``). Raises BudgetError at once when it could
    never fit (its message names what it needs; callers refuse earlier, with the largest size
    that fits), queues.WaitTimeout or queues.Cancelled when the wait ends without room."""
    b = budget() if b is None else b
    if why := b.problem(need):
        raise BudgetError(f"{label[:1].upper()}{label[1:]} {why}.")
    pool = admission()
    return pool.acquire(_amount(need, b, pool), label, timeout, should_stop, on_wait)


def budget_lines(
    budget: Budget,
    stats: list[devicefacts.DeviceMemory] | None,
    reserved: tuple[int, ...] | None = None,
) -> list[str]:
    """The sidebar's memory lines, each saying which memory it is: the server's budget, which
    its running actions share (host, and device where the devices have their own), what they
    hold now (``reserved``), and each device's bytes in use and at peak as its backend reports
    them (memory_stats)."""
    gib = 2**30
    held = reserved or (0, 0)
    if budget.shared:
        return [
            f"Memory budget for the whole server: **{budget.host / gib:.1f} GiB** of host "
            f"memory, which the devices share ({budget.host_source}); running actions "
            f"hold {held[0] / gib:.1f} GiB of it now."
        ]
    lines = [
        f"Host memory budget for the whole server: **{budget.host / gib:.1f} GiB** "
        f"({budget.host_source}); running actions hold {held[0] / gib:.1f} GiB.",
        f"Device memory budget for the whole server: **{(budget.device or 0) / gib:.1f} "
        f"GiB** ({budget.device_source}); running actions hold "
        f"{held[1] / gib:.1f} GiB.",
    ]
    if stats:
        fullest = max(stats, key=lambda m: (m.in_use, m.peak))
        known = [m.limit for m in stats if m.limit is not None]
        limit = f"of {min(known) / gib:,.1f} GiB" if known else "no limit reported"
        which = f"`{fullest.device}`" if len(stats) == 1 else f"the fullest, `{fullest.device}`"
        peak = max(m.peak for m in stats) / gib
        lines.append(
            f"Device memory now (memory_stats, {which}): {fullest.in_use / gib:,.2f} "
            f"GiB in use {limit}, peak {peak:,.2f} GiB."
        )
    return lines
