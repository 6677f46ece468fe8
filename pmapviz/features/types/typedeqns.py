"""Every equation of a jaxpr, in order, with its primitive, its source line and its output
types exactly as JAX prints them: ``outvar.aval.str_short(short_dtypes=True)``, the text of
``jax.typeof`` (``f32[64@data,16]``, ``f32[16,8]{V:data}``). Nested jaxprs (a ``jit``'s body,
``shard_map``'s per-device program, a ``cond``'s branches) follow their equation, one level
deeper. Nothing is computed: every type is JAX's own text.

The walk is bounded (:data:`MAX_ROWS` equations, :data:`MAX_DEPTH` levels) and says how many
it left out.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

MAX_ROWS = 2000  # equations listed; the rest are counted
MAX_DEPTH = 32  # nested jaxprs followed; deeper ones are counted


@dataclass(frozen=True)
class TypedEqn:
    """One equation: its place in the walk, its primitive, its output types as JAX prints
    them, and where in the source it was traced."""

    index: int  # 0-based, in walk order
    depth: int  # 0: the top-level jaxpr; 1: inside its first nested jaxpr; ...
    primitive: str
    out_types: tuple[str, ...]
    out_shapes: tuple[tuple[int, ...] | None, ...]  # each output's aval.shape (for matching)
    file: str | None  # the innermost user frame's file, as JAX recorded it
    line: int | None
    column: int | None
    function: str | None
    scope: str  # JAX's name stack at the equation ('' at the top)
    manual: bool  # inside a shard_map: per-device types

    @property
    def source(self) -> str:
        """'functions.py:80 (<lambda>)', or '' where JAX recorded no user frame."""
        if self.file is None:
            return ""
        where = f"{os.path.basename(self.file)}:{self.line}"
        return f"{where} ({self.function})" if self.function else where

    def to_dict(self) -> dict:
        """The equation as plain values."""
        return {
            "index": self.index,
            "depth": self.depth,
            "primitive": self.primitive,
            "out_types": list(self.out_types),
            "source": self.source,
            "line": self.line,
            "scope": self.scope,
            "manual": self.manual,
        }


@dataclass(frozen=True)
class TypedJaxpr:
    """A jaxpr walked: its inputs' and outputs' types, its equations, and how many were left
    out (beyond :data:`MAX_ROWS` or :data:`MAX_DEPTH`)."""

    in_types: tuple[str, ...]
    out_types: tuple[str, ...]
    eqns: tuple[TypedEqn, ...]
    left_out: int = 0


def type_text(aval) -> str:
    """An abstract value as JAX prints it in a jaxpr (``str_short(short_dtypes=True)``); equal
    abstract values print alike, so each is asked once (JAX's printing takes ~0.1 ms)."""
    try:
        return _type_text(aval)
    except TypeError:  # an abstract value that cannot be hashed
        return _printed(aval)


@functools.lru_cache(maxsize=4096)
def _type_text(aval) -> str:
    return _printed(aval)


def _printed(aval) -> str:
    short = getattr(aval, "str_short", None)
    if short is None:
        return str(aval)
    try:
        return short(short_dtypes=True)
    except TypeError:  # an abstract value whose str_short takes no options
        return short()


def _shape(aval) -> tuple[int, ...] | None:
    shape = getattr(aval, "shape", None)
    try:
        return tuple(int(d) for d in shape) if shape is not None else None
    except TypeError:  # a symbolic dimension
        return None


def _frame(eqn):
    from jax._src import source_info_util  # private: where JAX keeps an equation's frames

    try:
        return source_info_util.user_frame(eqn.source_info.traceback)
    except Exception:  # noqa: BLE001 - no frame is an answer, not a failure
        return None


def _eqn(eqn, index: int, depth: int, manual: bool) -> TypedEqn:
    frame = _frame(eqn)
    return TypedEqn(
        index,
        depth,
        eqn.primitive.name,
        tuple(type_text(v.aval) for v in eqn.outvars),
        tuple(_shape(v.aval) for v in eqn.outvars),
        getattr(frame, "file_name", None),
        getattr(frame, "start_line", None),
        getattr(frame, "start_column", None),
        getattr(frame, "function_name", None),
        str(eqn.source_info.name_stack),
        manual,
    )


def walk(closed) -> TypedJaxpr:
    """Every equation of ``closed`` (a ClosedJaxpr, as ``jax.make_jaxpr`` returns), nested
    ones after their equation, in order."""
    from jax.extend.core import jaxprs_in_params

    jaxpr = closed.jaxpr
    rows: list[TypedEqn] = []
    left_out = 0
    stack = [(iter(jaxpr.eqns), 0, False)]  # an explicit stack: deep nesting needs no recursion
    while stack:
        eqns, depth, manual = stack[-1]
        eqn = next(eqns, None)
        if eqn is None:
            stack.pop()
            continue
        inner = list(jaxprs_in_params(eqn.params))
        if len(rows) >= MAX_ROWS:
            left_out += 1 + sum(_count(j) for j in inner)
            continue
        rows.append(_eqn(eqn, len(rows), depth, manual))
        if not inner:
            continue
        if depth + 1 > MAX_DEPTH:
            left_out += sum(_count(j) for j in inner)
            continue
        inside = manual or eqn.primitive.name == "shard_map"
        for sub in reversed(inner):  # the first nested jaxpr is walked first
            stack.append((iter(sub.eqns), depth + 1, inside))
    return TypedJaxpr(
        tuple(type_text(v.aval) for v in jaxpr.invars),
        tuple(type_text(v.aval) for v in jaxpr.outvars),
        tuple(rows),
        left_out,
    )


def _count(jaxpr) -> int:
    """Equations in ``jaxpr`` and every jaxpr nested in it (for what the walk left out)."""
    from jax.extend.core import jaxprs_in_params

    total, todo = 0, [jaxpr]
    while todo:
        j = todo.pop()
        total += len(j.eqns)
        todo += [s for e in j.eqns for s in jaxprs_in_params(e.params)]
    return total
