"""The TPU generations a pod can be compiled for, their published figures, and topology names.

Pure data (no JAX). Every figure names its source: the Cloud TPU documentation pages for each
generation (``docs.cloud.google.com/tpu/docs/v4``, ``/v5e``, ``/v5p``, ``/v6e``), read
2026-12-06. The v4 page gives no inter-chip bandwidth; its per-link figure is the one in
"How to Scale Your Model" (jax-ml.github.io/scaling-book, the TPU chapter), and says so.

Hosts are libtpu's own layout (``process_index`` of each device: v5e slices above 4 chips come
as hosts of 4 chips, as Cloud's 4-chip v5e training VMs), read from the loaded topology.

A topology name is ``<generation>:<shape>`` as libtpu reads it: ``v5e:4x4`` (2-D, v5e and v6e)
or ``v4:2x2x2`` (3-D, v4 and v5p). :data:`OFFERED` is the list the pages and CLI offer (every
one compiled here, :mod:`tests.core.pods`); :func:`parse_topology` reads any name and says in one
line what is wrong with a bad one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pmapviz.core.base import valueparse
from pmapviz.core.base.valuetext import quote

GIB = 1024**3
DOCS = "https://docs.cloud.google.com/tpu/docs/"
BOOK = "https://jax-ml.github.io/scaling-book/tpus/"


@dataclass(frozen=True)
class Generation:
    """One TPU generation's published figures (per chip)."""

    name: str  # as in a topology name: "v5e"
    title: str  # "TPU v5e"
    device_kind: str  # what JAX calls its devices: "TPU v5 lite"
    hbm_bytes: int  # HBM per chip
    hbm_gbs: float  # HBM bandwidth per chip, GB/s
    bf16_tflops: float  # peak bf16 compute per chip
    ici_link_gbs: float  # one-way bandwidth of one inter-chip link, GB/s
    ici_ports: int  # links per chip
    dims: int  # 2 (2-D torus) or 3
    full_axis: int  # an axis this long (or a multiple, 3-D) closes into a ring (wraparound)
    source: str  # where the figures come from
    ici_source: str  # where the link bandwidth comes from (and how it was derived)

    @property
    def hbm_gib(self) -> float:
        """HBM per chip in GiB."""
        return self.hbm_bytes / GIB

    def wraps(self, length: int) -> bool:
        """Whether a slice's axis of this length has wraparound links (a ring, not a line).

        v4 and v5p: axes that are multiples of 4 in a slice of at least a cube (the Cloud
        pages: "2A=B=C or 2A=2B=C, each dimension a multiple of 4"; simplified to each axis a
        multiple of 4). v5e and v6e: only the full pod's 16 (their slices below 16x16 are
        meshes)."""
        if self.dims == 3:
            return length >= self.full_axis and length % self.full_axis == 0
        return length == self.full_axis


GENERATIONS = {
    g.name: g
    for g in (
        Generation(
            name="v4",
            title="TPU v4",
            device_kind="TPU v4",
            hbm_bytes=32 * GIB,
            hbm_gbs=1200,
            bf16_tflops=275,
            ici_link_gbs=45,
            ici_ports=6,
            dims=3,
            full_axis=4,
            source=DOCS + "v4 (275 TFLOP/s bf16, 32 GiB HBM2 at 1,200 GB/s, 3-D mesh/torus)",
            ici_source=BOOK + " (v4: 4.5e10 B/s one-way a link; the Cloud v4 page gives none)",
        ),
        Generation(
            name="v5e",
            title="TPU v5e",
            device_kind="TPU v5 lite",
            hbm_bytes=16 * GIB,
            hbm_gbs=819,
            bf16_tflops=197,
            ici_link_gbs=50,
            ici_ports=4,
            dims=2,
            full_axis=16,
            source=DOCS + "v5e (197 TFLOP/s bf16, 16 GB HBM2 at 819 GB/s, 2-D torus)",
            ici_source=DOCS + "v5e (400 GB/s bidirectional ICI a chip, 4 ports: 50 GB/s one-way)",
        ),
        Generation(
            name="v5p",
            title="TPU v5p",
            device_kind="TPU v5",
            hbm_bytes=95 * GIB,
            hbm_gbs=2765,
            bf16_tflops=459,
            ici_link_gbs=100,
            ici_ports=6,
            dims=3,
            full_axis=4,
            source=DOCS + "v5p (459 TFLOP/s bf16, 95 GiB HBM2e at 2,765 GB/s, 3-D torus)",
            ici_source=DOCS
            + "v5p (1,200 GB/s bidirectional ICI a chip, 6 ports: 100 GB/s one-way)",
        ),
        Generation(
            name="v6e",
            title="TPU v6e",
            device_kind="TPU v6 lite",
            hbm_bytes=32 * GIB,
            hbm_gbs=1638,
            bf16_tflops=918,
            ici_link_gbs=100,
            ici_ports=4,
            dims=2,
            full_axis=16,
            source=DOCS + "v6e (918 TFLOP/s bf16, 32 GB HBM at 1,638 GB/s, 2-D torus)",
            ici_source=DOCS + "v6e (800 GB/s bidirectional ICI a chip, 4 ports: 100 GB/s one-way)",
        ),
    )
}

