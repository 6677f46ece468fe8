"""Read the collectives XLA emitted out of a compiled program's HLO text.

Pure text parsing (no JAX): ``parse_hlo(compiled.as_text())`` returns every all-reduce,
all-gather, reduce-scatter, collective-permute and all-to-all with its operand shapes and dtype,
bytes per device, replica groups or source-target pairs, and the Python line it came from.
Replica groups come in the three syntaxes JAX 0.10 prints, all expanded to explicit groups:

- explicit: ``replica_groups={{0,1},{2,3}}`` (``{}`` means one group of every device);
- iota: ``replica_groups=[4,2]<=[2,4]T(1,0)`` (iota over [2,4], transposed, reshaped to [4,2]);
- mesh: ``replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_0'}`` (devices numbered row-major
  over the mesh; one group per position of the other axes, varying along the listed ones), and
  with ``device_ids=([2,4]T(1,0))`` after the mesh: the device at each mesh position, an iota
  transposed (2-D Explicit meshes' einsums print it).

A collective line that cannot be read completely is reported in ``unparsed`` with the reason,
never turned into a half-right record. Line numbers are 1-based, for highlighting.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
DTYPE_BYTES = {
    "pred": 1,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
}
_KIND = "|".join(KINDS)
_CALL = re.compile(rf"\s({_KIND})(-start)?\(")
_INSTR = re.compile(
    rf"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*(?P<type>.*?)\s(?P<kind>{_KIND})(?:-start)?"
    r"\((?P<operands>[^()]*)\)(?P<attrs>.*)$"
)
_DEF = re.compile(
    r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*(?P<dt>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\]"
)
_TYPE = re.compile(r"(?P<dt>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\]")
_OPERAND = re.compile(
    r"(?:(?P<dt>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\](?:\{[^}]*\})?\s+)?%(?P<name>[\w.\-]+)"
)
_EXPLICIT = re.compile(r"replica_groups=\{((?:\{[0-9,\s]*\}\s*,?\s*)*)\}")
_IOTA = re.compile(r"replica_groups=\[([0-9]+),([0-9]+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?")
_MESH = re.compile(
    r"replica_groups=mesh\[([^\]]*)\]"
    r"(?:,\s*device_ids=\(\[([0-9,]+)\](?:T\(([0-9,]+)\))?\))?\s*\{([^}]*)\}"
)
_PAIRS = re.compile(r"source_target_pairs=\{((?:\{[0-9]+,[0-9]+\}\s*,?\s*)*)\}")


@dataclass(frozen=True)
class HloCollective:
    """One collective in HLO text: its kind, operands, which devices talk, where it came from."""

    kind: str  # one of KINDS
    name: str  # the HLO instruction, e.g. "psum.7" (profiler traces use the same name)
    shapes: tuple[tuple[int, ...], ...]  # operand shapes on one device (all-to-all: several)
    dtype: str  # HLO element type, e.g. "f32"
    bytes: int  # operand bytes per device
    replica_groups: tuple[tuple[int, ...], ...] | None  # devices that communicate together
    source_target_pairs: tuple[tuple[int, int], ...] | None  # collective-permute only
    source_line: str | None  # "path/to/file.py:180 (function)", from the HLO metadata
    op_name: str | None  # JAX's name for the operation, e.g. "jit(_fun)/shard_map/psum"
    line: int  # 1-based line in the HLO text

    @property
    def shape(self) -> tuple[int, ...]:
        """The operand shape (several equal operands: their count first)."""
        if len(self.shapes) == 1 or len(set(self.shapes)) > 1:
            return self.shapes[0]
        return (len(self.shapes), *self.shapes[0])

    @property
    def shape_text(self) -> str:
        """'f32[8]', '8 x f32[1]' (equal operands), or 'f32[8] + f32[]'."""
        texts = [f"{self.dtype}[{','.join(map(str, s))}]" for s in self.shapes]
        if len(texts) > 1 and len(set(texts)) == 1:
            return f"{len(texts)} x {texts[0]}"
        return " + ".join(texts)


@dataclass(frozen=True)
class ParseReport:
    """What :func:`parse_hlo` found: the collectives, the lines it could not read, the devices."""

    collectives: tuple[HloCollective, ...]
    unparsed: tuple[tuple[int, str, str], ...]  # (line, raw text, why)
    n_devices: int | None  # partitions x replicas, from the module header

    @property
    def lines(self) -> tuple[int, ...]:
        """Every line holding a collective, read or not (for highlighting)."""
        return tuple(sorted([c.line for c in self.collectives] + [u[0] for u in self.unparsed]))


class _Unreadable(ValueError):
    pass


def parse_hlo(text: str) -> ParseReport:
    """Every collective in an HLO module's text (``compiled.as_text()``)."""
    lines = text.splitlines()
    n = _module_devices(text)
    defs = _definitions(lines)
    frames = _stack_frames(lines)
    found, unparsed = [], []
    for k, raw in enumerate(lines, start=1):
        if not _CALL.search(raw):
            continue
        try:
            found.append(_collective(raw, k, n, defs, frames))
        except _Unreadable as err:
            unparsed.append((k, raw.strip(), str(err)))
    return ParseReport(tuple(found), tuple(unparsed), n)


