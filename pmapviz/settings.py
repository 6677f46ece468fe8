"""The one settings layer: every value that reaches a computation goes through here.

Widgets, URLs (query parameters), environment variables and the command line all hand text to
the same typed parsers, each with explicit bounds:

* whole numbers are ASCII digits only (``'²'`` passes ``str.isdigit()`` but is refused here),
  at most :data:`MAX_DIGITS` long, with ``_`` or ``,`` allowed between digit groups;
* arithmetic on sizes is exact (``math.prod`` on Python ints, never ``np.prod``, which wraps);
* every number has a lower and an upper bound, and a refusal says what is wrong in one line and
  gives the nearest valid value;
* text that is echoed back to the user goes through :func:`quote`, so it is shown as literal
  code and can never become a Markdown link, image or formula.

A page's URL state is a :class:`Schema`: ``from_query`` turns the link's parameters into widget
text, replacing any bad value by its default with a visible note; ``parse`` turns widget text
into typed values or one message per bad field. Pages never parse text themselves.
"""

from __future__ import annotations

import errno
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_DIGITS = 19  # enough for any bound used here; longer text is refused before int()
MAX_TEXT = 200  # characters accepted from a URL or a text widget for one value
MAX_RANK = 32
MAX_ELEMENTS = 2**40  # per array, input or output: far below XLA's int64 extents (2**63)
MAX_DIM_DIGITS = 13  # 10**13 > MAX_ELEMENTS: a longer size is refused before int()

_INT = re.compile(r"[+-]?[0-9]+(?:[_,][0-9]+)*")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


class SettingError(ValueError):
    """A value the user gave is not usable; the message says why and what to use instead."""


def first_line(err: BaseException, limit: int = 300) -> str:
    """An exception said in one line: its message's first line (at most ``limit`` characters),
    or its type's name when it has no message. JAX's messages run to pages; one line is what
    a page or a CLI shows."""
    lines = str(err).strip().splitlines()
    return (lines[0] if lines else type(err).__name__)[:limit]


def quote(text: Any, limit: int = 40) -> str:
    """User text as inline code, safe inside Markdown: no link, image, HTML or formula can form.

    Backticks and control characters are replaced, long text is cut with an ellipsis."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    s = s.replace("`", "'")
    if len(s) > limit:
        s = s[:limit] + "..."
    return f"`{s}`" if s.strip() else "`(empty)`"


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


# ---------------------------------------------------------------- URL / widget schemas


def to_text(value: Any) -> str:
    """A setting's text as typed: lists and tuples joined with commas."""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


@dataclass(frozen=True)
class Field:
    """One setting: its URL key, the name used in messages, its default text, and the parser
    that turns text into a typed value (raising SettingError)."""

    key: str
    label: str
    default: str
    parse: Callable[[str, str], Any]
    max_len: int = MAX_TEXT  # longer text from a link is never kept
    show: Callable[[Any], str] = to_text  # a value (or its text) back to text: parse's inverse


def int_field(key: str, label: str, lo: int, hi: int, default: int) -> Field:
    """A setting that is a whole number from ``lo`` to ``hi``."""
    return Field(key, label, str(default), lambda t, name: parse_int(t, name, lo, hi))


def float_field(key: str, label: str, lo: float, hi: float, default: str) -> Field:
    """A setting that is a finite number from ``lo`` to ``hi``."""
    return Field(key, label, default, lambda t, name: parse_float(t, name, lo, hi))


def choice_field(key: str, label: str, choices: Sequence[str], default: str) -> Field:
    """A setting that is one of ``choices``."""
    options = tuple(choices)
    return Field(key, label, default, lambda t, name: parse_choice(t, name, options))


def parse_flag(text: Any, name: str) -> bool:
    """'1' or '0' (a link), or the bool a checkbox holds."""
    if isinstance(text, bool):
        return text
    raw = str(text).strip()
    if raw not in ("0", "1"):
        raise SettingError(f"{name} {quote(raw)} is not 0 or 1.")
    return raw == "1"


def flag_field(key: str, label: str, default: bool = False) -> Field:
    """An on/off setting: '1' or '0' in a link, a bool in its checkbox."""
    return Field(
        key,
        label,
        "1" if default else "0",
        parse_flag,
        show=lambda v: "1" if parse_flag(v, label) else "0",
    )


def text_field(
    key: str,
    label: str,
    default: str,
    check: Callable[[str, str], Any] | None = None,
    max_len: int = MAX_TEXT,
    typed: bool = False,
    show: Callable[[Any], str] = to_text,
) -> Field:
    """Free text (groups, pairs, shapes): capped in length; ``check`` validates its form and,
    with ``typed``, its value is what the field parses to (a shape tree, an axis)."""

    def parse(t: str, name: str) -> Any:
        raw = str(t if t is not None else "")
        if len(raw) > max_len:
            raise SettingError(f"{name} is {len(raw):,} characters long; at most {max_len}.")
        if any(not ch.isprintable() for ch in raw):
            raise SettingError(f"{name} {quote(raw)} contains control characters.")
        if check is None:
            return raw
        value = check(raw, name)
        return value if typed else raw

    return Field(key, label, default, parse, max_len, show)


@dataclass(frozen=True)
class Joint:
    """A check over several fields together (e.g. an expression and its argument names):
    ``check(texts)`` raises SettingError; a link that fails it gets these fields' defaults."""

    keys: tuple[str, ...]
    check: Callable[[Mapping[str, str]], Any]


