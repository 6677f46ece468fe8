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

It also reads Cloud's accelerator types (``gcloud compute tpus tpu-vm create --accelerator-type``)
and maps each to the ``generation:shape`` libtpu reads (:data:`CLOUD_SHAPES`), read 2026-12-07:

- v5e: ``v5litepod-N`` (Cloud's name; ``v5e-N`` is read too), N counting chips: the v5e page
  (``docs.cloud.google.com/tpu/docs/v5e``) gives the 2-D shapes 1x1, 2x2, 2x4, 4x4, 4x8, 8x8,
  8x16, 16x16 with 1 to 256 chips, and AcceleratorType as ``v$VERSION_NUMBER-$CHIP_COUNT``
  (serving types ``v5litepod-1``, ``-4``, ``-8``).
- v6e: ``v6e-N``, N counting chips; the v6e page (``/tpu/docs/v6e``) gives a 256-chip pod, a
  2-D torus, "many similarities with v5e"; its table of slice shapes did not come through the
  search, so the v5e shapes are ASSUMED for the same chip counts (libtpu describes every one).
- v5p: ``v5p-N``, N counting TensorCores, 2 a chip ("v5p-32 specifies a v5p TPU slice with 32
  TensorCores (16 chips)", ``/tpu/docs/supported-tpu-configurations``); the v5p page's table:
  2x2x1 (8 cores, 4 chips), 2x2x2 (16, 8), 2x4x4 (64, 32), 4x4x4 (128, 64), 4x4x8 (256, 128),
  4x8x8 (512, 256). 16 chips (``v5p-32``) is not in that table: 2x2x4 is ASSUMED, the most
  cube-like shape (Cloud's default) and the v4 example below.
- v4: ``v4-N``, N counting TensorCores, 2 a chip ("v4-128 specifies a configuration with TPU v4
  and 128 TensorCores"; "2x2x4 (16 chips, 2 TensorCores each)", ``/tpu/docs/types-topologies``);
  the shapes are ASSUMED to be v5p's for the same chip counts (the v4 table did not come through).

Every mapped shape up to :data:`MAX_CHIPS` was described by libtpu 0.0.42 here; a count with
no shape (``v5e-12``), one chip (libtpu describes no 1x1) or more than :data:`MAX_CHIPS` chips
is refused in one line that names the nearest valid types.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from pmapviz.core.base import valueparse
from pmapviz.core.base.valuetext import quote
from pmapviz.core.pods import tpuhosts

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
    full_axis: int  # an axis this long closes into a ring (3-D: every axis a multiple of it)
    source: str  # where the figures come from
    ici_source: str  # where the link bandwidth comes from (and how it was derived)
    dcn_host_gbps: float | None = None  # published data-center network a host, Gbit/s
    dcn_chips_per_host: int = 0  # the chips that share it, as published
    dcn_source: str = ""  # where the DCN figures come from

    @property
    def hbm_gib(self) -> float:
        """HBM per chip in GiB."""
        return self.hbm_bytes / GIB

    @property
    def compiler_hbm(self) -> CompilerHbm:
        """What the compiler allows one device, measured (:data:`COMPILER_HBM`)."""
        return COMPILER_HBM[self.name]

    @property
    def dcn_chip_bytes_s(self) -> float | None:
        """One chip's share of its host's data-center network, bytes/s (every chip of the host
        sending at once), or None where pmapviz has no published figure."""
        if not self.dcn_host_gbps or not self.dcn_chips_per_host:
            return None
        return self.dcn_host_gbps * 1e9 / 8 / self.dcn_chips_per_host

    def wraps(self, length: int) -> bool:
        """Whether an axis of this length can close into a ring (wraparound links): v5e and
        v6e only the full pod's 16; v4 and v5p a multiple of 4, in a slice whose every axis is
        one (:meth:`Topology.wraps` asks that of the whole slice)."""
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
            dcn_host_gbps=200,
            dcn_chips_per_host=8,
            dcn_source=DOCS + "v5e (per-host NIC configuration 2 x 100 Gbps, 8 chips a host; "
            "6.4 Tbps data-center network a 256-chip pod)",
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


@dataclass(frozen=True)
class CompilerHbm:
    """The HBM libtpu lets one device's program hold, as measured: below the published figure
    (the runtime keeps some), per device (v4: per TensorCore, two a chip)."""

    allowed_bytes: int  # the largest peak it accepted (memory_analysis: args + out + temp + code)
    stated_gib: float  # what its refusal says: "exceeds available HBM (15.75G)"


# Measured by `.venv/bin/python benchmarks/hbm_allowance.py` on 2026-12-07 with libtpu 0.0.42.1
# (JAX 0.10.2): a replicated f32[rows, 1024] doubled on each generation's smallest slice, rows
# bisected to the refusal. Published: Generation.hbm_bytes and its source.
COMPILER_HBM_MEASURED = "2026-12-07, libtpu 0.0.42.1, benchmarks/hbm_allowance.py"
COMPILER_HBM = {
    "v4": CompilerHbm(16_372_945_920, 15.25),
    "v5e": CompilerHbm(16_909_323_776, 15.75),
    "v5p": CompilerHbm(102_803_381_248, 95.74),
    "v6e": CompilerHbm(33_550_224_384, 31.25),
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
MAX_SLICES = 64  # the most slices a multislice target joins ("64 x v5e:16x16")
MULTISLICE_EXAMPLE = "2 x v5e:4x4"
# "2 x v5e:4x4", "2xv5e:4x4": a slice count, an x, then a topology (libtpu's or Cloud's name)
_SLICES = re.compile(r"^(.*?)\s*[x\u00d7*]\s*(v[0-9][a-z0-9]*[:-].*)$")
_NAME = re.compile(r"^(v[0-9][a-z]?):([0-9]{1,3}(?:x[0-9]{1,3}){1,2})$")

# Cloud's accelerator types (see the module's docstring for the sources)
_CLOUD = re.compile(r"^(v[0-9][a-z]*)-([0-9]{1,6})$")
CLOUD_PREFIXES = {"v5litepod": "v5e", "v5e": "v5e", "v6e": "v6e", "v5p": "v5p", "v4": "v4"}
CLOUD_PER_CHIP = {"v5e": 1, "v6e": 1, "v5p": 2, "v4": 2}  # what N counts: chips, or TensorCores
CLOUD_SHAPES = {  # chips -> shape, by the slice's dimensions
    2: {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8), 128: (8, 16)}
    | {256: (16, 16)},
    3: {4: (2, 2, 1), 8: (2, 2, 2), 16: (2, 2, 4), 32: (2, 4, 4), 64: (4, 4, 4)}
    | {128: (4, 4, 8), 256: (4, 8, 8)},
}


MAX_TARGET_LEN = 48  # '64 x v5litepod-256 on ct5lp-hightpu-8t' and the like
# "v5e:2x4 on 8-chip hosts", "v5e:2x4 on ct5lp-hightpu-8t": a slice, then the hosts it is rented as
_HOSTS = re.compile(r"^(.*?)\s+on\s+(.*?)\s*$")


@dataclass(frozen=True)
class Topology:
    """A topology name, read: its generation, its shape in chips, how many such slices join
    over the data-center network (Multislice; 1: one slice), and the chips a host holds (0:
    libtpu's default layout)."""

    generation: Generation
    shape: tuple[int, ...]
    slices: int = 1
    host_chips: int = 0

    @property
    def slice_name(self) -> str:
        """One slice, as libtpu reads it: 'v5e:4x4'."""
        return f"{self.generation.name}:{'x'.join(map(str, self.shape))}"

    @property
    def name(self) -> str:
        """The target: 'v5e:4x4', '2 x v5e:4x4' for two slices, 'v5e:2x4 on 8-chip hosts'
        where the hosts are not libtpu's default."""
        one = self.slice_name if self.slices == 1 else f"{self.slices} x {self.slice_name}"
        return one + (f" on {self.host_chips}-chip hosts" if self.host_chips else "")

    @property
    def host_layout(self) -> tpuhosts.HostLayout:
        """The hosts the slice is rented as (libtpu's default where none was asked)."""
        return tpuhosts.layout(self.generation.name, self.host_chips)

    @property
    def host_bounds(self) -> tuple[int, int, int] | None:
        """libtpu's ``chips_per_host_bounds`` for the hosts asked (None: its default)."""
        return self.host_layout.bounds if self.host_chips else None

    @property
    def chips(self) -> int:
        """How many chips one slice has."""
        return math.prod(self.shape)

    @property
    def total_chips(self) -> int:
        """Chips in every slice together."""
        return self.chips * self.slices

    def wraps(self, axis: int) -> bool:
        """Whether the slice's ``axis`` has wraparound links (a ring, not a line).

        v4 and v5p: only in slices of at least a full cube, every axis a multiple of 4 (the v5p
        page: "All 4x4x4 and larger slices (one cube) have full 3D torus connectivity. Slices
        smaller than a full cube are 3D connected, however, they don't have wrap-around links";
        the v4 page: a torus where "each dimension is a multiple of 4"): 2x2x4 and 2x4x4 are
        meshes. v5e and v6e: an axis as long as the full pod's 16 (8x16's long axis; its 8 and
        every axis below are lines)."""
        gen = self.generation
        if gen.dims == 3:
            return all(gen.wraps(n) for n in self.shape)
        return gen.wraps(self.shape[axis])


def parse_topology(text: str, name: str = "The topology", multislice: bool = False) -> Topology:
    """``v5e:4x4`` (or Cloud's ``v5litepod-16``) read and checked, or a SettingError that says
    what to type instead; with ``multislice``, also ``2 x v5e:4x4`` (1 to :data:`MAX_SLICES`
    slices joined over the data-center network)."""
    raw = str(text).strip().lower()
    if len(raw) > MAX_TARGET_LEN:
        raise valueparse.SettingError(
            f"{name} {quote(str(text)[:40])}... is {len(raw)} characters; a target is at most "
            f"{MAX_TARGET_LEN}, e.g. {MULTISLICE_EXAMPLE} or v5e:2x4 on 8-chip hosts."
        )
    if (m := _HOSTS.match(raw)) is not None:
        return with_hosts(parse_topology(m[1], name, multislice), m[2], str(text), name)
    if (m := _SLICES.match(raw)) is not None:
        count = _slice_count(m[1], str(text), name)
        if not multislice:
            raise valueparse.SettingError(
                f"{name} {quote(str(text))} joins {count} slices (Multislice): this page "
                f"compiles for one slice; pick one, e.g. {m[2]}. Several slices compile on the "
                "Pods, Compiled, Training and Meshes pages, in `pmapviz pod` and in "
                "pmapviz.compiled(...)."
            )
        one = parse_topology(m[2], name)
        return Topology(one.generation, one.shape, count)
    if _CLOUD.match(raw):
        return _cloud_topology(raw, name)
    m = _NAME.match(raw)
    examples = "e.g. v5e:4x4 or v4:2x2x2"
    if not m:
        raise valueparse.SettingError(
            f"{name} {quote(str(text)[:40])} is not a TPU topology name; "
            f"write generation:shape, {examples}, or Cloud's accelerator type, e.g. v5litepod-16."
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


def with_hosts(topo: Topology, hosts: str, text: str, name: str) -> Topology:
    """``topo`` rented as the hosts ``hosts`` names ('8-chip hosts', Cloud's 'ct5lp-hightpu-8t'
    or just '8'; :mod:`tpuhosts`), or one line naming the choices its generation has."""
    gen = topo.generation
    chips = tpuhosts.read(gen.name, gen.title, topo.shape, hosts, f"{name} {quote(text)}")
    return replace(topo, host_chips=chips)


def host_choices(topology: Topology) -> tuple[tpuhosts.HostLayout, ...]:
    """The host layouts a slice can be rented as (libtpu's default first): a page's choice."""
    return tpuhosts.choices(topology.generation.name, topology.shape)


def _slice_count(count: str, text: str, name: str) -> int:
    """The ``N`` of ``N x v5e:4x4``, 1 to :data:`MAX_SLICES`, or one line that says so."""
    fix = f"write the number of slices, 1 to {MAX_SLICES}, e.g. {MULTISLICE_EXAMPLE}"
    if not re.fullmatch(r"[0-9]{1,6}", count):
        raise valueparse.SettingError(
            f"{name} {quote(text)}: {quote(count[:20])} is not a number of slices; {fix}."
        )
    n = int(count)
    if not 1 <= n <= MAX_SLICES:
        raise valueparse.SettingError(
            f"{name} {quote(text)} joins {n:,} slices; pmapviz compiles 1 to {MAX_SLICES}: {fix}."
        )
    return n


def _cloud_topology(raw: str, name: str) -> Topology:
    """Cloud's ``v5litepod-16`` as ``v5e:4x4``, or a SettingError naming the nearest types."""
    m = _CLOUD.match(raw)
    prefix, n = m[1], int(m[2])
    if prefix not in CLOUD_PREFIXES:
        raise valueparse.SettingError(
            f"{name} {quote(raw)}: pmapviz reads Cloud's types "
            f"{', '.join(p + '-N' for p in CLOUD_PREFIXES)}, or generation:shape, e.g. v5e:4x4."
        )
    gen = GENERATIONS[CLOUD_PREFIXES[prefix]]
    per, shapes = CLOUD_PER_CHIP[gen.name], CLOUD_SHAPES[gen.dims]
    chips = n // per
    if n % per == 0 and chips in shapes:
        topo = Topology(gen, shapes[chips])
        if topo.chips >= 2:
            return topo
        raise valueparse.SettingError(
            f"{name} {quote(raw)} = {topo.name}, one chip: pmapviz compiles slices of 2 to "
            f"{MAX_CHIPS} chips (libtpu describes no {topo.name} here); "
            f"the nearest: {_nearest(prefix, gen, chips)}."
        )
    counts = "chips" if per == 1 else f"TensorCores, {per} a chip"
    if n % per == 0 and chips > MAX_CHIPS:
        raise valueparse.SettingError(
            f"{name} {quote(raw)} is {chips:,} chips ({prefix}-N counts {counts}); pmapviz "
            f"compiles up to {MAX_CHIPS}: the largest is {_nearest(prefix, gen, chips)}."
        )
    raise valueparse.SettingError(
        f"{name} {quote(raw)}: {prefix}-N counts {counts}, and Cloud has no {gen.title} slice "
        f"of {n:,} {'chips' if per == 1 else 'TensorCores'}; the nearest: "
        f"{_nearest(prefix, gen, n / per)}."
    )


def _nearest(prefix: str, gen: Generation, chips: float) -> str:
    """'v5e-8 = v5e:2x4, v5e-16 = v5e:4x4': the valid types just below and above ``chips``."""
    per, shapes = CLOUD_PER_CHIP[gen.name], CLOUD_SHAPES[gen.dims]
    valid = sorted(c for c in shapes if 2 <= c <= MAX_CHIPS)
    below = [c for c in valid if c < chips][-1:]
    above = [c for c in valid if c > chips][:1]
    return ", ".join(f"{prefix}-{c * per} = {Topology(gen, shapes[c]).name}" for c in below + above)


def cloud_type(topology: Topology) -> str:
    """Cloud's accelerator type for a slice ('v5litepod-16' for v5e:4x4), or '' where the
    shape is not the one Cloud's type of that many chips maps to."""
    gen = topology.generation
    if CLOUD_SHAPES[gen.dims].get(topology.chips) != topology.shape:
        return ""
    prefix = next(p for p, g in CLOUD_PREFIXES.items() if g == gen.name)
    return f"{prefix}-{topology.chips * CLOUD_PER_CHIP[gen.name]}"


def cloud_words(text: str) -> str:
    """'v5litepod-16 = v5e:4x4' where ``text`` is Cloud's accelerator type (and maps), else ''."""
    raw = str(text).strip().lower()
    if not _CLOUD.match(raw):
        return ""
    try:
        return f"{raw} = {parse_topology(raw).name}"
    except valueparse.SettingError:
        return ""


def _first_offered(gen: Generation) -> str:
    return next(t for t in OFFERED if t.startswith(gen.name + ":"))


def offered_for(generation: str) -> tuple[str, ...]:
    """The offered topologies of one generation, smallest first."""
    return tuple(t for t in OFFERED if t.split(":")[0] == generation)
