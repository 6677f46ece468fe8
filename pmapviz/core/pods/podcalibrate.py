"""Measured against estimated, where a chip exists: the same program compiled for this machine's
own TPU chip(s) and run, its time beside the compiler's ``optimal_seconds`` for that compile.

So a learner sees how far the estimate (compute and HBM only, no dispatch) is from a real run:
on one v5e chip, an 8192 bf16 matmul ran 1.2x its estimate and small programs 4x (timed from
Python, dispatch included; tests/fixtures and the README quote the runs). On a machine without a
TPU there is nothing to run: :func:`calibrate` raises :class:`NoChip`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from pmapviz.core.budgets import memorymodel, memorypool
from pmapviz.core.pods import compiledinputs, tpuchips
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podtopology import Chip, Pod
from pmapviz.core.running import programanalysis

REPEAT = 20
HOST_BYTES = 64 * 1024**2  # the host's part of a run: zeros made there, copied over


class NoChip(RuntimeError):
    """This machine has no TPU chip to run on."""


@dataclass(frozen=True)
class Calibration:
    """One program on the local chip(s): the compiler's estimate and the measured median."""

    label: str
    devices: int
    device_kind: str
    estimate_s: float | None
    measured_s: float  # median of REPEAT runs, block_until_ready, dispatch included

    @property
    def ratio(self) -> float | None:
        """Measured over estimated (None without an estimate)."""
        return self.measured_s / self.estimate_s if self.estimate_s else None

    def to_dict(self) -> dict:
        """The figures, as JSON."""
        return {
            "label": self.label,
            "devices": self.devices,
            "device_kind": self.device_kind,
            "estimate_s": self.estimate_s,
            "measured_s": self.measured_s,
            "ratio": self.ratio,
        }


def local_pod(platform: str = "tpu") -> Pod:
    """This machine's TPU devices as a slice (raises NoChip where there are none); the tests
    give ``platform="cpu"`` to run the same path on emulated devices."""
    import jax

    try:
        devices = jax.devices(platform)
    except RuntimeError:
        raise NoChip("no TPU chip here: measured-vs-estimated needs a TPU machine") from None
    kind = devices[0].device_kind
    gen = next(
        (g for g in tpuchips.GENERATIONS.values() if g.device_kind == kind),
        tpuchips.GENERATIONS["v5e"],
    )
    chips = tuple(
        Chip(int(d.id), tuple((list(getattr(d, "coords", [0, 0, 0])) + [0, 0, 0])[:3]), 0, 0)
        for d in devices
    )
    return Pod(
        tpuchips.Topology(gen, (len(devices),) + (1,) * (gen.dims - 1)), tuple(devices), chips
    )


def calibrate(program: PodProgram, repeat: int = REPEAT, platform: str = "tpu") -> Calibration:
    """``program`` compiled for the local chip(s), run ``repeat`` times on zeros; its memory
    held in the server's pool while it runs."""
    pod = local_pod(platform)
    low = program.lower(pod, program.batch)
    compiled = low.lowered.compile()
    estimate = programanalysis.estimate_seconds(compiled)
    on_devices = programanalysis.cost_of(compiled).peak_bytes * pod.n_devices
    need = memorymodel.Need(on_devices + HOST_BYTES, HOST_BYTES, on_devices)
    label = compiledinputs.program_text(program.label, low.inputs)  # as compiled
    with memorypool.reserve(need, f"running {label} on this machine's chip"):
        return _timed(label, pod, compiled, estimate, repeat)


def _timed(label: str, pod: Pod, compiled, estimate, repeat: int) -> Calibration:
    import jax
    import jax.numpy as jnp

    infos = jax.tree.leaves(compiled.args_info[0], is_leaf=lambda a: hasattr(a, "shape"))
    args = [
        jax.device_put(jnp.zeros(a.shape, a.dtype), sh)
        for a, sh in zip(infos, jax.tree.leaves(compiled.input_shardings[0]), strict=True)
    ]
    jax.block_until_ready(compiled(*args))  # warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t)
    return Calibration(
        label,
        pod.n_devices,
        pod.devices[0].device_kind,
        estimate,
        statistics.median(times),
    )
