"""The explorer's examples: one click sets a whole scenario (function, shapes, axes)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pmapviz.core.planning import seedpairs
from pmapviz.core.planning.scenarios import Scenario


@dataclass(frozen=True)
class Preset:
    """One explorer example: a function, its shapes and axes; ``lesson``: a mistake on purpose."""

    key: str
    label: str  # "{pairs}" stands for the seed's pairs the shapes hold on n devices
    fn: str
    shapes: tuple[str, ...]  # "{n}" stands for the device count, "{block}" for the seed's
    # pairs a device (seedpairs.split(n).block: 10M // n, the largest block that n divide)
    in_axes: tuple[str, ...]
    out_axes: str = "0"
    axis_name: str = ""
    lesson: bool = False  # a mistake on purpose: what pmap rejects, shown as a lesson

    @functools.lru_cache(maxsize=256)  # noqa: B019  (presets live as long as the process)
    def scenario(self, n_devices: int) -> Scenario:
        """The explorer's settings for this example on ``n_devices`` devices (immutable, so
        every rerun shares one)."""
        changes = {"out": self.out_axes, "name": self.axis_name}
        block = seedpairs.split(n_devices).block
        for k, (shape, ax) in enumerate(zip(self.shapes, self.in_axes, strict=True)):
            changes[f"s{k}"] = shape.format(n=n_devices, block=f"{block:_}")
            changes[f"a{k}"] = ax
        return Scenario.defaults(self.fn, n_devices).with_changes(changes, n_devices)

    def label_for(self, n_devices: int) -> str:
        """Its button's label on ``n_devices`` devices: "10M pairs, reshaped" where the
        devices divide the seed's pairs, else the pairs its shapes really hold ("9,999,999
        pairs, reshaped" on 3)."""
        used = seedpairs.split(n_devices).used
        return self.label.format(pairs=f"{used // 10**6}M" if used % 10**6 == 0 else f"{used:,}")


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
        "{pairs} pairs, reshaped",
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
