"""Parse and check the text of "your own f": the text itself, its operators, containers and
indexing, and the table that sends every syntax node to its checker.

:func:`parse` checks the text (plain ASCII on one line, at most the given length, brackets nested
at most 20 deep), parses it with ``ast.parse(text, mode="eval")`` and compiles the tree, node by
node, into closures (:mod:`pmapviz.core.expressions.exprnodes`,
:mod:`pmapviz.core.expressions.exprcalls`). Nothing the user typed
is ever run as Python: there is no ``eval``, ``exec`` or ``compile`` here, only a walk over a
checked tree. Python numbers and tuples (``x.shape``) computed while f runs never grow past 2**63 or
repeat.
"""

from __future__ import annotations

import ast
import operator
import unicodedata
from collections.abc import Callable
from typing import Any

from pmapviz.core.base import pythonast
from pmapviz.core.base.valuetext import quote
from pmapviz.core.expressions.exprcalls import check_call
from pmapviz.core.expressions.exprnodes import (
    Ctx,
    Node,
    bounded,
    check_attribute,
    check_constant,
    check_name,
    compile_node,
    compile_value,
    fail,
    lit,
    refuse,
)
from pmapviz.core.expressions.exprvocab import (
    MAX_DEPTH,
    MAX_INDEX,
    MAX_POW,
    MAX_SCALAR,
    ExprError,
    array_types,
)

# ---------------------------------------------------------------- operators

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_OPS_TEXT = "`+ - * / // % ** @` and one comparison `< <= > >= == !=`"


def _between(ctx: Ctx, left: ast.AST, right: ast.AST) -> tuple[int, str]:
    """Column and text of the operator token between two operands."""
    line = ctx.text
    start, end = left.end_col_offset, right.col_offset
    gap = line[start:end]
    skip = len(gap) - len(gap.lstrip(" )"))
    token = gap.strip(" ()") or gap
    return start + skip + 1 + ctx.lead, token


def _operand(node: ast.AST, ctx: Ctx, depth: int) -> Node:
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict)):
        raise refuse(ctx, node, "cannot be used with an operator", "arrays and numbers")
    out = compile_value(node, ctx, depth)
    if out.is_literal and not isinstance(out.literal, (int, float)):
        raise refuse(ctx, node, "cannot be used with an operator", "arrays and numbers")
    return out


def _binop(node: ast.BinOp, ctx: Ctx, depth: int) -> Node:
    op = _BINOPS.get(type(node.op))
    if op is None:
        col, token = _between(ctx, node.left, node.right)
        raise fail(col, token, "is not an allowed operator", _OPS_TEXT)
    left = _operand(node.left, ctx, depth)
    right = _operand(node.right, ctx, depth)
    if op is operator.pow:
        e = right.literal
        if not right.is_literal or isinstance(e, bool) or not abs(e) <= MAX_POW:
            raise refuse(
                ctx,
                node.right,
                "is not allowed as an exponent",
                f"a number from -{MAX_POW} to {MAX_POW}",
            )
    if left.is_literal and right.is_literal:
        value = _arith(op, left.literal, right.literal, ctx.col(node))
        return lit(value)
    lr, rr = left.run, right.run
    return Node("value", bounded(lambda env: _arith(op, lr(env), rr(env)), ctx.col(node)))


def _arith(op: Callable, a: Any, b: Any, col: int | None = None) -> Any:
    """Run time (or fold time for literals): numbers and arrays only; Python numbers bounded."""
    where = f"column {col}: " if col else ""
    for v in (a, b):
        if not isinstance(v, (int, float, *array_types())):
            raise ExprError(
                f"{where}an operator got a {type(v).__name__}; only arrays and "
                "numbers can be combined.",
                col,
            )
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        try:
            value = op(a, b)
        except (ArithmeticError, ValueError, TypeError) as err:
            raise ExprError(f"{where}arithmetic on numbers failed: {err}.", col) from None
        if isinstance(value, int) and abs(value) > MAX_SCALAR:
            raise ExprError(f"{where}a number in the expression exceeds 2**63.", col)
        return value
    return op(a, b)


