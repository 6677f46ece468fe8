"""The conflict playground's URL state: the operation (matmul, an einsum from a fixed list, add),
the mesh (one axis ``d`` of every device, or two axes ``d`` x ``m`` where the device count
splits), each operand's global shape and PartitionSpec as typed, the dtype, and the TPU slice the
resolutions are compiled for (empty: none).

Every field goes through the settings layer (:mod:`pmapviz.core.base.settings`); specs are read
by :func:`pmapviz.features.meshes.meshspecs.parse_spec` (a tokenizer, never evaluated); shapes by
:func:`pmapviz.core.base.valueparse.parse_shape`, one level of brackets at most, exact integers
and bounded. A joint check refuses operands that do not fit the operation (ranks, the sizes the
operation pairs) or the mesh (:func:`meshspecs.problems`), in one line with a fix; a link that
fails it gets the defaults.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import settings, valueparse
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import fmt_count, quote
from pmapviz.core.pods import podtarget
from pmapviz.features.meshes import meshspecs
from pmapviz.features.meshes.meshspecs import Entry, Mesh

OPERATIONS = ("matmul", "einsum", "add")
SUBSCRIPTS = ("ij,jk->ik", "ij,kj->ik", "bij,bjk->bik", "ij,j->i", "ij,ij->i")
MESHES = ("1d", "2d")
DTYPES = ("float32", "bfloat16")
NAMES = ("d", "m")  # the mesh's axis names: d alone, or d x m
MAX_RANK = 3  # 'bij' is the longest operand
MAX_DIM = 2**24  # one dimension
MAX_ELEMENTS = 2**34  # one array (operand or result): nothing is allocated, only compiled
MAX_NESTING = 1  # '(64, 32)' or '[64, 32]'; '((64, 32))' is refused

KEYS = ("c_op", "c_eq", "c_mesh", "c_a", "c_pa", "c_b", "c_pb", "c_dt", podtarget.KEY)
CASE_KEYS = ("c_op", "c_eq", "c_mesh", "c_a", "c_pa", "c_b", "c_pb")


# ---------------------------------------------------------------- the mesh
def smallest_factor(n: int) -> int | None:
    """The least factor of ``n`` above 1 that leaves another above 1 (2 for 8, 3 for 9); None
    for 1 and primes (no 2-D mesh without an axis of one device)."""
    return next((p for p in range(2, math.isqrt(n) + 1) if n % p == 0), None)


def mesh_kinds(n: int) -> tuple[str, ...]:
    """The meshes ``n`` devices make: '1d' always, '2d' where ``n`` splits in two."""
    return MESHES if smallest_factor(n) else MESHES[:1]


def mesh_of(kind: str, n: int) -> Mesh:
    """The mesh of ``kind`` on ``n`` devices: ('d': n), or ('d': p, 'm': n / p) with p the least
    factor of n (2 x 4 on 8, 3 x 3 on 9)."""
    p = smallest_factor(n) if kind == "2d" else None
    return Mesh((p, n // p), NAMES) if p else Mesh((n,), NAMES[:1])


def mesh_label(kind: str, n: int) -> str:
    """'1-D mesh d=8', '2-D mesh d=2 x m=4'."""
    return f"{kind[0]}-D mesh {mesh_of(kind, n).text()}"


# ---------------------------------------------------------------- the operation's dimensions
def letters(op: str, eq: str) -> tuple[str, str, str] | None:
    """Each operand's and the result's dimension letters (None for add: equal shapes)."""
    if op == "matmul":
        return "ij", "jk", "ik"
    if op == "einsum":
        ins, out = eq.split("->")
        a, b = ins.split(",")
        return a, b, out
    return None


def operation_text(op: str, eq: str) -> str:
    """'a @ b', "einsum('ij,jk->ik', a, b)", 'a + b'."""
    return {"matmul": "a @ b", "add": "a + b"}.get(op, f"einsum({eq!r}, a, b)")


def example_shapes(op: str, eq: str, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes that fit the operation, each size a multiple of ``n`` (so any spec divides)."""
    sizes = {"b": 2 * n, "i": 8 * n, "j": 4 * n, "k": 2 * n}
    found = letters(op, eq)
    if found is None:
        return (8 * n, 4 * n), (8 * n, 4 * n)
    return tuple(sizes[c] for c in found[0]), tuple(sizes[c] for c in found[1])


def _shape_text(shape: tuple[int, ...]) -> str:
    return ", ".join(str(d) for d in shape)


