"""Collectives inside pmap: run one for real, read every device's value before and after, and
say what it costs in communication.

Each device i starts with a block of ``m`` numbers. The collective runs under
``jax.pmap(..., axis_name="i")``; before/after values come from the arrays'
``addressable_shards``. Where a device's result is a copy of another device's block
(all_gather, ppermute, all_to_all), the source is found by matching the real values against
the inputs, not assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.settings import quote

AXIS = "i"


class CollectiveError(ValueError):
    """A choice that makes no sense for this collective; the message says why and what to do."""


@dataclass(frozen=True)
class Collective:
    key: str
    label: str
    code: str  # shown to the user; {groups}, {perm} filled in
    kind: str  # "reduce", "gather", "permute", "scatter", "index", "normalise"
    uses_groups: bool = False
    needs_divisible: bool = False  # m must be a multiple of the group size


COLLECTIVES: tuple[Collective, ...] = (
    Collective("psum", "psum: sum over devices", "lax.psum(x, 'i'{groups})", "reduce", True),
    Collective("pmean", "pmean: mean over devices", "lax.pmean(x, 'i'{groups})", "reduce", True),
    Collective("pmax", "pmax: maximum over devices", "lax.pmax(x, 'i'{groups})", "reduce", True),
    Collective("pmin", "pmin: minimum over devices", "lax.pmin(x, 'i'{groups})", "reduce", True),
    Collective("all_gather", "all_gather: every device gets every block",
               "lax.all_gather(x, 'i')", "gather"),
    Collective("all_gather_tiled", "all_gather(tiled=True): concatenated",
               "lax.all_gather(x, 'i', tiled=True)", "gather"),
    Collective("ppermute", "ppermute: send blocks along pairs", "lax.ppermute(x, 'i', perm={perm})",
               "permute"),
    Collective("psum_scatter", "psum_scatter: sum, then each keeps one piece",
               "lax.psum_scatter(x, 'i', tiled=True)", "scatter", needs_divisible=True),
    Collective("all_to_all", "all_to_all: piece j of device i goes to device j",
               "lax.all_to_all(x, 'i', 0, 0, tiled=True)", "scatter", needs_divisible=True),
    Collective("axis_index", "axis_index: which device am I?", "lax.axis_index('i')", "index"),
    Collective("normalise", "normalise by the global sum", "x / lax.psum(jnp.sum(x), 'i')",
               "normalise"),
)  # fmt: skip
BY_KEY = {c.key: c for c in COLLECTIVES}
VALUE_KINDS = ("arange", "random")
PERMUTATIONS = ("ring right", "ring left", "custom")


# ---------------------------------------------------------------- parsing choices
def ring(n: int, direction: str) -> list[tuple[int, int]]:
    """Ring shift: 'right' sends device j's block to j+1, 'left' to j-1 (wrapping)."""
    step = 1 if direction == "right" else -1
    return [(j, (j + step) % n) for j in range(n)]


def parse_pairs(text: str, n: int) -> list[tuple[int, int]]:
    """'0->1, 1->2' or '0 1; 1 2' -> [(0, 1), (1, 2)], checked as a ppermute permutation."""
    raw = (text or "").strip()
    if not raw:
        raise CollectiveError("The permutation is empty: type pairs like 0->1, 1->2.")
    if len(raw) > 2000:
        raise CollectiveError("The permutation is too long: at most one pair per device.")
    pairs = []
    for chunk in re.split(r"[;,]", raw):
        if not chunk.strip():
            continue
        nums = re.split(r"\s*(?:->|→|:|\s)\s*", chunk.strip())
        if len(nums) != 2 or not all(re.fullmatch(r"[0-9]{1,4}", v) for v in nums):
            raise CollectiveError(
                f"{quote(chunk.strip(), 30)} is not a pair: write source->destination, e.g. 0->1."
            )
        pairs.append((int(nums[0]), int(nums[1])))
    return check_perm(pairs, n)


