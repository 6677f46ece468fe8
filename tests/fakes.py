"""Fake accelerators: device objects that claim to be GPUs or TPUs, with memory_stats, for
``devicefacts.override``. Programs still run on the test process's CPU devices; every fact,
budget and word pmapviz shows comes from these, so a page can be rendered as a GPU server and
as a TPU server and checked for the CPU story.

The GPU is the H200 of ``tests/core/fixtures/gpu-h200`` (its kind, its ``str``, its
``memory_stats()`` after one call); the TPU is an 8-chip v5e slice as JAX names it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pmapviz.core.devices import devicefacts, deviceset, jaxstartup

FIXTURES = Path(__file__).resolve().parent / "core" / "fixtures" / "gpu-h200"
TPU_FIXTURES = FIXTURES.parent / "tpu-v5e"  # one v5e chip (README.md there)
H200 = json.loads((FIXTURES / "gpu_device_info.json").read_text())


@dataclass(frozen=True)
class FakeDevice:
    id: int
    platform: str
    device_kind: str
    label: str
    stats: tuple[tuple[str, int], ...] | None
    process_index: int = 0

    def memory_stats(self) -> dict | None:
        return None if self.stats is None else dict(self.stats)

    def __str__(self) -> str:
        return self.label


def gpu(n: int) -> list[FakeDevice]:
    stats = tuple(H200["memory_stats_after"].items())
    return [FakeDevice(i, "gpu", H200["device_kind"], f"cuda:{i}", stats) for i in range(n)]


TPU_LIMIT = 16_909_336_576  # what JAX reports as bytes_limit on a v5e chip (16 GiB HBM)


def tpu(n: int) -> list[FakeDevice]:
    stats = (("bytes_in_use", 0), ("peak_bytes_in_use", 0), ("bytes_limit", TPU_LIMIT))
    return [
        FakeDevice(i, "tpu", "TPU v5 lite", f"TPU_{i}(process=0,({i % 4},{i // 4},0,0))", stats)
        for i in range(n)
    ]


@contextlib.contextmanager
def fake_devices(
    platform: str, n: int | None = None, cpu: bool = True
) -> Iterator[list[FakeDevice]]:
    """Describe ``n`` fake ``platform`` devices (default: as many as the real ones), with this
    process's CPU devices beside them as a second device set (as a server on an accelerator
    machine holds both; ``cpu=False``: without), and run the block on the fake set
    (``deviceset.use``), as a page that runs on the accelerators does."""
    import jax

    n = jax.local_device_count() if n is None else n
    devs = {"gpu": gpu, "tpu": tpu}[platform](n)
    with devicefacts.override(devs, cpu=cpu), deviceset.use(platform):
        yield devs


def actions_held() -> list:
    """What the server's actions hold in the memory pool now, without the sandbox's warm worker
    (a standing grant that an earlier test in this process may have left for the next run)."""
    from pmapviz.core.budgets import memorypool
    from pmapviz.core.running import sandbox

    return [h for h in memorypool.admission().held() if h[0] != sandbox.WORKER_LABEL]


@contextlib.contextmanager
def host_budget(nbytes: int):
    """This process's jaxstartup applied again with a host memory budget of ``nbytes`` (the
    same devices and platform), the original settings restored after. A sandbox worker an
    earlier test left warm is stopped first: its standing grant in a budget this tight made
    a test wait for the worker's idle stop (103 s of a 0.1 s test, in a full run)."""
    from pmapviz.core.running import sandbox

    sandbox._WORKER.stop()
    original = jaxstartup.applied_settings()
    jaxstartup.apply(
        jaxstartup.Settings(
            devices=original.devices,
            platform="cpu",
            devices_source=original.devices_source,
            max_bytes=nbytes,
        )
    )
    try:
        yield
    finally:
        jaxstartup.apply(original)
