"""Which HLO instruction's value flows into which: the operands of every instruction of a
compiled program's text, and the instructions of a chosen set found upstream or downstream.

Pure text (no JAX). An instruction line reads ``%name = <type> opcode(%a, %b), attributes``;
its operands are the ``%names`` inside the opcode's parentheses. The type may itself hold
parentheses (a tuple, a tiled layout ``T(8,128)``), so the operand list is the first
``opcode(%...)`` after the ``=``. A line in another form adds no edges: a search through it
finds nothing rather than something wrong. Used to tell the phases of an all-reduce across
slices apart (:mod:`pmapviz.core.pods.podcompile`): the reduction inside a slice whose value a
send to the other slices carries, and the all-gathers that spread what the recv brought.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping

_DEF = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_CALL = re.compile(r"\s[a-z][\w\-]*\((?P<ops>%[\w.\-]+(?:,\s*%[\w.\-]+)*)?\)")
_NAME = re.compile(r"%([\w.\-]+)")

Graph = Mapping[str, tuple[str, ...]]


def operands_of(hlo: str) -> dict[str, tuple[str, ...]]:
    """Each instruction's operands, by name (every computation of the module)."""
    out: dict[str, tuple[str, ...]] = {}
    for raw in hlo.splitlines():
        m = _DEF.match(raw)
        if m is None or (call := _CALL.search(m["rest"])) is None:
            continue
        out[m["name"]] = tuple(_NAME.findall(call["ops"] or ""))
    return out


def users_of(graph: Graph) -> dict[str, tuple[str, ...]]:
    """The graph turned around: for each instruction, those that take its value."""
    out: dict[str, list[str]] = {}
    for name, ops in graph.items():
        for op in ops:
            out.setdefault(op, []).append(name)
    return {k: tuple(v) for k, v in out.items()}


def reached(start: str, edges: Graph, wanted: Iterable[str], limit: int = 400) -> list[str]:
    """The instructions of ``wanted`` reached from ``start`` along ``edges`` (operands: what
    flows in; users: where it flows), nearest first; the search stops at each one it finds
    (what lies beyond a found collective is that collective's), and after ``limit`` steps."""
    want, seen, out = set(wanted), {start}, []
    todo = deque(edges.get(start, ()))
    steps = 0
    while todo and steps < limit:
        name = todo.popleft()
        steps += 1
        if name in seen:
            continue
        seen.add(name)
        if name in want:
            out.append(name)
            continue
        todo.extend(edges.get(name, ()))
    return out
