"""How long each collective's communication takes on a pod's inter-chip links: a MODEL.

The compiler's own estimate (``cost_analysis()["optimal_seconds"]``) counts compute and HBM
traffic only: a 64 MB all-reduce is 0.182 ms on 4, 16 and 256 v5e chips alike. So each
collective the compiled program does gets a time from its bytes, its groups and the slice:

- the chips of a group span some axes of the slice (those along which their coordinates vary);
  each spanned axis gives the group its links in both directions where the axis closes into a
  ring (:meth:`Generation.wraps`), one direction's worth where it is a line;
- bandwidth = links x the generation's one-way link figure (:mod:`tpuchips`, with its source);
- bytes each chip must move, by kind (``S`` = the operand's bytes on one device, ``g`` = chips
  in the group): all-reduce ``2 (g-1)/g S`` (reduce-scatter then all-gather), all-gather
  ``(g-1) S`` (the operand is one shard), reduce-scatter ``(g-1)/g S``, all-to-all
  ``(g-1)/g S`` times the average hops (a quarter of a ring, a third of a line), and
  collective-permute ``S`` times the longest hop distance of its pairs;
- devices of one chip (a v4 chip's two cores) share it: a group within one chip costs 0 here.

No latency per hop, no overlap with compute (the times add), no contention between
collectives: the model is the bandwidth term of "How to Scale Your Model"'s collective costs
(jax-ml.github.io/scaling-book), and every page that shows it says it is a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmapviz.core.pods.tpuchips import Topology

MODEL_NAME = "ICI bandwidth model (bytes / link bandwidth; no latency, no overlap)"


@dataclass(frozen=True)
class Span:
    """Where a group's chips lie on the slice."""

    chips: int  # distinct chips in the group
    axes: tuple[int, ...]  # the slice's axes the group spans
    rings: tuple[bool, ...]  # per spanned axis: closes into a ring (wraparound)

    @property
    def links(self) -> int:
        """One-way links a chip of the group can drive at once."""
        return sum(2 if ring else 1 for ring in self.rings)

    def words(self) -> str:
        """'4 chips along axis 0 (ring)'."""
        if self.chips <= 1:
            return "one chip"
        along = ", ".join(
            f"axis {a} ({'ring' if r else 'line'})"
            for a, r in zip(self.axes, self.rings, strict=True)
        )
        return f"{self.chips} chips along {along}"


def span(coords: list[tuple[int, ...]], topology: Topology) -> Span:
    """The axes a group of chips (their coordinates) spans, and which close into rings."""
    distinct = sorted(set(coords))
    axes, rings = [], []
    for a, length in enumerate(topology.shape):
        values = {c[a] for c in distinct}
        if len(values) > 1:
            axes.append(a)
            rings.append(len(values) == length and topology.generation.wraps(length))
    return Span(len(distinct), tuple(axes), tuple(rings))


def _hops(a: tuple[int, ...], b: tuple[int, ...], topology: Topology) -> int:
    total = 0
    for k, length in enumerate(topology.shape):
        d = abs(a[k] - b[k])
        if topology.generation.wraps(length):
            d = min(d, length - d)
        total += d
    return total


def bytes_moved(kind: str, size: int, g: int) -> float:
    """Bytes each chip sends for one collective of ``kind`` (operand ``size`` bytes, ``g``
    chips), before the all-to-all's hop factor."""
    if g <= 1:
        return 0.0
    return {
        "all-reduce": 2 * (g - 1) / g * size,
        "all-gather": (g - 1) * size,
        "reduce-scatter": (g - 1) / g * size,
        "all-to-all": (g - 1) / g * size,
    }.get(kind, float(size))


def group_seconds(kind: str, size: int, s: Span, link_bytes_s: float) -> float:
    """Seconds for one group of a collective (not a permute)."""
    if s.chips <= 1 or not s.axes:
        return 0.0
    moved = bytes_moved(kind, size, s.chips)
    if kind == "all-to-all":
        moved *= max(1.0, s.chips / (4 if all(s.rings) else 3))
    return moved / (s.links * link_bytes_s)


def collective_seconds(
    kind: str,
    size: int,
    groups: list[list[tuple[int, ...]]],
    topology: Topology,
    pairs: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
) -> tuple[float, str]:
    """(seconds, how) for one collective: groups as the chips' coordinates; the slowest group
    sets the time (groups run side by side on their own links)."""
    link = topology.generation.ici_link_gbs * 1e9
    if kind == "collective-permute":
        hops = max((_hops(a, b, topology) for a, b in pairs or []), default=0)
        if hops == 0:
            return 0.0, "every pair on one chip"
        return size * hops / link, f"{hops} hop{'s' if hops != 1 else ''} at most"
    worst, how = 0.0, "one chip"
    for coords in groups:
        s = span(coords, topology)
        t = group_seconds(kind, size, s, link)
        if t >= worst:
            worst, how = t, s.words()
    return worst, how