def _unary(node: ast.UnaryOp, ctx: Ctx, depth: int) -> Node:
    if not isinstance(node.op, (ast.USub, ast.UAdd)):
        token = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), "?")
        raise fail(ctx.col(node), token, "is not an allowed operator", "unary - and +")
    inner = _operand(node.operand, ctx, depth)
    sign = -1 if isinstance(node.op, ast.USub) else 1
    if inner.is_literal:
        return lit(_arith(operator.mul, sign, inner.literal, ctx.col(node)))
    run = inner.run
    return Node("value", lambda env: _arith(operator.mul, sign, run(env)))


def _compare(node: ast.Compare, ctx: Ctx, depth: int) -> Node:
    op = _COMPARE.get(type(node.ops[0]))
    if op is None or len(node.ops) > 1:
        bad = 0 if op is None else 1
        left = node.left if bad == 0 else node.comparators[0]
        col, token = _between(ctx, left, node.comparators[bad])
        problem = "is not an allowed comparison" if bad == 0 else "chains comparisons"
        raise fail(col, token, problem, _OPS_TEXT)
    left = _operand(node.left, ctx, depth)
    right = _operand(node.comparators[0], ctx, depth)
    lr, rr = left.run, right.run
    return Node("value", bounded(lambda env: _arith(op, lr(env), rr(env)), ctx.col(node)))


# ---------------------------------------------------------------- containers and indexing


def _sequence(node: ast.Tuple | ast.List, ctx: Ctx, depth: int) -> Node:
    items = [compile_value(e, ctx, depth) for e in node.elts]
    make = tuple if isinstance(node, ast.Tuple) else list
    if all(i.is_literal for i in items):
        return lit(make(i.literal for i in items))
    runs = [i.run for i in items]
    return Node("value", lambda env: make(r(env) for r in runs))


def _dict(node: ast.Dict, ctx: Ctx, depth: int) -> Node:
    keys = []
    for k, v in zip(node.keys, node.values, strict=True):
        if k is None:
            raise refuse(ctx, v, "(`**` unpacking) is not allowed", "'name': value pairs")
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise refuse(ctx, k, "is not a string literal key", "keys like 'out'")
        keys.append(check_constant(k, ctx, depth).literal)
    values = [compile_value(v, ctx, depth).run for v in node.values]
    return Node("value", lambda env: {k: r(env) for k, r in zip(keys, values, strict=True)})


_INDEX_TEXT = (
    "literal ints, slices like `1:3` or `::2`, None, `...` and, for a dict "
    "argument, a quoted key like `'w'`"
)


def _index_item(node: ast.AST, ctx: Ctx, depth: int) -> Any:
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    if isinstance(node, ast.Slice):
        parts = [
            None if p is None else _index_item(p, ctx, depth)
            for p in (node.lower, node.upper, node.step)
        ]
        if any(p is Ellipsis or isinstance(p, (slice, str)) for p in parts):
            raise refuse(ctx, node, "is not a valid slice", _INDEX_TEXT)
        return slice(*parts)
    out = compile_node(node, ctx, depth)
    if out.is_literal and (out.literal is None or type(out.literal) in (int, str)):
        return out.literal
    raise refuse(ctx, node, "is not allowed as an index", _INDEX_TEXT)


