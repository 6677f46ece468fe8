"""Where each HLO instruction came from, and the sharding the compiler gave it, read from HLO
text (no JAX).

JAX writes each instruction's origin into its metadata: ``op_name="jit(f)/shard_map/psum"``
(the name stack, then the primitive) and ``stack_frame_id=4``, an entry of the module's
``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables at the top (file,
function, line and column of the innermost frame). :func:`instructions` reads every
instruction's name, opcode, shape, op_name, source position and ``sharding={...}`` attribute;
the module XLA's sharding propagation leaves (before the SPMD partitioner splits it) carries a
sharding on every instruction: what the compiler chose for each value.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

Where = tuple[str, int, int | None]  # (file, line, column)

_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*(?P<type>.+?)\s(?P<op>[a-z][a-z0-9\-]*)\("
)
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


@dataclass(frozen=True)
class HloInstr:
    """One HLO instruction: its 1-based line, name, opcode, shape text, JAX's op_name, the
    source position it came from and its sharding attribute (None where it has none)."""

    line: int
    name: str
    opcode: str
    shape: str  # 'f32[64,16]{1,0}', or a tuple's text
    op_name: str | None
    where: Where | None
    sharding: str | None  # '{devices=[4,2]<=[8]}', as written

    @property
    def primitive(self) -> str | None:
        """The JAX primitive its op_name ends with ('psum' of 'jit(f)/shard_map/psum')."""
        return primitive_of(self.op_name)

    @functools.cached_property
    def dims(self) -> tuple[int, ...] | None:
        """Its array shape's dimensions (None for a tuple or a token)."""
        m = re.fullmatch(r"[a-z][a-z0-9]*\[([0-9,]*)\](?:\{[^}]*\})?", self.shape.strip())
        return tuple(int(d) for d in m[1].split(",") if d) if m else None


def primitive_of(op_name: str | None) -> str | None:
    """The last part of an op_name: the primitive (None for none)."""
    if not op_name:
        return None
    return op_name.rstrip("/").rsplit("/", 1)[-1] or None


def frames(text: str) -> dict[int, Where]:
    """stack_frame_id -> (file, line, column) of the frame's own (innermost) location."""
    tables: dict[str, dict[int, str]] = {}
    section = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped in _TABLES:
            section = stripped
            tables[section] = {}
        elif section and re.match(r"^[0-9]+ ", raw):
            key, _, rest = raw.partition(" ")
            tables[section][int(key)] = rest.strip()
        elif not stripped or raw.startswith(("%", "ENTRY")):
            section = None
    files = tables.get("FileNames", {})
    where: dict[int, Where] = {}
    for key, rest in tables.get("FileLocations", {}).items():
        f = re.search(r"file_name_id=([0-9]+)", rest)
        ln = re.search(r"\bline=([0-9]+)", rest)
        col = re.search(r"\bcolumn=([0-9]+)", rest)
        if f and ln and int(f[1]) in files:
            where[key] = (files[int(f[1])].strip('"'), int(ln[1]), int(col[1]) if col else None)
    out = {}
    for key, rest in tables.get("StackFrames", {}).items():
        loc = re.search(r"file_location_id=([0-9]+)", rest)
        if loc and int(loc[1]) in where:
            out[key] = where[int(loc[1])]
    return out


def braced(text: str, start: int) -> str | None:
    """The balanced ``{...}`` that opens at ``text[start]`` (None when it never closes)."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    for k in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[start : k + 1]
    return None


_FLAT_SHARDING = re.compile(r"sharding=(\{[^{}]*\})")


def _attr(raw: str, name: str) -> str | None:
    at = raw.find(f"{name}=" + "{")
    if at < 0:
        return None
    if name == "sharding" and (flat := _FLAT_SHARDING.match(raw, at)):  # most: no tuple
        return flat[1]
    return braced(raw, at + len(name) + 1)


def _where(raw: str, table: dict[int, Where]) -> Where | None:
    m = re.search(r'source_file="([^"]*)"\s+source_line=([0-9]+)', raw)
    if m:
        return (m[1], int(m[2]), None)
    m = re.search(r"stack_frame_id=([0-9]+)", raw)
    return table.get(int(m[1])) if m else None


def instruction(raw: str, line: int, table: dict[int, Where]) -> HloInstr | None:
    """The instruction on one line of HLO text (None: not an instruction)."""
    m = _INSTR.match(raw)
    if not m:
        return None
    op = re.search(r'op_name="([^"]*)"', raw)
    return HloInstr(
        line,
        m["name"],
        m["op"],
        m["type"].strip(),
        op[1] if op else None,
        _where(raw, table),
        _attr(raw, "sharding"),
    )


def instructions(text: str, having: str = "") -> tuple[HloInstr, ...]:
    """Every instruction of an HLO module's text, in order (only the lines holding
    ``having``, when given: ``"sharding="``)."""
    table = frames(text)
    found = (
        instruction(raw, k, table)
        for k, raw in enumerate(text.splitlines(), start=1)
        if having in raw
    )
    return tuple(i for i in found if i is not None)
