"""A collective's choices, parsed and checked: the groups (``axis_index_groups``) and the
ppermute pairs as the user typed them, the combinations JAX would reject, and the
Collectives playground's settings (:func:`schema`). Each problem is a :class:`CollectiveError`
whose message says why and what to do. (Running the collective:
:mod:`pmapviz.features.collectives.collectiveruns`.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmapviz.core.base import settings
from pmapviz.core.base.valuetext import quote
from pmapviz.core.expressions.collectivedefs import BY_KEY, COLLECTIVES, Collective, ring


class CollectiveError(ValueError):
    """A choice that makes no sense for this collective; the message says why and what to do."""


VALUE_KINDS = ("arange", "random")  # the link's and the notebook's words (old links keep them)
# what each kind's values are (collectiveruns.make_input): never 0, so a zero is never a copy
VALUE_LABELS = {
    "arange": "1, 2, 3, ...",
    "random": "random",
}
VALUE_HELP = (
    "1, 2, 3, ...: device i holds row i of np.arange(1, n*m + 1).reshape(n, m), n devices of m "
    "elements (starting at 1, not 0: a zero after the collective is never a value that moved). "
    "random: n*m distinct whole numbers drawn from 1 to max(99, n*m)."
)
PERMUTATIONS = ("ring right", "ring left", "custom")


def value_label(kind: str) -> str:
    """What a value kind's numbers are, as the page labels them: 'arange' -> '1, 2, 3, ...'."""
    return VALUE_LABELS.get(kind, kind)


def value_words(kind: str) -> str:
    """'arange' (1, 2, 3, ...), for a message that names the kind as it is typed."""
    return f"'{kind}' ({value_label(kind)})" if value_label(kind) != kind else f"'{kind}'"


# ---------------------------------------------------------------- parsing
def parse_pairs(text: str, n: int) -> list[tuple[int, int]]:
    """'0->1, 1->2', '0 1; 1 2' or '(0, 1), (1, 2)' (as the page's code prints them) ->
    [(0, 1), (1, 2)], checked as a ppermute permutation."""
    raw = (text or "").strip()
    if not raw:
        raise CollectiveError("The permutation is empty: type pairs like 0->1, 1->2.")
    if len(raw) > 2000:
        raise CollectiveError("The permutation is too long: at most one pair per device.")
    if "(" in raw:  # as the page's code prints them: perm=[(0, 1), (1, 0)]
        return check_perm(_tuple_pairs(raw), n)
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


_TUPLE = re.compile(r"\(\s*([0-9]{1,4})\s*,\s*([0-9]{1,4})\s*\)")


def _tuple_pairs(raw: str) -> list[tuple[int, int]]:
    """'(0, 1), (1, 0)', '[(0, 1), (1, 0)]' or 'perm=[(0, 1)]' -> [(0, 1), (1, 0)]: the
    pairs as Python writes them; anything else between them is refused, by name."""
    rest = _TUPLE.sub(" ", re.sub(r"^\s*perm\s*=", "", raw))
    if leftover := re.sub(r"[\s,\[\]]", "", rest):
        raise CollectiveError(
            f"{quote(leftover, 30)} is not a pair: write (source, destination), e.g. (0, 1), or "
            "source->destination, e.g. 0->1."
        )
    return [(int(a), int(b)) for a, b in _TUPLE.findall(raw)]


def check_perm(pairs: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """``pairs`` back when they are a valid ppermute permutation over ``n`` devices; CollectiveError
    otherwise."""
    bad = [p for p in pairs if not (0 <= p[0] < n and 0 <= p[1] < n)]
    if bad:
        raise CollectiveError(
            f"Pair {bad[0][0]}->{bad[0][1]} names a device outside 0 to {n - 1} "
            f"({'there is 1 device' if n == 1 else f'there are {n} devices'})."
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
    """``groups`` back when they split devices 0 to n-1, each in exactly one; CollectiveError
    otherwise."""
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
    return groups


def unequal_groups_warning(key: str, groups) -> str | None:
    """What unequal ``axis_index_groups`` really do (JAX 0.10, CPU), or None if sizes are equal."""
    sizes = [len(g) for g in groups or []]
    if len(set(sizes)) <= 1:
        return None
    text = (
        f"The groups have unequal sizes ({', '.join(map(str, sizes))}). JAX runs this on "
        "CPU, but TPUs reject it; keep groups the same size to be safe."
    )
    if key == "pmean":
        text += (
            f" pmean is wrong here: JAX 0.10 divides every group's sum by the size of "
            f"the first group ({sizes[0]}), silently. The correct mean is shown beside "
            "it."
        )
    return text


def even_groups(n: int, size: int) -> list[list[int]]:
    """Devices 0 to n-1 in consecutive groups of ``size``: [[0, 1], [2, 3], ...]."""
    if size < 1 or n % size:
        raise CollectiveError(f"{n} devices cannot be split into groups of {size}.")
    return [list(range(k, k + size)) for k in range(0, n, size)]


# ---------------------------------------------------------------- checking
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


def pairs_for(c: Collective, n: int, perm) -> list[tuple[int, int]] | None:
    """The checked pairs collective ``c`` runs with (a ring right when none are given), or None
    when it takes no pairs."""
    return check_perm(list(perm or ring(n, "right")), n) if c.takes_pairs else None


# ---------------------------------------------------------------- the playground's choice
@dataclass(frozen=True)
class CollectiveChoice:
    """A playground setting, parsed: the groups and the permutation a collective runs with
    (hashable: tuples, so compiled programs can be cached by it)."""

    groups: tuple[tuple[int, ...], ...] | None
    perm: tuple[tuple[int, int], ...] | None


def playground_choice(
    key: str, n: int, groups_text: str = "", pairs_text: str = "", mode: str = "custom"
) -> CollectiveChoice:
    """Groups (for the reductions) and pairs (for ppermute) from what the user typed; ``mode``
    'ring right' / 'ring left' picks a ring, 'custom' the typed pairs (a ring right when
    empty). Raises CollectiveError with the fix."""
    c = BY_KEY[key]
    groups = parse_groups(groups_text, n) if c.uses_groups else None
    perm = None
    if c.takes_pairs:
        if mode in ("ring right", "ring left"):
            perm = ring(n, mode.split()[1])
        elif (pairs_text or "").strip():
            perm = parse_pairs(pairs_text, n)
        else:
            perm = ring(n, "right")
    return CollectiveChoice(
        tuple(map(tuple, groups)) if groups else None, tuple(map(tuple, perm)) if perm else None
    )


# ---------------------------------------------------------------- the playground's URL state
MAX_ELEMENTS = 64  # elements per device on the playground


def schema(n_devices: int) -> settings.Schema:
    """The Collectives playground's settings: c, n, m, v, g, p, pairs."""
    s = settings
    return s.Schema(
        (
            s.choice_field("c", "Collective", tuple(c.key for c in COLLECTIVES), "psum"),
            s.int_field("n", "Devices", 1, n_devices, n_devices),
            s.int_field(
                "m",
                "Elements per device",
                1,
                MAX_ELEMENTS,
                max(4, n_devices) if n_devices <= MAX_ELEMENTS else MAX_ELEMENTS,
            ),
            s.choice_field("v", "Values", VALUE_KINDS, "arange"),
            s.text_field("g", "axis_index_groups", ""),
            s.choice_field("p", "Permutation", PERMUTATIONS, "ring right"),
            s.text_field("pairs", "Pairs", "0->1, 1->2"),
        )
    )
