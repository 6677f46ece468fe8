"""The explorer's examples: one click sets a whole scenario (function, shapes, axes)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pmapviz.core.planning.scenarios import Scenario


@dataclass(frozen=True)
class Preset:
    """One explorer example: a function, its shapes and axes; ``lesson``: a mistake on purpose."""

    key: str
    label: str
    fn: str
    shapes: tuple[str, ...]  # "{n}" stands for the device count, "{block}" for 10M / n
    in_axes: tuple[str, ...]
    out_axes: str = "0"
    axis_name: str = ""
    lesson: bool = False  # a mistake on purpose: what pmap rejects, shown as a lesson

    @functools.lru_cache(maxsize=256)  # noqa: B019  (presets live as long as the process)
    def scenario(self, n_devices: int) -> Scenario:
        """The explorer's settings for this example on ``n_devices`` devices (immutable, so
        every rerun shares one)."""
        changes = {"out": self.out_axes, "name": self.axis_name}
        for k, (shape, ax) in enumerate(zip(self.shapes, self.in_axes, strict=True)):
            changes[f"s{k}"] = shape.format(n=n_devices, block=f"{10_000_000 // n_devices:_}")
            changes[f"a{k}"] = ax
        return Scenario.defaults(self.fn, n_devices).with_changes(changes, n_devices)


PRESETS: tuple[Preset, ...] = (
    Preset(
        "seed_noreshape",
        "10M pairs, no reshape",
        "batched_dot",
        ("10_000_000, 3", "10_000_000, 3"),
        ("0", "0"),
        lesson=True,
    ),
    Preset(
        "seed",
        "10M pairs, reshaped",
        "batched_dot",
        ("{n}, {block}, 3", "{n}, {block}, 3"),
        ("0", "0"),
    ),
    Preset("broadcast", "Broadcast weights (None)", "matmul", ("{n}, 4, 5", "5, 2"), ("0", "None")),
    Preset(
        "axis1", "Mapped axis 1, out_axes=1", "add", ("3, {n}", "3, {n}"), ("1", "1"), out_axes="1"
    ),
    Preset(
        "outnone",
        "out_axes=None pitfall",
        "double",
        ("{n}, 4",),
        ("0",),
        out_axes="None",
        lesson=True,
    ),
    Preset("psum", "Normalise with psum", "normalise", ("{n}, 4",), ("0",), axis_name="i"),
)
BY_KEY = {p.key: p for p in PRESETS}


def is_lesson(current: Scenario, n_devices: int) -> bool:
    """Whether ``current`` is one of the mistakes the presets make on purpose (unchanged):
    its problems are the lesson, not something to repair first."""
    texts = current.texts()
    return any(p.lesson and p.scenario(n_devices).texts() == texts for p in PRESETS)
