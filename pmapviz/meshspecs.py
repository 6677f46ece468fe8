"""Named meshes and PartitionSpecs: what ``jax.make_mesh`` and ``NamedSharding(mesh, spec)``
do with an array, before anything runs.

* ``parse_mesh("2x4")`` -> ``(2, 4)``; ``parse_axis_names("data, model", 2)``;
* ``parse_spec("P('data', None)")`` -> ``('data', None)``, as a person writes it: ``P()``,
  ``P(('data', 'model'))``, ``PartitionSpec(None, 'model')``, or the short form
  ``data, None``. Text is read by a small tokenizer, never evaluated;
* ``problems(mesh, shape, spec)``: what JAX would refuse, in the user's shapes and numbers,
  each with a fix: an unknown axis name, an axis used twice, a spec longer than the rank, a
  dimension the axis sizes do not divide;
* ``place(mesh, shape, spec)``: which device (at which mesh coordinates) holds which block,
  read from ``NamedSharding(...).devices_indices_map`` on this process's devices; for a mesh
  bigger than this process (planning for N devices) the same placement by index arithmetic,
  checked against JAX in tests for every mesh this process can build.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pmapviz import devicefacts, expr, settings
from pmapviz.settings import SettingError, quote

MAX_MESH_RANK = 4
MAX_MESH_DEVICES = 4096
MAX_SPEC_TEXT = 200
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}\Z")

Entry = str | tuple[str, ...] | None  # one dimension of a spec, as typed


# ---------------------------------------------------------------- reading text
def parse_mesh(text: Any, name: str = "mesh") -> tuple[int, ...]:
    """'2x4', '2, 4', '8' -> the mesh's axis sizes (each >= 1, at most 4096 devices)."""
    raw = str(text if text is not None else "").strip()
    parts = [p.strip() for p in re.split(r"[x×,*]", raw)]
    if not raw or any(not re.fullmatch(r"[0-9]{1,5}", p) for p in parts):  # ASCII: not '²'
        raise SettingError(
            f"{name} {quote(raw)} is not a mesh shape: write the axis sizes "
            "separated by x or commas, like 2x4."
        )
    sizes = tuple(int(p) for p in parts)
    if len(sizes) > MAX_MESH_RANK:
        raise SettingError(f"{name} has {len(sizes)} axes; at most {MAX_MESH_RANK}.")
    if min(sizes) < 1:
        raise SettingError(f"{name} {quote(raw)}: every axis has at least 1 device.")
    if math.prod(sizes) > MAX_MESH_DEVICES:
        raise SettingError(
            f"{name} {quote(raw)} has {math.prod(sizes):,} devices; at most {MAX_MESH_DEVICES:,}."
        )
    return sizes


def parse_axis_names(text: Any, rank: int, name: str = "axis names") -> tuple[str, ...]:
    """'data, model' -> ('data', 'model'): one simple name per mesh axis, all different."""
    raw = str(text if text is not None else "").strip()
    names = tuple(p.strip().strip("'\"") for p in raw.split(",")) if raw else ()
    if len(names) != rank:
        like = ", ".join(DEFAULT_NAMES[:rank])
        raise SettingError(
            f"{name} {quote(raw)} names {len(names)} axes; the mesh has {rank}: "
            f"give one name per axis, like {like}."
        )
    bad = [n for n in names if not NAME.match(n)]
    if bad:
        raise SettingError(
            f"{name}: {quote(bad[0])} is not a simple name (letters, digits "
            "and _, not starting with a digit)."
        )
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise SettingError(f"{name}: {quote(twice)} names two axes; each axis has its own name.")
    return names


DEFAULT_NAMES = ("data", "model", "pipe", "expert")

_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<str>'[^']*'|\"[^\"]*\")"
    r"|(?P<punct>[(),]))"
)


