"""Named meshes and PartitionSpecs as a person writes them, and what JAX would refuse of them,
before anything runs.

* ``parse_mesh("2x4")`` -> ``(2, 4)``; ``parse_axis_names("data, model", 2)``;
* ``parse_axis_types("explicit, auto", 2)`` -> ``('explicit', 'auto')``: each axis Auto,
  Explicit or Manual (:data:`AXIS_TYPES`; ``jax.make_mesh`` gives Explicit);
* ``parse_spec("P('data', None)")`` -> ``('data', None)``, as a person writes it: ``P()``,
  ``P(('data', 'model'))``, ``PartitionSpec(None, 'model')``, or the short form
  ``data, None``. Text is read by a small tokenizer, never evaluated;
* ``problems(mesh, shape, spec)``: what ``NamedSharding(mesh, spec)`` would refuse, in the
  user's shapes and numbers, each with a fix: an unknown axis name, an axis used twice, a spec
  longer than the rank, a dimension the axis sizes do not divide.

Where each block then goes is :mod:`pmapviz.features.meshes.meshplacement`; the Meshes page's
settings are
:mod:`pmapviz.features.meshes.meshsettings`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import quote

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
AXIS_TYPES = ("explicit", "auto", "manual")  # jax.sharding.AxisType's, as a link writes them
DEFAULT_TYPE = "explicit"  # what jax.make_mesh gives every axis (since JAX 0.9)


def parse_axis_type(text: Any, name: str = "axis type") -> str:
    """'Explicit', 'auto', 'AxisType.Manual' -> 'explicit', 'auto', 'manual'."""
    raw = str(text if text is not None else "").strip()
    word = raw.lower().removeprefix("axistype.").removeprefix("jax.sharding.axistype.")
    if word not in AXIS_TYPES:
        raise SettingError(
            f"{name} {quote(raw)} is not an axis type: write auto, explicit or manual."
        )
    return word


def parse_axis_types(text: Any, rank: int, name: str = "axis types") -> tuple[str, ...]:
    """'explicit, auto' -> ('explicit', 'auto'): one axis type per mesh axis (empty: every
    axis Explicit, as ``jax.make_mesh`` makes them)."""
    raw = str(text if text is not None else "").strip()
    if not raw:
        return (DEFAULT_TYPE,) * rank
    parts = tuple(p.strip() for p in raw.split(","))
    if len(parts) != rank:
        raise SettingError(
            f"{name} {quote(raw)} gives {len(parts)} type{'s' * (len(parts) != 1)}; the mesh "
            f"has {rank} axes: give "
            f"one per axis, like {', '.join((DEFAULT_TYPE,) * rank)}."
        )
    return tuple(parse_axis_type(p, name) for p in parts)


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


def only_axes(spec: tuple[Entry, ...], axes) -> tuple[Entry, ...]:
    """The spec with every mesh axis outside ``axes`` left out: ``jax.shard_map``'s in_specs
    over those axes alone (``P('data', 'model')`` over data: ``P('data', None)``)."""
    out: list[Entry] = []
    for e in spec:
        kept = tuple(a for a in axes_of(e) if a in axes)
        out.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return tuple(out)


# ---------------------------------------------------------------- what JAX would refuse
@dataclass(frozen=True)
class Mesh:
    """A named mesh: its shape, one name per axis and, optionally, one axis type per axis
    (empty: every axis Explicit, as ``jax.make_mesh`` makes them)."""

    shape: tuple[int, ...]
    names: tuple[str, ...]
    types: tuple[str, ...] = ()  # each of AXIS_TYPES, one per axis; () for the default

    @property
    def axis_types(self) -> tuple[str, ...]:
        """Each axis's type: the given ones, else Explicit for every axis."""
        return self.types or (DEFAULT_TYPE,) * len(self.shape)

    @property
    def manual(self) -> tuple[str, ...]:
        """The axes given the type Manual (what ``jax.shard_map`` makes of an axis)."""
        return tuple(n for n, t in zip(self.names, self.axis_types, strict=True) if t == "manual")

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
class SpecProblem:
    """Something JAX would refuse: a code, the message in the user's numbers, and a fix."""

    code: str
    message: str
    fix: str


def problems(
    mesh: Mesh, shape: tuple[int, ...], spec: tuple[Entry, ...], what: str = "x"
) -> list[SpecProblem]:
    """What ``NamedSharding(mesh, spec)`` refuses for an array of ``shape`` (the constructor,
    ``check_compatible_aval`` and ``shard_shape``), in these numbers, each with a fix."""
    found = []
    for rule in (_unknown_axes, _axes_twice, _too_long, _indivisible):
        found += rule(mesh, shape, spec, what)
        if found:  # JAX stops at the first of these, and so do we
            return found
    return found


def _unknown_axes(mesh: Mesh, shape, spec, what: str) -> list[SpecProblem]:
    for e in spec:
        for a in axes_of(e):
            if a not in mesh.names:
                return [
                    SpecProblem(
                        "unknown_axis",
                        f"{spec_text(spec)} names the axis {quote(a)}, "
                        f"which the mesh ({mesh.text()}) does not have.",
                        f"Use one of {', '.join(mesh.names)}, or None.",
                    )
                ]
    return []


def _axes_twice(mesh: Mesh, shape, spec, what: str) -> list[SpecProblem]:
    used = [a for e in spec for a in axes_of(e)]
    for a in used:
        if used.count(a) > 1:
            return [
                SpecProblem(
                    "axis_twice",
                    f"{spec_text(spec)} uses the mesh axis {quote(a)} "
                    "twice: each mesh axis splits at most one dimension.",
                    f"Keep {quote(a)} in one entry; put None (or another axis) in the other.",
                )
            ]
    return []


def _too_long(mesh: Mesh, shape, spec, what: str) -> list[SpecProblem]:
    if len(spec) <= len(shape):
        return []
    fixed = spec_text(spec[: len(shape)])
    return [
        SpecProblem(
            "spec_too_long",
            f"{spec_text(spec)} has {len(spec)} entries, but {what} "
            f"{shape} has {len(shape)} dimensions.",
            f"Use at most {len(shape)} entries: {fixed}.",
        )
    ]


def _indivisible(mesh: Mesh, shape, spec, what: str) -> list[SpecProblem]:
    for dim, e in enumerate(spec):
        parts = math.prod(mesh.size[a] for a in axes_of(e))
        if shape[dim] % parts:
            lo = shape[dim] // parts * parts
            sizes = " or ".join(f"{v:,}" for v in (lo, lo + parts) if v > 0)
            return [
                SpecProblem(
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
