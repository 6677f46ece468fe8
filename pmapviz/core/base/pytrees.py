"""Pytree arguments: an argument that is a dict or tuple of arrays, with ``in_axes`` (and
``out_axes``) given as a pytree *prefix* of it, as ``jax.pmap`` allows.

Trees here are plain nests of ``dict`` and ``tuple`` whose leaves are shapes (tuples of ints;
``()`` is a scalar) or axes (``int`` or ``None``). They are flattened the way JAX flattens
them (dict keys in sorted order), and each leaf is named the way a user would index it:
``params['b']``, ``pair[0]``. Text is read by a small bounded tokenizer (never ``eval``):

* ``parse_shape_tree("{'w': (5, 2), 'b': (2,)}")`` -> ``{'w': (5, 2), 'b': (2,)}``;
* ``parse_axis_tree("{'w': None, 'b': 0}")`` -> ``{'w': None, 'b': 0}``;
* :func:`leaves` / :func:`skeleton` / :func:`unflatten` walk a shape tree;
* :func:`broadcast` spreads a prefix over a tree's leaves, or says where it does not fit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from pmapviz.core.base import valueparse
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import quote

MAX_TREE_TEXT = 500
MAX_TREE_DEPTH = 4  # containers inside containers
MAX_LEAVES = 16  # arrays in one argument
LEAF = "*"  # a leaf in a skeleton

_TOKEN = re.compile(
    r"\s*(?:(?P<punct>[{}()\[\]:,])|(?P<key>'[A-Za-z_][A-Za-z0-9_]{0,31}'|"
    r'"[A-Za-z_][A-Za-z0-9_]{0,31}")|(?P<int>[+-]?[0-9][0-9_]*)|(?P<none>None\b|none\b|null\b))'
)


class TreeError(SettingError):
    """Text that is not a tree of the expected kind; the message names the column."""


def is_shape(x: Any) -> bool:
    """Whether ``x`` is a shape: a tuple of ints (``()`` is a scalar)."""
    return isinstance(x, tuple) and all(type(d) is int for d in x)


def is_axis(x: Any) -> bool:
    """Whether ``x`` is an axis: an int or None."""
    return x is None or type(x) is int


def is_tree_text(text: Any) -> bool:
    """Does ``text`` describe a container (a dict, or brackets inside brackets)?"""
    raw = str(text if text is not None else "")
    depth, deepest = 0, 0
    for ch in raw:
        depth += ch in "([{"
        depth -= ch in ")]}"
        deepest = max(deepest, depth)
    return "{" in raw or deepest > 1


# ---------------------------------------------------------------- text -> tree
def _tokens(text: str, name: str) -> list[tuple[str, str, int]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m:
            col = i + len(text[i:]) - len(text[i:].lstrip()) + 1
            raise TreeError(
                f"{name}: column {col}: {quote(text[col - 1])} is not allowed here; a "
                "tree is written with {'key': ...}, (..., ...), sizes, None and "
                "quoted keys made of letters, digits and _."
            )
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind) + 1))
        i = m.end()
    return out


class _Reader:
    def __init__(self, text: str, name: str, leaf: str):
        if len(text) > MAX_TREE_TEXT:
            raise TreeError(
                f"{name} is {len(text):,} characters long; at most {MAX_TREE_TEXT} are allowed."
            )
        self.toks, self.k, self.n_leaves = _tokens(text, name), 0, 0
        self.name, self.leaf, self.length = name, leaf, len(text)

    def peek(self) -> tuple[str, str, int]:
        """The next token, not taken; ``("end", "", 0)`` after the last."""
        return self.toks[self.k] if self.k < len(self.toks) else ("end", "", 0)

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        """The next token, taken; raises :class:`TreeError` unless it is ``value`` (when given)."""
        tok = self.peek()
        if value is not None and tok[1] != value:
            self.fail(tok, f"expected {value!r}")
        self.k += 1
        return tok

    def fail(self, tok, what: str):
        """Raise a :class:`TreeError` saying ``what`` was expected where ``tok`` is."""
        where = (
            f"column {tok[2]}: {tok[1]!r}"
            if tok[0] != "end"
            else f"the end of the text (column {self.length + 1})"
        )
        raise TreeError(f"{self.name}: {what}, found {where}.")

    def separator(self, close: str):
        """After an item: a comma, or the bracket that closes the container."""
        tok = self.peek()
        if tok[1] == ",":
            self.take()
        elif tok[1] != close:
            self.fail(tok, f"expected ',' or {close!r}")

    def count_leaf(self):
        """Count one more leaf; raises :class:`TreeError` past :data:`MAX_LEAVES`."""
        self.n_leaves += 1
        if self.n_leaves > MAX_LEAVES:
            raise TreeError(f"{self.name} has more than {MAX_LEAVES} arrays; use fewer.")

    def node(self, depth: int) -> Any:
        """The tree at the next token: a dict, a bracketed sequence, or (for axes) one axis."""
        kind, value, _ = tok = self.peek()
        if depth > MAX_TREE_DEPTH + 1:
            self.fail(tok, f"trees nest at most {MAX_TREE_DEPTH} containers deep")
        if value == "{":
            return self.mapping(depth)
        if value in "([" and kind == "punct":
            return self.sequence(depth)
        if self.leaf == "axis" and kind in ("int", "none"):
            self.take()
            self.count_leaf()
            return None if kind == "none" else _small_int(value, tok, self)
        want = (
            "an axis (an integer or None), {...} or (...)"
            if self.leaf == "axis"
            else "a shape in brackets like (5, 2), {...} or a tuple of shapes"
        )
        self.fail(tok, f"expected {want}")

    def mapping(self, depth: int) -> dict:
        """The ``{'key': tree, ...}`` at the next token; never empty."""
        self.take("{")
        out: dict[str, Any] = {}
        while self.peek()[1] != "}":
            kind, value, _ = tok = self.take()
            if kind != "key":
                self.fail(tok, "expected a quoted key like 'w'")
            if value[1:-1] in out:
                self.fail(tok, "this key is given twice")
            self.take(":")
            out[value[1:-1]] = self.node(depth + 1)
            self.separator("}")
        self.take("}")
        if not out:
            raise TreeError(f"{self.name}: an empty dict {{}} holds no arrays.")
        return out

    def sequence(self, depth: int) -> Any:
        """The brackets at the next token: a shape (sizes), or a tuple of trees."""
        close = ")" if self.take()[1] == "(" else "]"
        items, ints = [], []
        while self.peek()[1] != close:
            tok = self.peek()
            if self.leaf == "shape" and tok[0] == "int":
                self.take()
                ints.append(_small_int(tok[1], tok, self, size=True))
            else:
                items.append(self.node(depth + 1))
            self.separator(close)
        self.take(close)
        if ints and items:
            raise TreeError(
                f"{self.name}: a bracket holds either sizes (a shape) or arrays, not "
                "both; write a tuple of shapes as ((8, 4), (4,))."
            )
        if self.leaf == "shape" and not items:
            self.count_leaf()
            return tuple(ints)  # a shape; () is a scalar
        return tuple(items)


def _small_int(text: str, tok, reader: _Reader, size: bool = False) -> int:
    digits = text.replace("_", "").lstrip("+-")
    if len(digits.lstrip("0")) > (13 if size else 3):
        reader.fail(tok, "this number is too long")
    value = int(text.replace("_", ""))
    if size and value < 0:
        reader.fail(tok, "sizes are whole numbers >= 0")
    return value


def parse_tree(text: Any, name: str, leaf: str) -> Any:
    """A tree of shapes (``leaf="shape"``) or axes (``leaf="axis"``) from its text."""
    reader = _Reader(str(text if text is not None else "").strip(), name, leaf)
    tree = reader.node(1)
    if reader.peek()[0] != "end":
        reader.fail(reader.peek(), "expected the end of the tree")
    return tree


# ---------------------------------------------------------------- walking a tree
def _children(tree: Any, is_leaf: Callable[[Any], bool]) -> list[tuple[str, Any]] | None:
    if is_leaf(tree):
        return None
    if tree is None:  # JAX: an empty subtree
        return []
    if isinstance(tree, dict):
        return [(f"[{k!r}]", tree[k]) for k in sorted(tree)]
    if isinstance(tree, (tuple, list)):
        return [(f"[{i}]", v) for i, v in enumerate(tree)]
    raise TypeError(f"not a tree node: {tree!r}")


def leaves(tree: Any, name: str, is_leaf: Callable[[Any], bool] = is_shape) -> list[tuple]:
    """``[(leaf name, leaf)]`` in JAX's order: ``[("params['b']", (2,)), ...]``."""
    kids = _children(tree, is_leaf)
    if kids is None:
        return [(name, tree)]
    return [pair for suffix, v in kids for pair in leaves(v, name + suffix, is_leaf)]


