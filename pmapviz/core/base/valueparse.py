"""The typed parsers every value a person gives goes through, and their one error.

Widgets, URLs (query parameters), environment variables and the command line all hand text to the
same parsers, each with explicit bounds:

* whole numbers are ASCII digits only (``'²'`` passes ``str.isdigit()`` but is refused here),
  at most :data:`MAX_DIGITS` long, with ``_`` or ``,`` allowed between digit groups;
* arithmetic on sizes is exact (``math.prod`` on Python ints, never ``np.prod``, which wraps);
* every number has a lower and an upper bound, and a refusal (:class:`SettingError`) says what
  is wrong in one line and gives the nearest valid value;
* text that is echoed back to the user goes through :func:`pmapviz.core.base.valuetext.quote`, so it
is
  shown as literal code and can never become a Markdown link, image or formula.

Pages never parse text themselves: their schemas (:mod:`pmapviz.core.base.settings`) call these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from pmapviz.core.base.valuetext import fmt_count, fmt_shape, quote

MAX_DIGITS = 19  # enough for any bound used here; longer text is refused before int()
MAX_TEXT = 200  # characters accepted from a URL or a text widget for one value
MAX_RANK = 32
MAX_ELEMENTS = 2**40  # per array, input or output: far below XLA's int64 extents (2**63)
MAX_DIM_DIGITS = 13  # 10**13 > MAX_ELEMENTS: a longer size is refused before int()

_INT = re.compile(r"[+-]?[0-9]+(?:[_,][0-9]+)*")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


class SettingError(ValueError):
    """A value the user gave is not usable; the message says why and what to use instead."""


# ---------------------------------------------------------------- scalar parsers


def digits_or(text: str, default: int = 0) -> int:
    """Plain ASCII digits (at most 9) as an int, anything else ``default``: for labels read
    from elsewhere (a trace's lane "gpu:3"), where ``str.isdigit`` would let '²' through to
    ``int()``."""
    return int(text) if re.fullmatch(r"[0-9]{1,9}", text or "") else default


def parse_int(text: Any, name: str, lo: int, hi: int) -> int:
    """'8', ' 1_000 ', '+3' -> int in [lo, hi]; anything else raises SettingError."""
    raw = str(text if text is not None else "").strip()
    span = f"a whole number from {lo:,} to {hi:,}"
    if len(raw.replace("_", "").replace(",", "")) > MAX_DIGITS + 1 and _INT.fullmatch(raw):
        nearest = hi if not raw.startswith("-") else lo
        raise SettingError(
            f"{name} {quote(raw)} is far too large: use {span} (nearest valid: {nearest:,})."
        )
    if not _INT.fullmatch(raw):
        raise SettingError(f"{name} {quote(raw)} is not {span} (digits 0-9 only).")
    value = int(raw.replace("_", "").replace(",", ""))
    if not lo <= value <= hi:
        nearest = min(max(value, lo), hi)
        raise SettingError(
            f"{name} {value:,} is out of range: use {span} (nearest valid: {nearest:,})."
        )
    return value


def parse_float(text: Any, name: str, lo: float, hi: float) -> float:
    """'0.05', '1e-3' -> float in [lo, hi], finite; 'nan', 'inf', '1e999' are refused."""
    raw = str(text if text is not None else "").strip()
    span = f"a number from {lo:g} to {hi:g}"
    if len(raw) > 32 or not _FLOAT.fullmatch(raw):
        raise SettingError(f"{name} {quote(raw)} is not {span} (digits, '.', 'e' only).")
    value = float(raw)
    if not math.isfinite(value) or not lo <= value <= hi:
        nearest = min(max(value, lo), hi) if math.isfinite(value) else hi
        raise SettingError(
            f"{name} {quote(raw)} is out of range: use {span} (nearest valid: {nearest:g})."
        )
    return value


def parse_choice(text: Any, name: str, choices: Sequence[str]) -> str:
    """The text (spaces trimmed) when it is one of ``choices``; else a SettingError listing them."""
    raw = str(text if text is not None else "").strip()
    if raw not in choices:
        shown = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
        raise SettingError(f"{name} {quote(raw)} is not one of: {shown}.")
    return raw


def parse_int_list(
    text: Any,
    name: str,
    lo: int,
    hi: int,
    max_items: int = 16,
    allowed: Sequence[int] | None = None,
) -> list[int]:
    """'1, 2, 4' -> [1, 2, 4]: each a whole number in [lo, hi] (and in ``allowed`` if given),
    no duplicates, at most ``max_items``."""
    raw = str(text if text is not None else "").strip()
    parts = [p for p in re.split(r"[\s;,]+", raw) if p]
    if not parts:
        raise SettingError(f"{name} is empty: give whole numbers separated by commas.")
    if len(parts) > max_items:
        raise SettingError(f"{name} has {len(parts)} values; at most {max_items} are allowed.")
    values = [parse_int(p, f"{name} value", lo, hi) for p in parts]
    if allowed is not None:
        bad = [v for v in values if v not in allowed]
        if bad:
            raise SettingError(
                f"{name}: {bad[0]:,} is not one of the choices "
                f"({', '.join(f'{a:,}' for a in allowed)})."
            )
    return sorted(set(values))


_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 10**3,
    "kib": 2**10,
    "m": 2**20,
    "mb": 10**6,
    "mib": 2**20,
    "g": 2**30,
    "gb": 10**9,
    "gib": 2**30,
    "t": 2**40,
    "tb": 10**12,
    "tib": 2**40,
}
MIN_BUDGET = 64 * 2**20
MAX_BUDGET = 2**40  # 1 TiB: above any machine this runs on; a typo like 4000G is refused


def parse_bytes(text: Any, name: str, lo: int = MIN_BUDGET, hi: int = MAX_BUDGET) -> int:
    """'2G', '512MiB', '1500000000' -> bytes (K/M/G/T alone are binary, KB/MB/GB decimal),
    exact integer arithmetic, within [lo, hi]."""
    raw = str(text if text is not None else "").strip()
    m = re.fullmatch(r"([0-9]{1,13})(?:\.([0-9]{1,6}))?\s*([A-Za-z]{0,3})", raw)
    unit = m.group(3).lower() if m else None
    if not m or unit not in _BYTE_UNITS:
        raise SettingError(
            f"{name} {quote(raw)} is not a size. Use bytes, or a number with K, M, G or T, e.g. 4G."
        )
    whole, frac = m.group(1), m.group(2) or ""
    value = (int(whole + frac) * _BYTE_UNITS[unit]) // 10 ** len(frac)
    if value < lo:
        least = f"{lo // 2**20}M"
        raise SettingError(
            f"{name} {quote(raw)} is {value:,} bytes; the smallest useful "
            f"budget is {least} (nearest valid: {least})."
        )
    if value > hi:
        raise SettingError(
            f"{name} {quote(raw)} is {value:,} bytes, above the largest "
            f"budget accepted, {hi // 2**30:,}G (nearest valid: "
            f"{hi // 2**30}G)."
        )
    return value


# ---------------------------------------------------------------- shapes and axes


def parse_shape(text: Any, name: str = "shape") -> tuple[int, ...]:
    """'8, 1250000, 3', '(8,1_250_000,3)', '[8 1250000 3]' -> (8, 1250000, 3); '()' -> ().

    ASCII digits only; at most MAX_RANK axes and MAX_ELEMENTS elements (exact arithmetic)."""
    raw = str(text if text is not None else "").strip()
    if len(raw) > 500:
        raise SettingError(f"{name} is {len(raw):,} characters long; type a shape like 8, 128.")
    body = raw.strip("()[] \t")
    if not body:
        if raw and set(raw) <= set("()[] "):
            return ()
        raise SettingError(f"{name} is empty: type its sizes like 8, 128 (or () for a scalar).")
    if re.search(r",\s*,", body):
        raise SettingError(f"{name} {quote(raw)} has an empty size between two commas.")
    # "8x128" and "8 × 128" are two sizes; an x that joins no two sizes ("4, x, 3") is a typo
    body = re.sub(r"(?<=[0-9_])\s*[x×]\s*(?=[0-9])", ",", body)
    dims = [_dim(p, raw, name) for p in re.split(r"[,\s]+", body) if p != ""]
    if len(dims) > MAX_RANK:
        raise SettingError(f"{name} has {len(dims)} axes; at most {MAX_RANK} are supported.")
    check_elements(dims, name)
    return tuple(dims)


def _dim(part: str, raw: str, name: str) -> int:
    clean = part.replace("_", "")
    if not re.fullmatch(r"[0-9]+", clean):
        raise SettingError(
            f"{name}: {quote(part)} in {quote(raw)} is not a size. Sizes are "
            "whole numbers >= 0 (digits 0-9), separated by commas, like "
            "8, 1250000, 3."
        )
    if len(clean.lstrip("0")) > MAX_DIM_DIGITS:
        raise SettingError(
            f"{name}: the size {quote(part, 20)} has {len(clean)} digits; no "
            f"array here may exceed {MAX_ELEMENTS:,} elements."
        )
    return int(clean)


def check_elements(shape: Sequence[int], name: str) -> int:
    """The exact element count of ``shape``; SettingError above MAX_ELEMENTS."""
    count = math.prod(int(d) for d in shape)
    if count > MAX_ELEMENTS:
        raise SettingError(
            f"{name} {fmt_shape(shape)} has {fmt_count(count)} elements; at most "
            f"{MAX_ELEMENTS:,} (2**40) are supported per array. Use smaller sizes."
        )
    return count


def parse_axis(text: Any, name: str = "axis") -> int | None:
    """'0', '-1', ' 2 ' -> int; 'None', 'none', '' -> None. ASCII digits, at most 3."""
    raw = str(text if text is not None else "").strip()
    if raw.lower() in ("", "none", "null"):
        return None
    if not re.fullmatch(r"[+-]?[0-9]{1,3}", raw):
        raise SettingError(
            f"{name} {quote(raw)} is not an axis: type an integer like 0 or 1, or None."
        )
    return int(raw)


def parse_axis_name(text: Any) -> str | None:
    """'' -> None; 'i', 'batch_1' -> the name. Only simple ASCII names: it ends up in code."""
    raw = str(text if text is not None else "").strip()
    if not raw:
        return None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,31}", raw):
        raise SettingError(
            f"axis_name {quote(raw)} is not a simple name: use letters, digits "
            "and _, starting with a letter, e.g. i or batch."
        )
    return raw