def _subscript(node: ast.Subscript, ctx: Ctx, depth: int) -> Node:
    base = compile_value(node.value, ctx, depth)
    s = node.slice
    elts = s.elts if isinstance(s, ast.Tuple) else [s]
    if len(elts) > MAX_INDEX:
        raise refuse(ctx, s, f"has more than {MAX_INDEX} entries", _INDEX_TEXT)
    items = [_index_item(e, ctx, depth + 1) for e in elts]
    index = tuple(items) if isinstance(s, ast.Tuple) else items[0]
    run = base.run

    if isinstance(index, tuple) and any(type(i) is str for i in index):
        raise refuse(ctx, s, "mixes a key with other indices", _INDEX_TEXT)

    def get(env):
        value = run(env)
        if type(index) is str:
            if not isinstance(value, dict):
                what = "an array" if hasattr(value, "shape") else f"a {type(value).__name__}"
                raise ExprError(f"{quote(f'[{index!r}]')} needs a dict argument, not {what}.")
            if index not in value:
                keys = ", ".join(map(repr, value))
                raise ExprError(f"{quote(f'[{index!r}]')}: the dict has keys {quote(keys, 200)}.")
            return value[index]
        if not isinstance(value, (tuple, list, *array_types())):
            raise ExprError(f"[...] needs an array or a tuple, not a {type(value).__name__}.")
        return value[index]

    return Node("value", bounded(get, ctx.col(node)))


_HANDLERS: dict[type, Callable[[Any, Ctx, int], Node]] = {
    ast.Constant: check_constant,
    ast.Name: check_name,
    ast.Attribute: check_attribute,
    ast.Call: check_call,
    ast.BinOp: _binop,
    ast.UnaryOp: _unary,
    ast.Compare: _compare,
    ast.Tuple: _sequence,
    ast.List: _sequence,
    ast.Dict: _dict,
    ast.Subscript: _subscript,
}


# ---------------------------------------------------------------- text


def _check_text(text: str, limit: int | None) -> None:
    if limit is not None and len(text) > limit:
        raise ExprError(
            f"The expression is {len(text):,} characters long; at most {limit} are allowed."
        )
    for k, ch in enumerate(text):
        if not " " <= ch <= "~":
            what = (
                unicodedata.name(ch, "a control character")
                if ch.isprintable()
                else ("a control or invisible character")
            )
            raise ExprError(
                f"column {k + 1}: character U+{ord(ch):04X} ({what}) is not "
                "allowed; allowed here: plain ASCII on one line (no tabs, "
                "newlines or look-alike letters).",
                k + 1,
            )
    if not text.strip():
        raise ExprError("The expression is empty: type the body of f, e.g. jnp.sum(x).")
    col = _bracket_too_deep(text)
    if col is not None:
        raise ExprError(
            f"column {col}: brackets nest more than {MAX_DEPTH} levels deep; "
            "allowed here: a flatter expression.",
            col,
        )


def _bracket_too_deep(text: str) -> int | None:
    """The column of the first bracket nested deeper than MAX_DEPTH (strings skipped)."""
    depth, quote_mark, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote_mark:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote_mark, i):
                i, quote_mark = i + len(quote_mark), ""
                continue
        elif ch in "'\"":
            quote_mark = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
            i += len(quote_mark)
            continue
        elif ch in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                return i + 1
        elif ch in ")]}":
            depth -= 1
        i += 1
    return None


def parse(text: str, args: tuple[str, ...], limit: int | None) -> tuple[Node, Ctx, str]:
    """Check, parse and compile ``text``; the compiled root, its context and canonical text."""
    if not isinstance(text, str):
        raise ExprError("The expression must be text.")
    _check_text(text, limit)
    body = text.strip()
    ctx = Ctx(body, args, lead=len(text) - len(text.lstrip()), handlers=_HANDLERS)
    try:
        tree = pythonast.parse(body, mode="eval")  # one thread at a time (CPython 3.11)
    except SyntaxError as err:
        col = (err.offset or 1) + ctx.lead
        msg = str(err.msg).splitlines()[0] if err.msg else "invalid syntax"
        raise ExprError(
            f"column {col}: this is not a valid expression ({msg}); allowed "
            "here: one Python expression, e.g. jnp.tanh(x @ w + b).",
            col,
        ) from None
    except (ValueError, RecursionError, MemoryError):
        raise ExprError("The expression could not be parsed; type one plain expression.") from None
    root = compile_value(tree.body, ctx, 1)
    return root, ctx, ast.unparse(tree)