# What the pages and the CLI offer, smallest first per generation (every one compiles here).
OFFERED = tuple(
    f"{gen}:{shape}"
    for gen, shapes in (
        ("v5e", "2x2 2x4 4x4 4x8 8x8 8x16 16x16"),
        ("v6e", "2x2 2x4 4x4 8x8 16x16"),
        ("v4", "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4"),
        ("v5p", "2x2x1 2x2x2 2x4x4 4x4x4"),
    )
    for shape in shapes.split()
)
DEFAULT = "v5e:2x4"
MAX_CHIPS = 256  # the largest slice offered: a whole v5e or v6e pod
_NAME = re.compile(r"^(v[0-9][a-z]?):([0-9]{1,3}(?:x[0-9]{1,3}){1,2})$")


@dataclass(frozen=True)
class Topology:
    """A topology name, read: its generation and its shape in chips."""

    generation: Generation
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        """As libtpu reads it: 'v5e:4x4'."""
        return f"{self.generation.name}:{'x'.join(map(str, self.shape))}"

    @property
    def chips(self) -> int:
        """How many chips the slice has."""
        return math.prod(self.shape)


def parse_topology(text: str, name: str = "The topology") -> Topology:
    """``v5e:4x4`` read and checked, or a SettingError that says what to type instead."""
    raw = str(text).strip().lower()
    m = _NAME.match(raw)
    examples = "e.g. v5e:4x4 or v4:2x2x2"
    if not m:
        raise valueparse.SettingError(
            f"{name} {quote(str(text)[:40])} is not a TPU topology name; "
            f"write generation:shape, {examples}."
        )
    gen = GENERATIONS.get(m[1])
    if gen is None:
        raise valueparse.SettingError(
            f"{name} {quote(m[1])}: pmapviz knows the generations "
            f"{', '.join(GENERATIONS)}; {examples}."
        )
    shape = tuple(int(d) for d in m[2].split("x"))
    if len(shape) != gen.dims:
        want = "AxB" if gen.dims == 2 else "AxBxC"
        raise valueparse.SettingError(
            f"{name} {quote(raw)}: a {gen.title} slice is {gen.dims}-D ({want}), "
            f"e.g. {_first_offered(gen)}."
        )
    topo = Topology(gen, shape)
    if topo.chips < 2 or topo.chips > MAX_CHIPS or min(shape) < 1:
        raise valueparse.SettingError(
            f"{name} {quote(raw)} has {topo.chips} chips; pick 2 to {MAX_CHIPS}, "
            f"e.g. {_first_offered(gen)}."
        )
    return topo


def _first_offered(gen: Generation) -> str:
    return next(t for t in OFFERED if t.startswith(gen.name + ":"))


def offered_for(generation: str) -> tuple[str, ...]:
    """The offered topologies of one generation, smallest first."""
    return tuple(t for t in OFFERED if t.split(":")[0] == generation)