@dataclass(frozen=True)
class Schema:
    """A page's settings: ``from_query`` for links, ``parse`` for what the widgets hold."""

    fields: tuple[Field, ...]
    joints: tuple[Joint, ...] = ()

    def defaults(self) -> dict[str, str]:
        """Every field's default text, by URL key."""
        return {f.key: f.default for f in self.fields}

    def field(self, key: str) -> Field:
        """The field whose URL key is ``key``."""
        return next(f for f in self.fields if f.key == key)

    def from_query(self, query: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """Widget text for every field: the link's value where it parses, else the default,
        with one note per replaced value (said in the user's terms, never raising)."""
        texts, notes = {}, []
        for f in self.fields:
            value = query.get(f.key)
            if value is None:
                texts[f.key] = f.default
                continue
            try:
                f.parse(value, f"The link's {f.key}=")
                texts[f.key] = str(value).strip() if len(str(value)) <= f.max_len else f.default
            except SettingError as err:
                notes.append(f"{err} Using the default, {quote(f.default)}.")
                texts[f.key] = f.default
        for j in self.joints:
            if not any(k in query for k in j.keys):
                continue
            try:
                j.check(texts)
            except SettingError as err:
                shown = ", ".join(f"{k}={quote(self.field(k).default)}" for k in j.keys)
                notes.append(f"The link's {'/'.join(j.keys)}: {err} Using the defaults, {shown}.")
                texts.update({k: self.field(k).default for k in j.keys})
        return texts, notes

    def to_query(self, values: Mapping[str, Any]) -> dict[str, str]:
        """The URL query for these settings (the inverse of :meth:`from_query`): each field's
        text, lists joined with commas; fields absent from ``values`` are left out."""
        return {f.key: f.show(values[f.key]) for f in self.fields if f.key in values}

    def parse(
        self,
        texts: Mapping[str, Any],
        keys: Sequence[str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """Typed values for ``keys`` (default: all fields; in the order given), and one
        message per field that fails, naming it by ``labels`` (default: the field's label; the
        CLI says ``--shape 2``, the explorer ``shape of w``); then each check over several
        fields (a Joint) whose fields all parsed, as links are checked."""
        values, errors = {}, []
        labels = labels or {}
        for f in self.fields if keys is None else [self.field(k) for k in keys]:
            try:
                values[f.key] = f.parse(texts.get(f.key, f.default), labels.get(f.key, f.label))
            except SettingError as err:
                errors.append(str(err))
        for j in self.joints:
            if all(k in values for k in j.keys):
                try:
                    j.check({k: texts.get(k, self.field(k).default) for k in j.keys})
                except SettingError as err:
                    errors.append(str(err))
        return values, errors


# ---------------------------------------------------------------- paths
MAX_PATH = 4096


def _path_text(text: Any, name: str) -> str:
    raw = str(text if text is not None else "").strip()
    if not raw or len(raw) > MAX_PATH or any(not ch.isprintable() for ch in raw):
        raise SettingError(
            f"{name} {quote(raw)} is not a path: give a file or folder name "
            f"({MAX_PATH} characters at most, no control characters)."
        )
    return raw


def parse_folder(text: Any, name: str) -> str:
    """An existing folder (e.g. the reports folder named at start-up) -> its absolute path."""
    path = Path(_path_text(text, name)).expanduser()
    if not path.is_dir():
        raise SettingError(f"{name} {quote(str(path), 80)} is not an existing folder.")
    return str(path.resolve())


def _path_shown(path: Any, limit: int = 100) -> str:
    """A path as inline code (see :func:`quote`), its end kept: the file name says the most."""
    s = str(path)
    return quote(s if len(s) <= limit else "..." + s[-limit:], limit + 3)


def parse_output_path(text: Any, name: str, example: str = "report.json") -> Path:
    """A file to write (e.g. ``--report PATH``) -> its ``Path``, checked before any work starts:
    not a folder (``example`` is the file name suggested inside it), not a link that loops, an
    existing file writable, a new one's folder existing and writable. ``-`` (stdout) is the
    caller's to handle. Writing can still fail later (a full disk): callers catch OSError."""
    path = Path(_path_text(text, name)).expanduser()
    shown = f"{name} {_path_shown(path)}"
    try:
        problem = _output_problem(path, example)
    except OSError as err:  # e.g. a folder on the way that this user may not look into
        problem = f" cannot be checked ({err.strerror}): name a file in a folder you can write to."
    if problem:
        raise SettingError(shown + problem)
    return path


def _output_problem(path: Path, example: str) -> str | None:
    """What keeps ``path`` from being written, said after the flag and path; None if nothing."""
    real = Path(os.path.realpath(path))  # where the write lands, through any links
    if real.is_dir():
        return f" is a folder: give a file name inside it, e.g. {_path_shown(path / example)}."
    try:
        real.stat()
    except OSError as err:
        if err.errno == errno.ELOOP:
            return " is a link that loops: name another file."
    if real.exists():
        if not os.access(real, os.W_OK):
            return (
                " exists and is not writable by this user: make it writable (chmod u+w) "
                "or name another file."
            )
        return None
    folder = real.parent
    if not folder.exists():
        return (
            f": its folder does not exist: create {_path_shown(folder)} first, or name a "
            "file in a folder that exists."
        )
    if not folder.is_dir():
        return f": {_path_shown(folder)} is a file, not a folder: name a file inside a folder."
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f": its folder {_path_shown(folder)} is not writable by this user: name a file "
            "in a folder you can write to."
        )
    return None


# ---------------------------------------------------------------- every page's URL state
DTYPES = ("float32", "int32", "bfloat16", "float16", "float64", "int8", "bool")
PRESENT_KEY = "present"


def present(query: Mapping[str, str]) -> bool:
    """Whether a link asks for presenter mode (``present=1``, ``true`` or ``yes``)."""
    return str(query.get(PRESENT_KEY, "")).strip().lower() in ("1", "true", "yes")
