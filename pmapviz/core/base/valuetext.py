"""Values written for people: user text as safe inline code (:func:`quote`), an exception in
one line (:func:`first_line`), and sizes, shapes, trees of shapes, counts and bytes as the pages,
messages and generated code write them (exact: a count never goes through float)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def first_line(err: BaseException, limit: int = 300) -> str:
    """An exception said in one line: its message's first line (at most ``limit`` characters),
    or its type's name when it has no message. JAX's messages run to pages; one line is what
    a page or a CLI shows."""
    lines = str(err).strip().splitlines()
    return (lines[0] if lines else type(err).__name__)[:limit]


def whole_message(err: BaseException, limit: int = 2000) -> str:
    """An exception's whole message on one line, for a page that wraps it: its lines joined
    (a list's ``*`` bullets as ``;``), at most ``limit`` characters (JAX's longest run to
    pages of traceback-like text; ``...`` says where one was cut)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    text = lines[0]
    for line in lines[1:]:
        bullet = line.startswith(("* ", "- "))
        joined = bullet and not text.endswith((":", ";", "."))
        text += ("; " if joined else " ") + line.lstrip("*- ")
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def quote(text: Any, limit: int = 40) -> str:
    """User text as inline code, safe inside Markdown: no link, image, HTML or formula can form.

    Backticks and control characters are replaced, long text is cut with an ellipsis."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    s = s.replace("`", "'")
    if len(s) > limit:
        s = s[:limit] + "..."
    return f"`{s}`" if s.strip() else "`(empty)`"


def fmt_int(n: int) -> str:
    """10000000 -> '10_000_000' (as written in Python code)."""
    return f"{n:_}"


def fmt_shape(shape: Sequence[int]) -> str:
    """(10000000, 3) -> '(10_000_000, 3)'; () -> '()'; (8,) -> '(8,)'."""
    inner = ", ".join(fmt_int(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def is_shape(x: Any) -> bool:
    """Whether ``x`` is a shape: a tuple of ints."""
    return isinstance(x, tuple) and all(isinstance(d, int) for d in x)


def fmt_tree(x: Any) -> str:
    """A shape, or a pytree (tuple, list, dict) of shapes: '(8, 4)', '((8, 4), (8,))'."""
    if is_shape(x):
        return fmt_shape(x)
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {fmt_tree(v)}" for k, v in x.items()) + "}"
    if isinstance(x, (tuple, list)):
        inner = ", ".join(fmt_tree(v) for v in x) + ("," if len(x) == 1 else "")
        return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
    return str(x)


def _has_dict(x: Any) -> bool:
    if isinstance(x, dict):
        return True
    return isinstance(x, (tuple, list)) and any(_has_dict(v) for v in x)


def md_tree(x: Any) -> str:
    """A tree for Markdown: :func:`fmt_tree`, inside a code span (:func:`quote`) when it has
    dict keys. The keys come from the user's f, and a key like '[a](http://...)' or
    'www.example.org' would otherwise render as a link or an image. Shapes alone stay plain."""
    text = fmt_tree(x)
    return quote(text, 400) if _has_dict(x) else text


def fmt_bytes(n: float) -> str:
    """Decimal units, as the memory messages use them: 4_096 -> '4,096 bytes', 950_000 ->
    '0.95 MB', 71_000_000 -> '71 MB', 1_234_000_000 -> '1.23 GB', 112_583_507_968 ->
    '112.6 GB'."""
    if n < 1e5:
        return f"{n:,.0f} bytes"
    if n < 1e7:
        return f"{n / 1e6:,.2f} MB"
    if n < 1e9:
        return f"{n / 1e6:,.0f} MB"
    return f"{n / 1e9:,.2f} GB" if n < 1e11 else f"{n / 1e9:,.1f} GB"


def fmt_count(n: int) -> str:
    """An exact count, shortened for huge values without going through float: 2**60 ->
    '1,152,921,504,606,846,976' up to 24 digits, else '1.2e+30'-style from the digits."""
    digits = str(n)
    if len(digits) <= 24:
        return f"{n:,}"
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def counted(n: int, noun: str) -> str:
    """``n`` and its noun, singular for one: ``counted(1, "device")`` -> '1 device',
    ``counted(8, "device")`` -> '8 devices'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def size_flag(n: int) -> str:
    """A byte count as a size flag reads it back (K/M/G/T binary, as ``parse_bytes`` takes
    them): 2147483648 -> '2G', 1536 * 2**20 -> '1536M', 1_500_000_000 -> '1500000000'."""
    for unit, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)