def _module_devices(text: str) -> int | None:
    head = text.split("\n", 1)[0]
    if not head.startswith("HloModule"):
        return None
    parts = re.search(r"num_partitions=([0-9]+)", head)
    reps = re.search(r"replica_count=([0-9]+)", head)
    return (int(parts.group(1)) if parts else 1) * (int(reps.group(1)) if reps else 1)


def _definitions(lines: list[str]) -> dict[str, tuple[str, tuple[int, ...]]]:
    out = {}
    for raw in lines:
        m = _DEF.match(raw)
        if m:
            out[m["name"]] = (m["dt"], _dims(m["dims"]))
    return out


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",") if d)


def _stack_frames(lines: list[str]) -> dict[int, str]:
    """stack_frame_id -> "file:line (function)", from the module's FileNames, FunctionNames,
    FileLocations and StackFrames tables (a frame's own location is the innermost one)."""
    tables: dict[str, dict[int, str]] = {}
    section = None
    for raw in lines:
        if raw.strip() in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = raw.strip()
            tables[section] = {}
        elif section and re.match(r"^[0-9]+ ", raw):
            key, _, rest = raw.partition(" ")
            tables[section][int(key)] = rest.strip()
        elif not raw.strip() or raw.startswith(("%", "ENTRY")):
            section = None
    files, funcs = tables.get("FileNames", {}), tables.get("FunctionNames", {})
    where = {}
    for key, rest in tables.get("FileLocations", {}).items():
        f, fn, ln = (
            re.search(rf"{k}=([0-9]+)", rest) for k in ("file_name_id", "function_name_id", "line")
        )
        if f and ln and int(f.group(1)) in files:
            name = funcs.get(int(fn.group(1)), "").strip('"') if fn else ""
            path = _short_path(files[int(f.group(1))].strip('"'))
            where[key] = f"{path}:{ln.group(1)}" + (f" ({name})" if name else "")
    out = {}
    for key, rest in tables.get("StackFrames", {}).items():
        loc = re.search(r"file_location_id=([0-9]+)", rest)
        if loc and int(loc.group(1)) in where:
            out[key] = where[int(loc.group(1))]
    return out


def _short_path(path: str) -> str:
    here = os.getcwd() + os.sep
    return path[len(here) :] if path.startswith(here) else path


def _collective(raw: str, line: int, n: int | None, defs, frames) -> HloCollective:
    m = _INSTR.match(raw)
    if not m:
        raise _Unreadable("the instruction's layout is not name = type op(operands) attributes")
    kind, attrs = m["kind"], m["attrs"]
    dtypes, shapes = _operands(m["operands"], defs, kind, m["type"])
    size = DTYPE_BYTES.get(dtypes[0])
    if size is None or len(set(dtypes)) > 1:
        raise _Unreadable(f"element type {'/'.join(sorted(set(dtypes)))} is not understood")
    groups = pairs = None
    if kind == "collective-permute":
        pairs = _pairs(attrs, n)
    else:
        groups = _groups(attrs, n)
    return HloCollective(
        kind,
        m["name"],
        tuple(shapes),
        dtypes[0],
        size * sum(math.prod(s) for s in shapes),
        groups,
        pairs,
        _source(attrs, frames),
        _op_name(attrs),
        line,
    )