def example(op: str, eq: str, n: int) -> dict[str, str]:
    """A conflict to start from (c_a, c_pa, c_b, c_pb as text): shapes that fit, and d on the
    dimension the product sums over in both operands, or for add on a's first dimension and
    b's second."""
    sa, sb = example_shapes(op, eq, n)
    la, lb, lo = letters(op, eq) or ("ij", "ij", "ij")
    summed = [c for c in la if c in lb and c not in lo]
    at = (la.index(summed[0]), lb.index(summed[0])) if summed else (0, 1)
    pa, pb = (
        tuple("d" if k == at[j] else None for k in range(len(s))) for j, s in enumerate((sa, sb))
    )
    return {
        "c_a": _shape_text(sa),
        "c_pa": meshspecs.spec_text(pa),
        "c_b": _shape_text(sb),
        "c_pb": meshspecs.spec_text(pb),
    }


def _fits_operation(op: str, eq: str, a: tuple, b: tuple, n: int) -> tuple[int, ...]:
    """The result's shape (for its bound), or SettingError in the user's sizes, with shapes
    that fit as the fix."""
    ea, eb = example_shapes(op, eq, n)
    like = f"like a = {_shape_text(ea)} and b = {_shape_text(eb)}"
    what = operation_text(op, eq)
    found = letters(op, eq)
    if found is None:
        if a != b:
            raise SettingError(
                f"{what} needs a and b of the same shape; a is {a} and b is {b}: type both {like}."
            )
        return a
    size: dict[str, int] = {}
    for name, shape, subs in (("a", a, found[0]), ("b", b, found[1])):
        if len(shape) != len(subs):
            raise SettingError(
                f"{what} needs {name} with {len(subs)} dimensions ({subs}); {name} {shape} has "
                f"{len(shape)}: type {like}."
            )
        for c, d in zip(subs, shape, strict=True):
            if size.setdefault(c, d) != d:
                raise SettingError(
                    f"{what} pairs a's and b's dimension {c!r}: a has {size[c]:,} and b has "
                    f"{d:,} there; make them equal, {like}."
                )
    return tuple(size[c] for c in found[2])


# ---------------------------------------------------------------- specs
def p_text(spec: tuple[Entry, ...]) -> str:
    """ "P()" for a spec that splits nothing, else "P('d', None)" (as JAX prints it)."""
    return "P()" if not any(spec) else meshspecs.spec_text(spec)


def specs_on(mesh: Mesh, shape: tuple[int, ...]) -> list[tuple[Entry, ...]]:
    """Every spec of one mesh axis (or None) per dimension, each axis used once, that divides
    ``shape``: the fewest split dimensions first."""
    found = [
        combo
        for combo in itertools.product((None, *mesh.names), repeat=len(shape))
        if len([e for e in combo if e]) == len({e for e in combo if e})
        and not meshspecs.problems(mesh, shape, combo)
    ]
    return sorted(found, key=lambda s: sum(e is not None for e in s))


# ---------------------------------------------------------------- one field at a time
def parse_operand_shape(text: Any, name: str) -> tuple[int, ...]:
    """'64, 32' -> (64, 32): 1 to 3 sizes, each 1 to 2**24, one level of brackets at most."""
    raw = str(text if text is not None else "").strip()
    opening = re.match(r"[\s(\[]*", raw).group()
    if sum(ch in "([" for ch in opening) > MAX_NESTING:
        raise SettingError(f"{name} {quote(raw)} is nested in brackets: type sizes like 64, 32.")
    shape = valueparse.parse_shape(raw, name)
    if not 1 <= len(shape) <= MAX_RANK:
        raise SettingError(f"{name} {quote(raw)} has {len(shape)} sizes; type 1 to {MAX_RANK}.")
    for d in shape:
        if not 1 <= d <= MAX_DIM:
            raise SettingError(
                f"{name}: the size {d:,} is out of range: each size is 1 to {MAX_DIM:,}."
            )
    _bounded(shape, name)
    return shape


def _bounded(shape: tuple[int, ...], name: str) -> None:
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise SettingError(
            f"{name} {shape} has {fmt_count(count)} elements; at most {MAX_ELEMENTS:,} (2**34)."
        )


def _spec_show(v: Any) -> str:
    return v if isinstance(v, str) else meshspecs.spec_text(v)


def _shape_show(v: Any) -> str:
    return v if isinstance(v, str) else _shape_text(v)