def _tokens(raw: str, name: str) -> list[str]:
    out, pos = [], 0
    while pos < len(raw):
        if raw[pos:].strip() == "":
            break
        m = _TOKEN.match(raw, pos)
        if not m:
            bad = quote(raw[pos:].strip()[:12])
            raise SettingError(
                f"{name} {quote(raw)}: {bad} is not part of a PartitionSpec; "
                "write it like P('data', None)."
            )
        out.append(m.group(m.lastgroup).strip())
        pos = m.end()
    return out


def parse_spec(text: Any, name: str = "spec") -> tuple[Entry, ...]:
    """A PartitionSpec as typed: ``P('data', None)``, ``P(('data', 'model'))``, ``P()``,
    ``jax.P(...)``, ``PartitionSpec(...)``, or the short form ``data, None``. Each entry is
    None, an axis name, or a tuple of names."""
    raw = str(text if text is not None else "").strip()
    if len(raw) > MAX_SPEC_TEXT:
        raise SettingError(f"{name} is {len(raw):,} characters long; at most {MAX_SPEC_TEXT}.")
    toks = _tokens(raw, name)
    if toks[:2] and toks[0] in ("P", "jax.P", "PartitionSpec", "jax.sharding.PartitionSpec"):
        if len(toks) < 3 or toks[1] != "(" or toks[-1] != ")":
            raise SettingError(f"{name} {quote(raw)}: write it like P('data', None).")
        toks = toks[2:-1]
    entries, i = [], 0
    while i < len(toks):
        entry, i = _entry(toks, i, raw, name)
        entries.append(entry)
        if i < len(toks):
            if toks[i] != ",":
                raise SettingError(
                    f"{name} {quote(raw)}: expected a comma after entry {len(entries)}."
                )
            i += 1
    return tuple(entries)


def _entry(toks: list[str], i: int, raw: str, name: str) -> tuple[Entry, int]:
    tok = toks[i]
    if tok == "(":
        names, i = [], i + 1
        while i < len(toks) and toks[i] != ")":
            if toks[i] != ",":
                names.append(_axis(toks[i], raw, name))
            i += 1
        if i >= len(toks):
            raise SettingError(f"{name} {quote(raw)}: a ( is never closed.")
        return tuple(names), i + 1
    if tok in ("None", "none", "null"):
        return None, i + 1
    return _axis(tok, raw, name), i + 1


def _axis(tok: str, raw: str, name: str) -> str:
    bare = tok.strip("'\"")
    if not NAME.match(bare):
        raise SettingError(f"{name} {quote(raw)}: {quote(tok)} is not an axis name or None.")
    return bare


def spec_text(spec: tuple[Entry, ...]) -> str:
    """('data', None) -> "P('data', None)", as JAX prints it."""

    def one(e: Entry) -> str:
        if e is None:
            return "None"
        if isinstance(e, tuple):
            return "(" + ", ".join(repr(a) for a in e) + ("," if len(e) == 1 else "") + ")"
        return repr(e)

    return "P(" + ", ".join(one(e) for e in spec) + ")"


def axes_of(entry: Entry) -> tuple[str, ...]:
    """The mesh axes a spec entry names: () for None, a 1-tuple for one name."""
    if entry is None:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


# ---------------------------------------------------------------- what JAX would refuse
@dataclass(frozen=True)
class Mesh:
    """A named mesh: its shape and one name per axis."""

    shape: tuple[int, ...]
    names: tuple[str, ...]

    @property
    def size(self) -> dict[str, int]:
        """Each axis name -> its size."""
        return dict(zip(self.names, self.shape, strict=True))

    @property
    def devices(self) -> int:
        """How many devices the mesh has."""
        return math.prod(self.shape)

    def text(self) -> str:
        """The mesh as text: 'data=2 x model=4'."""
        return " x ".join(f"{n}={s}" for n, s in zip(self.names, self.shape, strict=True))


@dataclass(frozen=True)
class Problem:
    """Something JAX would refuse: a code, the message in the user's numbers, and a fix."""

    code: str
    message: str
    fix: str