def _operands(text: str, defs, kind: str, result_type: str):
    """Operand dtypes and shapes: inline, or from the line defining each operand."""
    text = re.sub(r"/\*.*?\*/", "", text)
    dtypes, shapes = [], []
    for m in _OPERAND.finditer(text):
        if m["dt"]:
            dtypes.append(m["dt"])
            shapes.append(_dims(m["dims"]))
        elif m["name"] in defs:
            dtypes.append(defs[m["name"]][0])
            shapes.append(defs[m["name"]][1])
        elif kind in ("all-reduce", "collective-permute") and _TYPE.fullmatch(
            result_type.split("{")[0]
        ):
            t = _TYPE.fullmatch(result_type.split("{")[0])  # same shape as the result
            dtypes.append(t["dt"])
            shapes.append(_dims(t["dims"]))
        else:
            raise _Unreadable(f"the shape of operand %{m['name']} is not in the text")
    if not shapes:
        raise _Unreadable("no operands")
    return dtypes, shapes


def _groups(attrs: str, n: int | None) -> tuple[tuple[int, ...], ...]:
    if (m := _EXPLICIT.search(attrs)) is not None:
        groups = [_dims(g.replace(" ", "")) for g in re.findall(r"\{([0-9,\s]*)\}", m.group(1))]
        if not groups:
            if n is None:
                raise _Unreadable("replica_groups={} (all devices) but the device count is unknown")
            groups = [tuple(range(n))]
    elif (m := _IOTA.search(attrs)) is not None:
        groups = iota_groups((int(m[1]), int(m[2])), _dims(m[3]), _dims(m[4] or ""))
    elif (m := _MESH.search(attrs)) is not None:
        groups = mesh_groups(m[1], m[4])
        if m[2]:  # the mesh's positions are these devices: iota over dims, transposed, flat
            ids = mesh_device_ids(_dims(m[2]), _dims(m[3] or ""))
            if len(ids) != sum(len(g) for g in groups):
                raise _Unreadable("device_ids whose count is not the mesh's")
            groups = [tuple(ids[p] for p in g) for g in groups]
    elif "replica_groups=" in attrs:
        raise _Unreadable("replica_groups in a syntax pmapviz does not read")
    else:
        raise _Unreadable("no replica_groups")
    return _checked_groups(groups, n)


def iota_groups(shape: tuple[int, int], reshape: tuple[int, ...], perm: tuple[int, ...]):
    """``[g,s]<=[dims]T(perm)``: iota over prod(dims), reshaped to dims, transposed by perm,
    reshaped to g groups of s devices."""
    total = math.prod(reshape)
    if total != shape[0] * shape[1] or (perm and sorted(perm) != list(range(len(reshape)))):
        raise _Unreadable("iota replica groups whose sizes do not agree")
    ids = np.arange(total).reshape(reshape)
    if perm:
        ids = ids.transpose(perm)
    return [tuple(int(d) for d in row) for row in ids.reshape(shape)]


def mesh_groups(axes_text: str, chosen_text: str):
    """``mesh['a'=2,'b'=4] {'a'}``: devices numbered row-major over the mesh; one group for each
    position along the axes not chosen, running over the chosen ones (in their order)."""
    axes = re.findall(r"'([^']*)'=([0-9]+)", axes_text)
    if not axes or ",".join(f"'{a}'={s}" for a, s in axes) != axes_text.replace(" ", ""):
        raise _Unreadable("the mesh in replica_groups is not a list of 'axis'=size")
    names = [a for a, _ in axes]
    chosen = [c.strip() for c in chosen_text.split(",") if c.strip()]
    if not all(re.fullmatch(r"'[^']*'", c) and c[1:-1] in names for c in chosen):
        raise _Unreadable("replica_groups names a mesh axis (or sub-axis) pmapviz does not read")
    picked = [names.index(c[1:-1]) for c in chosen]
    rest = [k for k in range(len(names)) if k not in picked]
    ids = np.arange(math.prod(int(s) for _, s in axes)).reshape([int(s) for _, s in axes])
    size = math.prod(int(axes[k][1]) for k in picked)
    return [tuple(int(d) for d in row) for row in ids.transpose(rest + picked).reshape(-1, size)]


