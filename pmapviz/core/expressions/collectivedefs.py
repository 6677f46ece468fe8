"""What each collective of the playground is, one record each: its name and label, the code
shown, the JAX call, numpy's answer, where each piece of a device's result comes from, the XLA
op it compiles to and that op's ring-model bytes, a one-line explanation, its picture, and how
"your own f" may call it (:class:`TypedCall`).

The playground (:mod:`pmapviz.features.collectives.collectiveruns`), the Compiled page, the
tour, the trace reader, the CLI and the vocabulary of your own f
(:mod:`pmapviz.core.expressions.exprvocab`) read these records and nothing else: adding a
collective is adding one record here. JAX is imported inside the calls, never here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

AXIS = "i"
Pairs = list[tuple[int, int]] | None
Groups = list[list[int]] | None
Source = tuple[int, int] | None  # (source device, piece of its block), or not a copy


GROUP_KEYWORDS = ("axis_index_groups",)


@dataclass(frozen=True)
class TypedCall:
    """How "your own f" may call a collective: ``lax.<name>`` with ``min_pos`` to ``max_pos``
    positional arguments, these keywords (``axis_name`` always), the axis name at position
    ``axis_arg``, and a note for the vocabulary's help."""

    name: str
    min_pos: int
    max_pos: int
    keywords: tuple[str, ...]
    note: str
    axis_arg: int = 1


@dataclass(frozen=True)
class Collective:
    """One collective: how it is named, shown, run, checked, compiled, costed and drawn."""

    key: str
    label: str
    code: str  # shown to the user; {groups}, {perm} filled in
    kind: str  # "reduce", "gather", "permute", "scatter", "index", "normalise"
    explain: str  # what every device holds afterwards, in one line
    call: Callable  # (x, axis, groups, pairs) -> the per-device JAX value
    reference: Callable  # (x (n, m), groups, pairs) -> what each device holds, by numpy
    sources: Callable  # (n, pairs) -> per device, per piece: the Source it copies
    hlo: str | None  # the XLA op it compiles to (ring model, traces); None: no communication
    primitives: tuple[str, ...] = ()  # JAX primitives named after it in traces ("psum.7")
    uses_groups: bool = False  # takes axis_index_groups
    needs_divisible: bool = False  # m must be a multiple of the group size
    takes_pairs: bool = False  # takes (source, destination) pairs: the form asks for them
    picture: str = "grid"  # "grid": before/after per device; "arrows": and the pairs drawn
    payload: str = "block"  # what each device sends: its "block", or one "scalar"
    typed: TypedCall | None = None  # how your own f calls it; None: not a lax function of its own

    def comm_bytes(self, n: int, m: int, itemsize: int, groups: Groups, pairs: Pairs):
        """``({"sent", "received"} bytes per device, the model's words)`` under a ring
        (bandwidth-optimal) model."""
        if self.hlo is None:
            return {"sent": 0.0, "received": 0.0}, (
                "no communication: each device knows its own index"
            )
        block = itemsize if self.payload == "scalar" else m * itemsize
        return ring_model(self.hlo, block, groups or [list(range(n))], n, pairs)


# ---------------------------------------------------------------- calls (JAX, lazily)
def _groups_kw(groups: Groups) -> dict:
    return {"axis_index_groups": groups} if groups else {}


def _reduction(name: str) -> Callable:
    def call(x, axis, groups, pairs):
        from jax import lax

        return getattr(lax, name)(x, axis, **_groups_kw(groups))

    return call


def _all_gather(tiled: bool) -> Callable:
    def call(x, axis, groups, pairs):
        from jax import lax

        return lax.all_gather(x, axis, tiled=tiled)

    return call


def _ppermute(x, axis, groups, pairs):
    from jax import lax

    return lax.ppermute(x, axis, perm=pairs)


def _psum_scatter(x, axis, groups, pairs):
    from jax import lax

    return lax.psum_scatter(x, axis, tiled=True)


def _all_to_all(x, axis, groups, pairs):
    from jax import lax

    return lax.all_to_all(x, axis, 0, 0, tiled=True)


def _axis_index(x, axis, groups, pairs):
    from jax import lax

    return lax.axis_index(axis)


def _normalise(x, axis, groups, pairs):
    import jax.numpy as jnp
    from jax import lax

    return x / lax.psum(jnp.sum(x), axis)