def problems(
    mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...], what: str = "x"
) -> list[Problem]:
    """What ``NamedSharding(mesh, spec)`` refuses for an array of ``shape`` (the constructor,
    ``check_compatible_aval`` and ``shard_shape``), in these numbers, each with a fix."""
    found = []
    for rule in (_unknown_axes, _axes_twice, _too_long, _indivisible):
        found += rule(mesh, shape, spec, what)
        if found:  # JAX stops at the first of these, and so do we
            return found
    return found


def _unknown_axes(mesh: Mesh, shape, spec, what: str) -> list[Problem]:
    for e in spec:
        for a in axes_of(e):
            if a not in mesh.names:
                return [
                    Problem(
                        "unknown_axis",
                        f"{spec_text(spec)} names the axis {quote(a)}, "
                        f"which the mesh ({mesh.text()}) does not have.",
                        f"Use one of {', '.join(mesh.names)}, or None.",
                    )
                ]
    return []


def _axes_twice(mesh: Mesh, shape, spec, what: str) -> list[Problem]:
    used = [a for e in spec for a in axes_of(e)]
    for a in used:
        if used.count(a) > 1:
            return [
                Problem(
                    "axis_twice",
                    f"{spec_text(spec)} uses the mesh axis {quote(a)} "
                    "twice: each mesh axis splits at most one dimension.",
                    f"Keep {quote(a)} in one entry; put None (or another axis) in the other.",
                )
            ]
    return []


def _too_long(mesh: Mesh, shape, spec, what: str) -> list[Problem]:
    if len(spec) <= len(shape):
        return []
    fixed = spec_text(spec[: len(shape)])
    return [
        Problem(
            "spec_too_long",
            f"{spec_text(spec)} has {len(spec)} entries, but {what} "
            f"{shape} has {len(shape)} dimensions.",
            f"Use at most {len(shape)} entries: {fixed}.",
        )
    ]


def _indivisible(mesh: Mesh, shape, spec, what: str) -> list[Problem]:
    for dim, e in enumerate(spec):
        parts = math.prod(mesh.size[a] for a in axes_of(e))
        if shape[dim] % parts:
            lo = shape[dim] // parts * parts
            sizes = " or ".join(f"{v:,}" for v in (lo, lo + parts) if v > 0)
            return [
                Problem(
                    "indivisible",
                    f"Dimension {dim} of {what} {shape} has "
                    f"{shape[dim]:,} elements; {' x '.join(axes_of(e))} splits it "
                    f"into {parts} equal blocks, and {parts} does not divide "
                    f"{shape[dim]:,}.",
                    f"Make dimension {dim} a multiple of {parts} ({sizes}), or leave it "
                    "whole (None).",
                )
            ]
    return []


# ---------------------------------------------------------------- where each block goes
@dataclass(frozen=True)
class Block:
    """One device's block of an array: the device, its mesh coordinates and its index."""

    device: int  # the device's id
    coords: tuple[int, ...]  # its place on the mesh
    index: tuple[tuple[int, int], ...]  # [start, stop) of each dimension


@dataclass(frozen=True)
class Placement:
    """Where an array goes under ``NamedSharding(mesh, spec)``: each device's block, the block
    shape, and the axes it is replicated over."""

    mesh: Mesh
    shape: tuple[int, ...]
    spec: tuple[Entry, ...]
    local_shape: tuple[int, ...]
    replicated_over: tuple[str, ...]  # mesh axes no dimension is split over
    blocks: tuple[Block, ...]  # one per device, in mesh order
    from_jax: bool  # read from NamedSharding (else: planned for more devices than this has)

    def to_dict(self) -> dict:
        """The CLI's JSON for one argument (tuples of axes as lists)."""
        devices = [
            {"id": b.device, "coords": list(b.coords), "index": [list(i) for i in b.index]}
            for b in self.blocks
        ]
        return {
            "shape": list(self.shape),
            "spec": [list(e) if isinstance(e, tuple) else e for e in self.spec],
            "local_shape": list(self.local_shape),
            "replicated_over": list(self.replicated_over),
            "devices": devices,
        }