def mesh_device_ids(dims: tuple[int, ...], perm: tuple[int, ...]) -> list[int]:
    """``device_ids=([2,4]T(1,0))``: the device at each of the mesh's positions (row-major):
    iota over prod(dims), reshaped to dims, transposed by perm, flattened."""
    if perm and sorted(perm) != list(range(len(dims))):
        raise _Unreadable("device_ids transposed by a permutation of other axes")
    ids = np.arange(math.prod(dims)).reshape(dims)
    return [int(d) for d in (ids.transpose(perm) if perm else ids).reshape(-1)]


def _checked_groups(groups, n: int | None):
    flat = [d for g in groups for d in g]
    if len(set(flat)) != len(flat) or (n is not None and any(d >= n for d in flat)):
        raise _Unreadable("replica groups that repeat a device or name one past the device count")
    return tuple(tuple(g) for g in groups)


def _pairs(attrs: str, n: int | None) -> tuple[tuple[int, int], ...]:
    m = _PAIRS.search(attrs)
    if m is None:
        raise _Unreadable("source_target_pairs missing or in a syntax pmapviz does not read")
    pairs = tuple((int(a), int(b)) for a, b in re.findall(r"\{([0-9]+),([0-9]+)\}", m.group(1)))
    if n is not None and any(d >= n for p in pairs for d in p):
        raise _Unreadable("source_target_pairs name a device past the device count")
    return pairs


def _source(attrs: str, frames: dict[int, str]) -> str | None:
    m = re.search(r'source_file="([^"]*)"\s+source_line=([0-9]+)', attrs)
    if m:
        return f"{_short_path(m[1])}:{m[2]}"
    m = re.search(r"stack_frame_id=([0-9]+)", attrs)
    return frames.get(int(m[1])) if m else None


def _op_name(attrs: str) -> str | None:
    m = re.search(r'op_name="([^"]*)"', attrs)
    return m[1] if m else None


# ---------------------------------------------------------------- the other two levels
_JAXPR = re.compile(
    r"=\s*(psum|pmax|pmin|all_gather|all_gather_invariant|ppermute|reduce_scatter|all_to_all"
    r"|psum_invariant|pbroadcast)\["
)
_STABLEHLO = re.compile(
    r"stablehlo\.(all_reduce|all_gather|reduce_scatter|collective_permute|all_to_all"
    r"|collective_broadcast)\b"
)


def jaxpr_lines(text: str) -> tuple[int, ...]:
    """1-based lines of a jaxpr that bind a collective primitive."""
    return tuple(k for k, raw in enumerate(text.splitlines(), start=1) if _JAXPR.search(raw))


def stablehlo_lines(text: str) -> tuple[int, ...]:
    """1-based lines of StableHLO (``lowered.as_text()``) holding a collective op."""
    return tuple(k for k, raw in enumerate(text.splitlines(), start=1) if _STABLEHLO.search(raw))


# ---------------------------------------------------------------- sorts, for time estimates
_SORT = re.compile(
    r'"stablehlo\.sort"\([^)]*\)\s*<\{dimension = (\d+)[^}]*\}>.*?\}\)\s*:\s*'
    r"\(tensor<([0-9x]+)x[a-z0-9]+>",
    re.S,
)


def sort_compares(stablehlo: str) -> float:
    """Compares of every sort in a lowered program's text: elements x log2(the sorted
    dimension's length), the count XLA's cost analysis books as FLOPs."""
    total = 0.0
    for dim, dims in _SORT.findall(stablehlo):
        sizes = [int(d) for d in dims.split("x")]
        if int(dim) < len(sizes) and sizes[int(dim)] > 1:
            total += math.prod(sizes) * math.log2(sizes[int(dim)])
    return total