def skeleton(tree: Any, is_leaf: Callable[[Any], bool] = is_shape) -> Any:
    """The tree's structure as a hashable value, leaves replaced by :data:`LEAF`."""
    if is_leaf(tree):
        return LEAF
    if isinstance(tree, dict):
        return ("dict", tuple((k, skeleton(tree[k], is_leaf)) for k in sorted(tree)))
    return ("tuple", tuple(skeleton(v, is_leaf) for v in (tree or ())))


def count(skel: Any) -> int:
    """How many leaves the skeleton ``skel`` has."""
    if skel == LEAF:
        return 1
    return sum(count(v) for v in _skel_values(skel))


def _skel_values(skel: Any) -> list[Any]:
    kind, items = skel
    return [v for _, v in items] if kind == "dict" else list(items)


def _rebuild(skel: Any, values: list[Any], make_dict: Callable, make_tuple: Callable) -> Any:
    """Walk ``skel`` in leaf order, taking each leaf from ``values``, and build each container
    with ``make_dict([(key, built)])`` or ``make_tuple([built])``."""
    it = iter(values)

    def build(s):
        if s == LEAF:
            return next(it)
        kind, items = s
        if kind == "dict":
            return make_dict([(k, build(v)) for k, v in items])
        return make_tuple([build(v) for v in items])

    return build(skel)


