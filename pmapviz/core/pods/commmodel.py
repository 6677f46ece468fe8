"""How long each collective's communication takes on a pod's inter-chip links: a MODEL.

The compiler's own estimate (``cost_analysis()["optimal_seconds"]``) counts compute and HBM
traffic only: a 64 MB all-reduce is 0.182 ms on 4, 16 and 256 v5e chips alike. So each
collective the compiled program does gets a time from its bytes, its groups and the slice:

- the chips of a group span some axes of the slice (those along which their coordinates vary);
  each spanned axis gives the group its links in both directions where the axis closes into a
  ring (:meth:`Topology.wraps`: v5e/v6e axes of 16, v4/v5p slices of a full cube or more), one
  direction's worth where it is a line;
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

Where a sweep shows it, :func:`links_used` says per slice which links the model gave the
slowest collective ('line x line', 'ring x ring') and :func:`switches` says in a sentence where
that changes: v5e and v6e axes close into rings only at the full pod's 16, so from 8x8 to 8x16
to 16x16 each chip of an all-reduce over the slice drives 2, 3, then 4 links.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pmapviz.core.pods.tpuchips import Topology, parse_topology

if TYPE_CHECKING:  # a report is read, never built, here
    from pmapviz.core.pods.podreport import PodReport

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

    def axis_kinds(self, dims: int) -> tuple[str, ...]:
        """Per axis of a ``dims``-D slice: 'ring', 'line', or '-' where the group does not
        span it."""
        kinds = {a: "ring" if r else "line" for a, r in zip(self.axes, self.rings, strict=True)}
        return tuple(kinds.get(a, "-") for a in range(dims))

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
            rings.append(len(values) == length and topology.wraps(a))
    return Span(len(distinct), tuple(axes), tuple(rings))


def _hops(a: tuple[int, ...], b: tuple[int, ...], topology: Topology) -> int:
    total = 0
    for k, length in enumerate(topology.shape):
        d = abs(a[k] - b[k])
        if topology.wraps(k):
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
    s = slowest_span(kind, size, groups, topology)
    return group_seconds(kind, size, s, link), s.words()


def slowest_span(
    kind: str, size: int, groups: list[list[tuple[int, ...]]], topology: Topology
) -> Span:
    """The span of the group that sets a collective's time (the last of equals; one chip where
    there is no group)."""
    link = topology.generation.ici_link_gbs * 1e9
    worst, slowest = 0.0, Span(1, (), ())
    for coords in groups:
        s = span(coords, topology)
        t = group_seconds(kind, size, s, link)
        if t >= worst:
            worst, slowest = t, s
    return slowest


# ------------------------------------------------------------ the links, where a sweep shows them
RING = " (wraparound links)"


def links_used(report: PodReport) -> dict:
    """The links the model gave a compile's slowest collective: ``{'collective': 'all-reduce',
    'links': 4, 'link_axes': ('ring', 'ring')}``, per axis of the slice 'ring', 'line' or '-'
    (not spanned); ``links`` None where no collective crosses chips or the slowest is a permute
    (timed by its hops on one link)."""
    slowest = max(report.collectives, key=lambda c: c.model_s, default=None)
    out = {"collective": slowest.kind if slowest else "", "links": None, "link_axes": ()}
    if slowest is None or slowest.model_s <= 0 or slowest.kind == "collective-permute":
        return out
    try:
        topology = parse_topology(report.topology)
    except ValueError:  # not a topology name (a hand-built report): no axes to read
        return out
    where = {c.id: c.coords for c in report.chips}
    if any(d not in where for g in slowest.groups for d in g):
        return out
    groups = [[where[d] for d in g] for g in slowest.groups]
    s = slowest_span(slowest.kind, slowest.bytes, groups, topology)
    if s.chips > 1:
        out |= {"links": s.links, "link_axes": s.axis_kinds(len(topology.shape))}
    return out


def axes_words(report: PodReport) -> str:
    """'line x ring': per axis of the slice, the model's links for the report's slowest
    collective ('' where :func:`links_used` names none)."""
    used = links_used(report)
    return "" if used["links"] is None else " x ".join(used["link_axes"])


def link_words(row: Mapping) -> str:
    """'ring x ring (4 links)' from a row with ``links`` and ``link_axes``; '' without."""
    n = row.get("links")
    if n is None:
        return ""
    return f"{' x '.join(row['link_axes'])} ({n} link{'s' if n != 1 else ''})"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms"


def switches(rows: Sequence[Mapping], fmt: Callable[[float], str] = _ms) -> list[str]:
    """Where, between neighbouring rows (``topology``, ``links``, ``link_axes``,
    ``communication_s``), the model's links change, a sentence each: 'From v5e:8x8 to v5e:8x16,
    axis 1 closes into a ring (wraparound links): the model gives each chip 3 links instead of
    2, and communication falls from 1.321 ms to 0.888 ms.'"""
    out = []
    for a, b in zip(rows, rows[1:], strict=False):
        was, now = tuple(a.get("link_axes") or ()), tuple(b.get("link_axes") or ())
        if a.get("links") is None or b.get("links") is None or len(was) != len(now):
            continue
        what = _what_changed(was, now)
        if not what:
            continue
        t0, t1 = a["communication_s"], b["communication_s"]
        verb = "falls" if t1 < t0 else "rises" if t1 > t0 else "stays"
        times = f"at {fmt(t0)}" if verb == "stays" else f"from {fmt(t0)} to {fmt(t1)}"
        links = (
            f"still gives each chip {b['links']} links"
            if a["links"] == b["links"]
            else f"gives each chip {b['links']} links instead of {a['links']}"
        )
        out.append(
            f"From {a['topology']} to {b['topology']}, {what}: the model {links}, and "
            f"communication {verb} {times}."
        )
    return out


_CHANGES = (  # (was, now) of one axis -> what to say of one axis, of several, and why
    (lambda x, y: x != "ring" and y == "ring", "closes into a ring", "close into rings", RING),
    (lambda x, y: x == "ring" and y == "line", "loses its wraparound", "lose their wraparound", ""),
    (lambda x, y: x == "-" and y == "line", "joins the group", "join the group", " (a line)"),
    (lambda x, y: x != "-" and y == "-", "leaves the group", "leave the group", ""),
)


def _what_changed(was: tuple[str, ...], now: tuple[str, ...]) -> str:
    """'axis 1 closes into a ring (wraparound links)', 'axes 0 and 1 close into rings ...',
    'axis 2 joins the group (a line)'; '' where every axis stays as it was."""
    pairs = list(zip(was, now, strict=True))
    said = []
    for test, one, several, why in _CHANGES:
        ks = [k for k, (x, y) in enumerate(pairs) if test(x, y)]
        if ks:
            which = f"axis {ks[0]} {one}" if len(ks) == 1 else f"axes {_and(ks)} {several}"
            said.append(which + why)
    return "; ".join(said)


def _and(ks: list[int]) -> str:
    return ", ".join(map(str, ks[:-1])) + f" and {ks[-1]}"
