"""Type f as an expression: "your own f", checked, then a catalog-style program.

The user names the arguments (``x, w, b``) and types the body (``jnp.tanh(x @ w + b)``).
:func:`program` checks both: the names here (:func:`parse_arg_names`), the body against the
allow-list of :mod:`pmapviz.core.expressions.exprvocab`, parsed and compiled by
:mod:`pmapviz.core.expressions.exprparse` into
small Python closures. A node that is not on the allow-list is refused with an
:class:`pmapviz.core.expressions.exprvocab.ExprError` that names its column (1-based) and what is
allowed there. Nothing the user typed is ever run as Python: there is no ``eval``, ``exec`` or
``compile``, only a walk over a checked tree. The text is at most 500 characters.

:func:`program` returns an :class:`ExprProgram`, a
:class:`pmapviz.core.expressions.functions.Program`, so
``planning.plan`` traces it with ``jax.eval_shape`` like a catalog entry: shapes still come
from JAX. :func:`python_source` exports it as an ordinary ``def f(...)``.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import inspect
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base.valuetext import quote
from pmapviz.core.expressions.exprparse import parse
from pmapviz.core.expressions.exprvocab import ExprError
from pmapviz.core.expressions.functions import Program

MAX_TEXT = 500  # characters in the body
MAX_ARGS = 6
IMPORTS = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
RESERVED = frozenset({"jnp", "lax", "jax", "np", "numpy"})


# ---------------------------------------------------------------- programs


def parse_arg_names(text: Any) -> tuple[str, ...]:
    """'x, w, b' -> ('x', 'w', 'b'): 1 to 6 distinct ASCII names, not keywords, builtins or
    the module names jnp, lax, jax, np."""
    raw = str(text if text is not None else "").strip()
    if len(raw) > 200 or any(not " " <= ch <= "~" for ch in raw):
        raise ExprError(f"Arguments {quote(raw)}: type plain ASCII names like x, w, b.")
    inner = raw[1:-1] if raw.startswith("(") and raw.endswith(")") else raw
    parts = [p.strip() for p in inner.split(",")]
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""]:
        raise ExprError("Arguments are empty: name them, e.g. x, w, b.")
    if len(parts) > MAX_ARGS:
        raise ExprError(f"f takes {len(parts)} arguments; at most {MAX_ARGS} are allowed.")
    for p in parts:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", p):
            raise ExprError(
                f"Argument {quote(p)} is not a simple name: letters, digits and _, "
                "starting with a letter, e.g. x or w1."
            )
        if keyword.iskeyword(p) or keyword.issoftkeyword(p) or hasattr(builtins, p):
            raise ExprError(
                f"Argument {quote(p)} is a Python keyword or builtin: choose another name."
            )
        if p in RESERVED:
            raise ExprError(
                f"Argument {quote(p)} is reserved for the module {p}: choose another name."
            )
    if len(set(parts)) != len(parts):
        dupe = next(p for p in parts if parts.count(p) > 1)
        raise ExprError(f"Argument {quote(dupe)} is named twice.")
    return tuple(parts)


@dataclass(frozen=True)
class ExprProgram(Program):
    """A typed expression as a catalog-style program. ``source`` is the canonical body
    (``ast.unparse`` of the checked tree); collectives name their axes literally, listed in
    ``axis_names``, so ``body`` ignores its ``axis_name``."""

    axis_names: tuple[str, ...] = ()

    def body(self, axis_name: str | None = None) -> str:
        """The checked expression; ``axis_name`` is ignored (its collectives name their axes)."""
        return self.source

    def build(self, axis_name: str | None = None) -> Callable:
        """The interpreted function; the same object for the same program and axis_name."""
        return _build(self.arg_names, self.source, axis_name)


@functools.lru_cache(maxsize=256)
def _build(arg_names: tuple[str, ...], source: str, axis_name: str | None) -> Callable:
    root, _, _ = parse(source, arg_names, None)
    run, n = root.run, len(arg_names)

    def f(*args):
        if len(args) != n:
            raise TypeError(f"f takes {n} argument(s) ({', '.join(arg_names)}), got {len(args)}")
        import jax
        import jax.numpy as jnp

        return run({k: jax.tree.map(jnp.asarray, a) for k, a in zip(arg_names, args, strict=True)})

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    f.__signature__ = inspect.Signature([inspect.Parameter(a, kind) for a in arg_names])
    return f


def program(
    arg_names: str,
    body: str,
    default_shapes: tuple[tuple[int, ...], ...] | None = None,
    default_in_axes: tuple[int | None, ...] | None = None,
) -> ExprProgram:
    """Check ``body`` (the expression) over the arguments in ``arg_names`` ('x, w, b').
    Raises :class:`ExprError`, one line naming the column of the first bad token."""
    names = parse_arg_names(arg_names)
    _, ctx, source = parse(body, names, MAX_TEXT)
    axes = tuple(sorted(ctx.axis_names))
    digest = hashlib.sha256(f"{','.join(names)}:{source}".encode()).hexdigest()[:16]
    over = f" (collectives over axis {', '.join(map(repr, axes))})" if axes else ""
    short = source if len(source) <= 60 else source[:57] + "..."
    return ExprProgram(
        key=f"expr:{digest}",
        label=f"Your f: {short}",
        arg_names=names,
        source=source,
        description=f"Typed by you: f({', '.join(names)}) = {source}{over}.",
        default_shapes=default_shapes or tuple((8, 4) for _ in names),
        default_in_axes=default_in_axes or tuple(0 for _ in names),
        needs_axis_name=bool(axes),
        axis_names=axes,
    )


def python_source(prog: Program, axis_name: str | None = None) -> str:
    """``def f(x, w, b):\\n    return <body>``: plain Python using jnp, lax and jax (see
    :data:`IMPORTS`). For a typed expression the body is its canonical text."""
    return f"{prog.signature()}\n    return {prog.body(axis_name)}\n"