def unflatten(skel: Any, values: list[Any]) -> Any:
    """The tree of ``skel`` with its leaves taken from ``values`` in order."""
    return _rebuild(skel, values, dict, tuple)


def render(skel: Any, texts: list[str]) -> str:
    """Python source of the tree ``skel`` whose leaves are the source texts ``texts``:
    ``render(skel, ["b0", "w0"])`` -> ``"{'b': b0, 'w': w0}"``."""

    def as_tuple(parts: list[str]) -> str:
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"

    return _rebuild(
        skel, texts, lambda kv: "{" + ", ".join(f"{k!r}: {v}" for k, v in kv) + "}", as_tuple
    )


# ---------------------------------------------------------------- prefixes
def _describe(skel: Any) -> str:
    if skel == LEAF:
        return "one array"
    kind, items = skel
    if kind == "dict":
        return f"a dict with keys {quote(', '.join(repr(k) for k, _ in items), 200)}"
    return f"a tuple of {len(items)}"


def broadcast(prefix: Any, skel: Any, name: str, what: str = "in_axes") -> list[Any]:
    """One axis per leaf of ``skel``: ``prefix`` is an axis (for the whole subtree) or a
    container matching the tree's. Raises :class:`TreeError` naming where it does not fit."""
    if is_axis(prefix):
        return [prefix] * count(skel)
    given = skeleton(prefix, is_axis)
    if (
        skel == LEAF
        or given[0] != skel[0]
        or (skel[0] == "dict" and [k for k, _ in given[1]] != [k for k, _ in skel[1]])
        or len(given[1]) != len(skel[1])
    ):
        raise TreeError(
            f"{what} for {name} is {_describe(given)}, but {name} is "
            f"{_describe(skel)}: an {what} entry must be one axis (or None) for "
            "the whole of it, or have exactly its structure."
        )
    subs = (
        [(f"[{k!r}]", prefix[k]) for k, _ in skel[1]]
        if skel[0] == "dict"
        else [(f"[{i}]", v) for i, v in enumerate(prefix)]
    )
    out = []
    for (suffix, sub), sub_skel in zip(subs, _skel_values(skel), strict=True):
        out += broadcast(sub, sub_skel, name + suffix, what)
    return out