# ---------------------------------------------------------------- numpy's answers
def _reduction_ref(reduce: Callable) -> Callable:
    def reference(x, groups, pairs):
        n = x.shape[0]
        group_of = {d: g for g in groups or [list(range(n))] for d in g}
        return [reduce(x[group_of[d]], axis=0) for d in range(n)]

    return reference


def _gather_ref(x, groups, pairs):
    return [x.copy() for _ in range(x.shape[0])]


def _gather_tiled_ref(x, groups, pairs):
    return [x.reshape(-1) for _ in range(x.shape[0])]


def _ppermute_ref(x, groups, pairs):
    out = [np.zeros(x.shape[1], x.dtype) for _ in range(x.shape[0])]
    for s, d in pairs:
        out[d] = x[s]
    return out


def _psum_scatter_ref(x, groups, pairs):
    n, m = x.shape
    return [x.sum(axis=0).reshape(n, m // n)[d] for d in range(n)]


def _all_to_all_ref(x, groups, pairs):
    n, m = x.shape
    pieces = x.reshape(n, n, m // n)  # [source, destination piece, ...]
    return [pieces[:, d, :].reshape(-1) for d in range(n)]


def _axis_index_ref(x, groups, pairs):
    return [np.array(d) for d in range(x.shape[0])]


def _normalise_ref(x, groups, pairs):
    return [x[d] / x.sum() for d in range(x.shape[0])]


# ---------------------------------------------------------------- where pieces come from
def _combined(n: int, pairs: Pairs) -> list[list[Source]]:
    return [[None] for _ in range(n)]  # a reduction or an index: no piece is a copy


def _gathered(n: int, pairs: Pairs) -> list[list[Source]]:
    return [[(j, 0) for j in range(n)] for _ in range(n)]  # piece j: device j's block


def _exchanged(n: int, pairs: Pairs) -> list[list[Source]]:
    return [[(j, d) for j in range(n)] for d in range(n)]  # piece j of d: piece d of j


def _sent(n: int, pairs: Pairs) -> list[list[Source]]:
    src = {d: s for s, d in pairs or []}  # a device no pair sends to holds zeros
    return [[(src[d], 0)] if d in src else [None] for d in range(n)]


def _reduction_record(name: str, what: str, reduce: Callable) -> Collective:
    return Collective(
        name,
        f"{name}: {what} over devices",
        f"lax.{name}(x, 'i'{{groups}})",
        "reduce",
        f"every device gets the {what} of all devices' blocks, element by element",
        _reduction(name),
        _reduction_ref(reduce),
        _combined,
        "all-reduce",
        (name,),
        uses_groups=True,
        typed=TypedCall(
            name, 1, 2, GROUP_KEYWORDS, "reduces over the mapped axis; every device gets the result"
        ),
    )


COLLECTIVES: tuple[Collective, ...] = (
    _reduction_record("psum", "sum", np.sum),
    _reduction_record("pmean", "mean", np.mean),
    _reduction_record("pmax", "maximum", np.max),
    _reduction_record("pmin", "minimum", np.min),
    Collective(
        "all_gather",
        "all_gather: every device gets every block",
        "lax.all_gather(x, 'i')",
        "gather",
        "every device gets every device's block, stacked on a new leading axis",
        _all_gather(False),
        _gather_ref,
        _gathered,
        "all-gather",
        ("all_gather",),
        typed=TypedCall(
            "all_gather",
            1,
            2,
            ("axis", "tiled", "to", *GROUP_KEYWORDS),
            "every device gets every device's block",
        ),
    ),
    Collective(
        "all_gather_tiled",
        "all_gather(tiled=True): concatenated",
        "lax.all_gather(x, 'i', tiled=True)",
        "gather",
        "every device gets every device's block, concatenated end to end",
        _all_gather(True),
        _gather_tiled_ref,
        _gathered,
        "all-gather",
    ),
    Collective(
        "ppermute",
        "ppermute: send blocks along pairs",
        "lax.ppermute(x, 'i', perm={perm})",
        "permute",
        "each (source, destination) pair moves one block; a device no pair sends to gets zeros",
        _ppermute,
        _ppermute_ref,
        _sent,
        "collective-permute",
        ("ppermute",),
        takes_pairs=True,
        picture="arrows",
        typed=TypedCall("ppermute", 1, 3, ("perm",), "sends blocks along the (source, dest) pairs"),
    ),
    Collective(
        "psum_scatter",
        "psum_scatter: sum, then each keeps one piece",
        "lax.psum_scatter(x, 'i', tiled=True)",
        "scatter",
        "the blocks are summed, and device d keeps piece d of the sum",
        _psum_scatter,
        _psum_scatter_ref,
        _combined,
        "reduce-scatter",
        ("psum_scatter", "reduce_scatter"),
        needs_divisible=True,
        typed=TypedCall(
            "psum_scatter",
            1,
            2,
            ("scatter_dimension", "tiled", *GROUP_KEYWORDS),
            "sums, then each device keeps one piece",
        ),
    ),
    Collective(
        "all_to_all",
        "all_to_all: piece j of device i goes to device j",
        "lax.all_to_all(x, 'i', 0, 0, tiled=True)",
        "scatter",
        "each block is cut into one piece per device; piece j of device i goes to device j",
        _all_to_all,
        _all_to_all_ref,
        _exchanged,
        "all-to-all",
        ("all_to_all",),
        needs_divisible=True,
        typed=TypedCall(
            "all_to_all",
            1,
            4,
            ("split_axis", "concat_axis", "tiled", *GROUP_KEYWORDS),
            "each device sends piece k to device k",
        ),
    ),
    Collective(
        "axis_index",
        "axis_index: which device am I?",
        "lax.axis_index('i')",
        "index",
        "each device gets its own position on the axis; nothing is sent",
        _axis_index,
        _axis_index_ref,
        _combined,
        None,
        typed=TypedCall("axis_index", 0, 1, (), "this device's position on the axis", axis_arg=0),
    ),
    Collective(
        "normalise",
        "normalise by the global sum",
        "x / lax.psum(jnp.sum(x), 'i')",
        "normalise",
        "each device sums its block, one psum of those scalars gives the total, and every "
        "block is divided by it",
        _normalise,
        _normalise_ref,
        _combined,
        "all-reduce",
        payload="scalar",
    ),
)
BY_KEY = {c.key: c for c in COLLECTIVES}
HLO_BY_PRIMITIVE = {p: c.hlo for c in COLLECTIVES for p in c.primitives if c.hlo}


def ring(n: int, direction: str) -> list[tuple[int, int]]:
    """Ring shift: 'right' sends device j's block to j+1, 'left' to j-1 (wrapping)."""
    step = 1 if direction == "right" else -1
    return [(j, (j + step) % n) for j in range(n)]


def code_for(c: Collective, groups: Groups, pairs: Pairs) -> str:
    """The code of collective ``c`` as shown to the user, groups or pairs filled in."""
    return c.code.format(groups=f", axis_index_groups={groups}" if groups else "", perm=pairs)


# ---------------------------------------------------------------- the ring model
def ring_model(kind: str, block_bytes: float, groups, n: int, pairs=None) -> tuple[dict, str]:
    """Bytes per device (averaged over the n devices) for one HLO collective of ``kind``
    ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute") whose
    operand on each device is ``block_bytes``, over ``groups`` (lists of devices)."""
    sizes = [len(g) for g in groups] or [n]
    shown = sizes[0] if len(set(sizes)) == 1 else "/".join(map(str, sizes))

    def avg(per_group) -> float:  # per device, averaged over every device in a group
        return sum(g * per_group(g) for g in sizes) / max(1, sum(sizes))

    if kind == "all-reduce":
        per = avg(lambda g: 2 * (g - 1) / g * block_bytes)
        return {"sent": per, "received": per}, (
            f"ring all-reduce: reduce-scatter then all-gather, 2(g-1)/g x block, g={shown}"
        )
    if kind == "all-gather":
        per = avg(lambda g: (g - 1) * block_bytes)
        return {"sent": per, "received": per}, (
            "ring all-gather: each block travels to the g-1 other devices"
        )
    if kind in ("reduce-scatter", "all-to-all"):
        per = avg(lambda g: (g - 1) / g * block_bytes)
        return {"sent": per, "received": per}, "each device keeps 1/g of its block, sends the rest"
    if kind == "collective-permute":
        senders = {s for s, _ in pairs or []}
        receivers = {d for _, d in pairs or []}
        return {
            "sent": block_bytes * len(senders) / n,
            "received": block_bytes * len(receivers) / n,
        }, ("point to point: each pair moves one block (average over devices)")
    raise ValueError(f"no ring model for {kind!r}")