def check_perm(pairs: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    bad = [p for p in pairs if not (0 <= p[0] < n and 0 <= p[1] < n)]
    if bad:
        raise CollectiveError(
            f"Pair {bad[0][0]}->{bad[0][1]} names a device outside 0 to {n - 1} "
            f"(there are {n} devices)."
        )
    for end, name in ((0, "source"), (1, "destination")):
        seen: dict[int, int] = {}
        for p in pairs:
            if p[end] in seen:
                raise CollectiveError(
                    f"Device {p[end]} is the {name} of two pairs; ppermute needs each device "
                    f"to send at most once and receive at most once. Remove one of them."
                )
            seen[p[end]] = 1
    return pairs


def parse_groups(text: str, n: int) -> list[list[int]] | None:
    """'' -> None (all devices); '0 1 | 2 3' or '[[0,1],[2,3]]' -> groups, checked."""
    raw = (text or "").strip()
    if not raw or raw.lower() == "none":
        return None
    if len(raw) > 2000:
        raise CollectiveError("The groups text is too long.")
    chunks = re.findall(r"\[([^\[\]]*)\]", raw) if "[" in raw else raw.split("|")
    groups = []
    for c in chunks:
        vals = [v for v in re.split(r"[\s,]+", c.strip()) if v]
        if not vals or not all(re.fullmatch(r"[0-9]{1,4}", v) for v in vals):
            raise CollectiveError(
                f"Group {quote(c.strip(), 30)} is not a list of device numbers; write groups like "
                "0 1 | 2 3."
            )
        groups.append([int(v) for v in vals])
    return check_groups(groups, n)


def check_groups(groups: list[list[int]], n: int) -> list[list[int]]:
    flat = [d for g in groups for d in g]
    if any(not 0 <= d < n for d in flat):
        raise CollectiveError(f"Groups name a device outside 0 to {n - 1}.")
    if sorted(flat) != list(range(n)):
        missing = sorted(set(range(n)) - set(flat))
        twice = sorted({d for d in flat if flat.count(d) > 1})
        detail = []
        if missing:
            detail.append(f"missing {missing}")
        if twice:
            detail.append(f"listed twice {twice}")
        raise CollectiveError(
            "Groups must split the devices 0 to "
            f"{n - 1} so that each is in exactly one group ({'; '.join(detail)})."
        )
    if len({len(g) for g in groups}) > 1:
        raise CollectiveError(
            "All groups must have the same size (JAX requires it): "
            + ", ".join(str(len(g)) for g in groups)
            + "."
        )
    return groups


def even_groups(n: int, size: int) -> list[list[int]]:
    if size < 1 or n % size:
        raise CollectiveError(f"{n} devices cannot be split into groups of {size}.")
    return [list(range(k, k + size)) for k in range(0, n, size)]


# ---------------------------------------------------------------- running
@dataclass(frozen=True)
class Outcome:
    collective: Collective
    code: str
    n: int
    before: list[np.ndarray]  # per device, from the input's shards
    after: list[np.ndarray]  # per device, from the output's shards
    sources: list[list[int | None]]  # per device, per output piece: which device it came from
    groups: list[list[int]] | None
    perm: list[tuple[int, int]] | None
    cost: dict[str, float]  # bytes sent / received per device, and the model
    model: str


def build(c: Collective, groups, perm) -> Callable:
    import jax.numpy as jnp
    from jax import lax

    kw = {"axis_index_groups": groups} if groups else {}
    return {
        "psum": lambda x: lax.psum(x, AXIS, **kw),
        "pmean": lambda x: lax.pmean(x, AXIS, **kw),
        "pmax": lambda x: lax.pmax(x, AXIS, **kw),
        "pmin": lambda x: lax.pmin(x, AXIS, **kw),
        "all_gather": lambda x: lax.all_gather(x, AXIS),
        "all_gather_tiled": lambda x: lax.all_gather(x, AXIS, tiled=True),
        "ppermute": lambda x: lax.ppermute(x, AXIS, perm=perm),
        "psum_scatter": lambda x: lax.psum_scatter(x, AXIS, tiled=True),
        "all_to_all": lambda x: lax.all_to_all(x, AXIS, 0, 0, tiled=True),
        "axis_index": lambda x: lax.axis_index(AXIS),
        "normalise": lambda x: x / lax.psum(jnp.sum(x), AXIS),
    }[c.key]


def code_for(c: Collective, groups, perm) -> str:
    return c.code.format(
        groups=f", axis_index_groups={groups}" if groups else "",
        perm=perm,
    )


def check(c: Collective, n: int, m: int, groups) -> None:
    """Raise CollectiveError for combinations JAX would reject (or that mean nothing)."""
    if groups and not c.uses_groups:
        raise CollectiveError(f"axis_index_groups applies to the reductions, not to {c.key}.")
    if c.needs_divisible and m % n:
        raise CollectiveError(
            f"{c.key} splits each device's {m} element(s) into {n} pieces, one per device, so "
            f"the block size must be a multiple of {n}. Use {n * max(1, round(m / n))} elements "
            "per device."
        )


def comm_cost(c: Collective, n: int, m: int, itemsize: int, groups, perm) -> tuple[dict, str]:
    """Bytes each device sends and receives, under a ring (bandwidth-optimal) model."""
    b = m * itemsize
    g = len(groups[0]) if groups else n
    if c.kind in ("reduce", "normalise"):
        payload = b if c.kind == "reduce" else itemsize
        per = 2 * (g - 1) / g * payload
        model = f"ring all-reduce: reduce-scatter then all-gather, 2(g-1)/g x block, g={g}"
        return {"sent": per, "received": per}, model
    if c.kind == "gather":
        return {"sent": (n - 1) * b, "received": (n - 1) * b}, (
            "ring all-gather: each block travels to the n-1 other devices"
        )
    if c.kind == "scatter":
        per = (n - 1) / n * b
        return {"sent": per, "received": per}, "each device keeps 1/n of its block, sends the rest"
    if c.kind == "permute":
        senders = {s for s, _ in perm or []}
        receivers = {d for _, d in perm or []}
        return {"sent": b * len(senders) / n, "received": b * len(receivers) / n}, (
            "point to point: each pair moves one block (average over devices)"
        )
    return {"sent": 0.0, "received": 0.0}, "no communication: each device knows its own index"


def make_input(n: int, m: int, kind: str = "arange", seed: int = 0) -> np.ndarray:
    """(n, m) float32: device i's block is row i. Distinct values, so sources can be traced."""
    if kind == "random":
        return np.random.default_rng(seed).integers(0, 100, size=(n, m)).astype(np.float32)
    return np.arange(n * m, dtype=np.float32).reshape(n, m)


def run(
    key: str, n: int, m: int, kind: str = "arange", groups=None, perm=None,
    program_cache: Callable[..., Callable] | None = None,
) -> Outcome:  # fmt: skip
    """Run collective ``key`` on n devices with blocks of m elements; all values from JAX."""
    import jax

    from pmapviz.layout import pmap_sharding
    from pmapviz.programs import shards_of

    c = BY_KEY[key]
    if n < 1 or n > jax.local_device_count():
        raise CollectiveError(f"Choose 1 to {jax.local_device_count()} devices.")
    if m < 1:
        raise CollectiveError("Each device needs at least one element.")
    check(c, n, m, groups)
    if c.key == "ppermute":
        perm = check_perm(list(perm or ring(n, "right")), n)
    x = make_input(n, m, kind)
    placed = jax.device_put(x, pmap_sharding(2, 0, n))
    fn = (program_cache or compile_collective)(key, n, _freeze(groups), tuple(perm or ()))
    out = fn(placed)
    out.block_until_ready()
    before = [s.data.reshape(-1) for s in shards_of(placed)]
    after = [s.data[0] for s in shards_of(out)]  # drop pmap's leading device axis (size 1)
    cost, model = comm_cost(c, n, m, x.itemsize, groups, perm)
    piece = m // n if c.kind == "scatter" else m
    sources = [_sources(a, before, piece) for a in after]
    return Outcome(c, code_for(c, groups, perm), n, before, after, sources, groups, perm, cost,
                   model)  # fmt: skip


def _freeze(groups):
    return tuple(tuple(g) for g in groups) if groups else None


def compile_collective(key: str, n: int, groups, perm) -> Callable:
    """The compiled pmap for a collective (pages cache this with st.cache_resource)."""
    import jax

    groups_list = [list(g) for g in groups] if groups else None
    return jax.pmap(build(BY_KEY[key], groups_list, list(perm) or None), axis_name=AXIS,
                    devices=jax.local_devices()[:n])  # fmt: skip


def _sources(after: np.ndarray, before: list[np.ndarray], piece: int) -> list[int | None]:
    """For each length-``piece`` part of a device's result, the device whose input holds exactly
    those values (at an aligned offset). None when no input does: a sum, or the zeros that
    ppermute gives a device that receives nothing. Inputs are distinct, so a match is unique."""
    flat = np.asarray(after).reshape(-1)
    if piece < 1 or flat.size % piece:
        return [None] * max(1, flat.size)
    out = []
    for k in range(0, flat.size, piece):
        chunk = flat[k : k + piece]
        match = None
        for d, b in enumerate(before):
            if any(np.array_equal(b[o : o + piece], chunk) for o in range(0, b.size, piece)):
                match = d
                break
        out.append(match)
    return out


def numpy_reference(key: str, x: np.ndarray, groups=None, perm=None) -> list[np.ndarray]:
    """What every device should hold afterwards, computed with numpy alone (for tests)."""
    n, m = x.shape
    gs = groups or [list(range(n))]
    group_of = {d: g for g in gs for d in g}
    red = {"psum": np.sum, "pmean": np.mean, "pmax": np.max, "pmin": np.min}
    if key in red:
        return [red[key](x[group_of[d]], axis=0) for d in range(n)]
    if key == "all_gather":
        return [x.copy() for _ in range(n)]
    if key == "all_gather_tiled":
        return [x.reshape(-1) for _ in range(n)]
    if key == "ppermute":
        out = [np.zeros(m, x.dtype) for _ in range(n)]
        for s, d in perm:
            out[d] = x[s]
        return out
    if key == "psum_scatter":
        total = x.sum(axis=0)
        return [total.reshape(n, m // n)[d] for d in range(n)]
    if key == "all_to_all":
        pieces = x.reshape(n, n, m // n)  # [source, destination piece, ...]
        return [pieces[:, d, :].reshape(-1) for d in range(n)]
    if key == "axis_index":
        return [np.array(d) for d in range(n)]
    if key == "normalise":
        return [x[d] / x.sum() for d in range(n)]
    raise KeyError(key)