def freeze(tree: Any) -> Any:
    """A hashable form of a tree of shapes or axes (a dict as its sorted items, marked), for
    cache keys; :func:`thaw` gives the tree back."""
    if isinstance(tree, dict):
        return ("__dict__", tuple((k, freeze(v)) for k, v in sorted(tree.items())))
    if isinstance(tree, (tuple, list)):
        return tuple(freeze(v) for v in tree)
    return tree


def thaw(frozen: Any) -> Any:
    """The tree a :func:`freeze` value stands for (dicts back as dicts)."""
    if isinstance(frozen, tuple) and frozen[:1] == ("__dict__",):
        return {k: thaw(v) for k, v in frozen[1]}
    if isinstance(frozen, tuple):
        return tuple(thaw(v) for v in frozen)
    return frozen


def fmt_prefix(prefix: Any) -> str:
    """An axis prefix as Python: ``{'b': 0, 'w': None}``, ``(0, None)``."""
    if isinstance(prefix, dict):
        return "{" + ", ".join(f"{k!r}: {fmt_prefix(v)}" for k, v in prefix.items()) + "}"
    if isinstance(prefix, (tuple, list)):
        inner = ", ".join(fmt_prefix(v) for v in prefix) + ("," if len(prefix) == 1 else "")
        return f"({inner})"
    return repr(prefix)


@functools.lru_cache(maxsize=256)
def flat_function(fn: Callable, skeletons: tuple) -> Callable:
    """``fn`` taking one array per leaf: the leaves are put back into each argument's tree
    (``skeletons``, one per argument) before ``fn`` is called, exactly as JAX would hand
    them to it. The same object for the same ``fn`` and structure (caches key on it)."""
    sizes = [count(s) for s in skeletons]

    def flat(*xs):
        args, k = [], 0
        for skel, n in zip(skeletons, sizes, strict=True):
            args.append(unflatten(skel, list(xs[k : k + n])))
            k += n
        return fn(*args)

    return flat


def parse_shape_tree(text: Any, name: str = "shape") -> Any:
    """A shape (as :func:`pmapviz.core.base.valueparse.parse_shape`), or a dict / tuple of shapes
    for a
    pytree argument: "{'w': (5, 2), 'b': (2,)}", "((8, 4), (8,))"."""
    if not is_tree_text(text):
        return valueparse.parse_shape(text, name)
    tree = parse_tree(text, name, "shape")
    for leaf_name, shape in leaves(tree, name):
        if len(shape) > valueparse.MAX_RANK:
            raise SettingError(
                f"{leaf_name} has {len(shape)} axes; at most {valueparse.MAX_RANK} are supported."
            )
        valueparse.check_elements(shape, leaf_name)
    return tree


def parse_axis_tree(text: Any, name: str = "axis") -> Any:
    """An axis (as :func:`pmapviz.core.base.valueparse.parse_axis`), or a pytree prefix of axes:
    "{'w': None, 'b': 0}", "(0, None)"."""
    if not any(ch in str(text if text is not None else "") for ch in "([{"):
        return valueparse.parse_axis(text, name)
    return parse_tree(text, name, "axis")


def split_top_level(text: str) -> list[str]:
    """The parts of a tuple's inside, split at its top-level commas (brackets and quotes kept
    whole): "0, {'w': None, 'b': 0}" -> ['0', "{'w': None, 'b': 0}"]; a trailing comma ends
    a one-part tuple ("0," -> ['0'])."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return [*parts, last] if last or not parts else parts
