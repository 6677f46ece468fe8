"""A page's settings, both ways: each setting a :class:`Field` (its URL key, label, default
text and parser), a page's settings a :class:`Schema`. ``from_query`` turns a link's parameters
into widget text, replacing any bad value by its default with a visible note; ``parse`` turns
widget text into typed values or one message per bad field; ``to_query`` writes values back
into a link. The parsers themselves are :mod:`pmapviz.core.base.valueparse`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import valueparse, valuetext


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
    max_len: int = valueparse.MAX_TEXT  # longer text from a link is never kept
    show: Callable[[Any], str] = to_text  # a value (or its text) back to text: parse's inverse
    default_words: str = ""  # the default in words where its text says nothing ('this machine')


def int_field(key: str, label: str, lo: int, hi: int, default: int) -> Field:
    """A setting that is a whole number from ``lo`` to ``hi``."""
    return Field(key, label, str(default), lambda t, name: valueparse.parse_int(t, name, lo, hi))


def float_field(key: str, label: str, lo: float, hi: float, default: str) -> Field:
    """A setting that is a finite number from ``lo`` to ``hi``."""
    return Field(key, label, default, lambda t, name: valueparse.parse_float(t, name, lo, hi))


def choice_field(key: str, label: str, choices: Sequence[str], default: str) -> Field:
    """A setting that is one of ``choices``."""
    options = tuple(choices)
    return Field(key, label, default, lambda t, name: valueparse.parse_choice(t, name, options))


def parse_flag(text: Any, name: str) -> bool:
    """'1' or '0' (a link), or the bool a checkbox holds."""
    if isinstance(text, bool):
        return text
    raw = str(text).strip()
    if raw not in ("0", "1"):
        raise valueparse.SettingError(f"{name} {valuetext.quote(raw)} is not 0 or 1.")
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
    max_len: int = valueparse.MAX_TEXT,
    typed: bool = False,
    show: Callable[[Any], str] = to_text,
) -> Field:
    """Free text (groups, pairs, shapes): capped in length; ``check`` validates its form and,
    with ``typed``, its value is what the field parses to (a shape tree, an axis)."""

    def parse(t: str, name: str) -> Any:
        raw = str(t if t is not None else "")
        if len(raw) > max_len:
            raise valueparse.SettingError(
                f"{name} is {len(raw):,} characters long; at most {max_len}."
            )
        if any(not ch.isprintable() for ch in raw):
            raise valueparse.SettingError(
                f"{name} {valuetext.quote(raw)} contains control characters."
            )
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
            except valueparse.SettingError as err:
                shown = f.default_words or valuetext.quote(f.default)
                notes.append(f"{err} Using the default, {shown}.")
                texts[f.key] = f.default
        for j in self.joints:
            if not any(k in query for k in j.keys):
                continue
            try:
                j.check(texts)
            except valueparse.SettingError as err:
                shown = ", ".join(f"{k}={valuetext.quote(self.field(k).default)}" for k in j.keys)
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
            except valueparse.SettingError as err:
                errors.append(str(err))
        for j in self.joints:
            if all(k in values for k in j.keys):
                try:
                    j.check({k: texts.get(k, self.field(k).default) for k in j.keys})
                except valueparse.SettingError as err:
                    errors.append(str(err))
        return values, errors


# ---------------------------------------------------------------- every page's URL state
DTYPES = ("float32", "int32", "bfloat16", "float16", "float64", "int8", "bool")
PRESENT_KEY = "present"


def present(query: Mapping[str, str]) -> bool:
    """Whether a link asks for presenter mode (``present=1``, ``true`` or ``yes``)."""
    return str(query.get(PRESENT_KEY, "")).strip().lower() in ("1", "true", "yes")