# ---------------------------------------------------------------- the whole case
@dataclass(frozen=True)
class Case:
    """An operation on two operands, each of a global shape split by a spec (one entry per
    dimension) over the mesh: the settings checked (:func:`check_case`)."""

    op: str  # 'matmul', 'einsum' or 'add'
    eq: str  # einsum's subscripts
    mesh: Mesh
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    specs: tuple[tuple[Entry, ...], tuple[Entry, ...]]
    out_shape: tuple[int, ...]  # to list the result's specs and bound it; its type is JAX's
    dtype: str = "float32"
    kind: str = "1d"  # the mesh's kind, to lay the same case on a TPU slice

    def expression(self, a: str = "a", b: str = "b", out: str = "") -> str:
        """The call as code: 'jnp.matmul(a, b)', "jnp.einsum('ij,jk->ik', a, b)", 'a + b'."""
        extra = f", out_sharding={out}" if out else ""
        if self.op == "add":
            return f"{a} + {b}"
        if self.op == "matmul":
            return f"jnp.matmul({a}, {b}{extra})"
        return f"jnp.einsum({self.eq!r}, {a}, {b}{extra})"

    def letters(self) -> tuple[str, str, str]:
        """a's, b's and the result's dimension letters ('ij' for all three of a 2-D add)."""
        return letters(self.op, self.eq) or (("ijk"[: len(self.shapes[0])],) * 3)

    def axes_by_letter(self, k: int) -> dict[str, set[str]]:
        """Operand ``k``'s mesh axes by dimension letter."""
        pairs = zip(self.letters()[k], self.specs[k], strict=True)
        return {c: set(meshspecs.axes_of(e)) for c, e in pairs}


def check_case(values: Mapping[str, Any], n: int) -> Case:
    """The typed case, or SettingError (one line, with a fix): operands that do not fit the
    operation, a result over the bound, or a spec the mesh refuses."""
    op, eq, kind = values["c_op"], values["c_eq"], values["c_mesh"]
    mesh = mesh_of(kind, n)
    shapes = (values["c_a"], values["c_b"])
    out = _fits_operation(op, eq, *shapes, n)
    _bounded(out, "the result")
    for name, shape, spec in zip("ab", shapes, (values["c_pa"], values["c_pb"]), strict=True):
        found = meshspecs.problems(mesh, shape, spec, name)
        if found:
            raise SettingError(f"{name}'s spec: {found[0].message} {found[0].fix}")
    specs = tuple(
        tuple(values[k]) + (None,) * (len(s) - len(values[k]))
        for k, s in zip(("c_pa", "c_pb"), shapes, strict=True)
    )
    return Case(op, eq, mesh, shapes, specs, out, values.get("c_dt", DTYPES[0]), kind)


def schema(n: int) -> settings.Schema:
    """The playground's fields for ``n`` devices: c_op, c_eq (einsum's subscripts), c_mesh,
    c_a / c_pa and c_b / c_pb (shapes and specs as typed), c_dt (dtype), pod (the target); the
    defaults are the contracting conflict ``[N, M@d] @ [M@d, K]``, sizes multiples of ``n``."""
    s = settings
    start = example("matmul", "", n)
    fields = (
        s.choice_field("c_op", "the operation", OPERATIONS, "matmul"),
        s.choice_field("c_eq", "einsum's subscripts", SUBSCRIPTS, SUBSCRIPTS[0]),
        s.choice_field("c_mesh", "the mesh", mesh_kinds(n), "1d"),
        s.text_field("c_a", "a's shape", start["c_a"], parse_operand_shape, 60, True, _shape_show),
        s.text_field(
            "c_pa", "a's spec", start["c_pa"], meshspecs.parse_spec, 200, True, _spec_show
        ),
        s.text_field("c_b", "b's shape", start["c_b"], parse_operand_shape, 60, True, _shape_show),
        s.text_field(
            "c_pb", "b's spec", start["c_pb"], meshspecs.parse_spec, 200, True, _spec_show
        ),
        s.choice_field("c_dt", "the dtype", DTYPES, DTYPES[0]),
        podtarget.pod_field(),
    )
    sch = s.Schema(fields)

    def joint(texts: Mapping[str, str]) -> None:
        values, errors = sch.parse(texts, list(CASE_KEYS))
        if not errors:
            check_case(values, n)

    return s.Schema(fields, (s.Joint(CASE_KEYS, joint),))


def values_or_defaults(texts: Mapping[str, Any], n: int) -> tuple[dict[str, Any], Case, list[str]]:
    """Typed values, the checked case and one line per problem: where anything is wrong, the
    defaults (a page shows the lines, then the defaults' case)."""
    sch = schema(n)
    values, errors = sch.parse(texts)
    if errors:
        values, _ = sch.parse(sch.defaults())
        errors = [f"{e} Showing the defaults." for e in errors]
    return values, check_case(values, n), errors