def local_shape(mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...]) -> tuple[int, ...]:
    """Each device's block of an array of ``shape`` placed by ``spec`` (which must divide it)."""
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    return tuple(
        d // math.prod(mesh.size[a] for a in axes_of(e)) for d, e in zip(shape, full, strict=True)
    )


def place(
    mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...], devices: list | None = None
) -> Placement:
    """Where ``NamedSharding(mesh, spec)`` puts each block of an array of ``shape``; the spec
    must have no problems. ``devicesetup``: JAX devices for the mesh (default: this process's
    first ones, when it has enough); without enough, the same placement is planned."""
    used = {a for e in spec for a in axes_of(e)}
    replicated = tuple(n for n in mesh.names if n not in used)
    full = tuple(spec) + (None,) * (len(shape) - len(spec))
    local = local_shape(mesh, shape, spec)
    jax_devices = devices if devices is not None else _local_devices(mesh.devices)
    if jax_devices is not None:
        blocks = _blocks_from_jax(mesh, shape, spec, jax_devices)
    else:
        blocks = _blocks_planned(mesh, shape, full)
    return Placement(
        mesh, tuple(shape), tuple(spec), local, replicated, blocks, jax_devices is not None
    )


def device_grid(mesh: Mesh, blocks: tuple[Block, ...]) -> list:
    """The devices' ids laid out as the mesh (nested lists), from a placement's blocks."""
    flat = [b.device for b in blocks]

    def nest(items: list, shape: tuple[int, ...]) -> list:
        if len(shape) <= 1:
            return items
        step = len(items) // shape[0]
        return [nest(items[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]

    return nest(flat, mesh.shape)


def _local_devices(n: int) -> list | None:
    """The first ``n`` devices of the current device set, or None when it has fewer."""
    devs = devicefacts.local_devices_for_work()
    return devs[:n] if len(devs) >= n else None


def jax_mesh(mesh: Mesh, devices: list):
    """The JAX mesh (Explicit axes, as ``jax.make_mesh`` makes them) on ``devicesetup``."""
    import jax

    return jax.make_mesh(mesh.shape, mesh.names, devices=devices[: mesh.devices])


def _blocks_from_jax(mesh: Mesh, shape, spec, devices: list) -> tuple[Block, ...]:
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    m = jax_mesh(mesh, devices)
    where = NamedSharding(m, PartitionSpec(*spec)).devices_indices_map(tuple(shape))
    grid = np.asarray(m.devices)
    out = []
    for coords in np.ndindex(*mesh.shape):
        dev = grid[coords]
        index = tuple(s.indices(n)[:2] for s, n in zip(where[dev], shape, strict=True))
        out.append(Block(dev.id, tuple(int(c) for c in coords), index))
    return tuple(out)


def _blocks_planned(mesh: Mesh, shape, full) -> tuple[Block, ...]:
    """Index arithmetic for a mesh bigger than this process: dimension d split over axes
    (a1, ..., ak) puts block number sum(coord[aj] * prod(size[a(j+1)..ak])) (a1 the most
    significant, as JAX does) on the device at those coordinates; ids in row-major order."""
    out = []
    for dev, coords in enumerate(_ndindex(mesh.shape)):
        at = dict(zip(mesh.names, coords, strict=True))
        index = []
        for d, e in zip(shape, full, strict=True):
            k, parts = 0, 1
            for a in axes_of(e):
                k, parts = k * mesh.size[a] + at[a], parts * mesh.size[a]
            block = d // parts
            index.append((k * block, (k + 1) * block))
        out.append(Block(dev, coords, tuple(index)))
    return tuple(out)


def _ndindex(shape: tuple[int, ...]):
    if not shape:
        yield ()
        return
    for head in range(shape[0]):
        for rest in _ndindex(shape[1:]):
            yield (head, *rest)


# ---------------------------------------------------------------- the Meshes page's URL state
MAX_ARGS = 3  # arguments on the page


def default_mesh(n_devices: int) -> tuple[int, ...]:
    """2 x (n/2) when the devices split in two (2x4 for 8), else all on one axis."""
    return (2, n_devices // 2) if n_devices % 2 == 0 and n_devices >= 4 else (n_devices,)


def _check_names(texts) -> None:
    parse_axis_names(texts["names"], len(parse_mesh(texts["mesh"])))


def schema(n_devices: int) -> settings.Schema:
    """The Meshes page: mesh (axis sizes), names (one per axis), s0.. (global shapes) and
    p0.. (PartitionSpecs, as typed); an empty shape leaves that argument out."""
    s = settings
    sizes = default_mesh(n_devices)
    names = ", ".join(DEFAULT_NAMES[: len(sizes)])
    first = sizes[0] * 4
    shapes = (f"{first}, 16", f"16, {4 * sizes[-1]}", "")
    w_spec = f"P(None, '{DEFAULT_NAMES[1]}')" if len(sizes) > 1 else "P()"  # 1 axis: w whole
    specs = (f"P('{DEFAULT_NAMES[0]}', None)", w_spec, "P()")

    def shape_or_none(t: str, name: str):
        return s.parse_shape(t, name) if t.strip() else None

    def shown(as_text):  # a typed value back to text; text (from the widgets) as it is
        return lambda v: v if isinstance(v, str) else as_text(v)

    fields = [
        s.text_field(
            "mesh",
            "Mesh",
            "x".join(map(str, sizes)),
            parse_mesh,
            typed=True,
            show=shown(lambda v: "x".join(map(str, v))),
        ),
        s.text_field("names", "Axis names", names),
    ]
    for k in range(MAX_ARGS):
        fields += [
            s.text_field(
                f"s{k}",
                f"shape {k + 1}",
                shapes[k],
                shape_or_none,
                typed=True,
                show=shown(lambda v: "" if v is None else ", ".join(map(str, v))),
            ),
            s.text_field(
                f"p{k}", f"spec {k + 1}", specs[k], parse_spec, typed=True, show=shown(spec_text)
            ),
        ]
    fields += own_f_fields(len(sizes))
    return s.Schema(tuple(fields), (s.Joint(("mesh", "names"), _check_names),))


def argument_labels(names_text: str, count: int) -> list[str]:
    """What to call the page's arguments: f's argument names when they are valid and one per
    argument, else "argument 1", "argument 2", ..."""
    try:
        names = expr.parse_arg_names(names_text)
    except SettingError:
        names = ()
    return list(names) if len(names) == count else [f"argument {k + 1}" for k in range(count)]


def _arg_names(text: str, name: str) -> None:
    expr.parse_arg_names(text)


def own_f_defaults(rank: int) -> tuple[str, str, str, str]:
    """Your own f on the default mesh: argument names, the global body, the per-device body
    and out_specs. On two axes, x @ w with w's columns split over model: the per-device
    product is a (rows, columns) block, gathered over model. On one axis w is whole."""
    if rank >= 2:
        return (
            "x, w",
            "x @ w",
            f"lax.all_gather(x @ w, '{DEFAULT_NAMES[rank - 1]}', axis=1, tiled=True, "
            "to='invarying')",
            f"P('{DEFAULT_NAMES[0]}', None)",
        )
    return "x, w", "x @ w", "x @ w", f"P('{DEFAULT_NAMES[0]}', None)"


def own_f_fields(rank: int) -> list:
    """The Meshes page's "your own f": args (names), gf (global body), lf (per-device body) and
    out (out_specs, as typed). The bodies are checked by pmapviz.expr when f is built."""
    s = settings
    names, gf, lf, out = own_f_defaults(rank)
    return [
        s.text_field("args", "f's arguments", names, _arg_names),
        s.text_field("gf", "global f", gf, max_len=expr.MAX_TEXT),
        s.text_field("lf", "per-device f", lf, max_len=expr.MAX_TEXT),
        s.text_field(
            "out",
            "out_specs",
            out,
            parse_spec,
            typed=True,
            show=lambda v: v if isinstance(v, str) else spec_text(v),
        ),
    ]
