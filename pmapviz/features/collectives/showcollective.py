"""The Collectives playground for a notebook: one collective run for real inside ``jax.pmap``,
every device's values before and after.

:func:`collective` runs :func:`pmapviz.features.collectives.collectiveruns.run` (the
playground's own path: the program compiled first, its memory checked against the budget and
held while it runs) and returns a :class:`pmapviz.core.drawing.notebookviews.View`: the
collective's label and what it does, its code, a device grid of "x before" and "y after"
(where each piece came from, or which devices each result combines; numpy's answer where JAX's
differs), ppermute's pairs in words, whether every device matches numpy, the communication it
costs and the XLA op it compiles to, read from the compiled program's HLO. The grid is
:mod:`pmapviz.features.collectives.collectivegrids`', as the page's.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts, deviceset, devicewords
from pmapviz.core.drawing import gridhtml, notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.core.expressions import collectivedefs
from pmapviz.core.expressions.collectivedefs import Collective
from pmapviz.core.xla import hlo
from pmapviz.features.collectives import collectivechoices, collectivegrids, collectiveruns
from pmapviz.features.collectives.collectivechoices import CollectiveError
from pmapviz.features.collectives.collectiveruns import CollectiveOutcome

RINGS = ("ring right", "ring left")  # pairs= may name a ring instead of listing pairs


# ---------------------------------------------------------------- what the caller gave
def collective_for(name: Any) -> Collective:
    """The playground's collective called ``name``; CollectiveError listing every name."""
    c = collectivedefs.BY_KEY.get(name) if isinstance(name, str) else None
    if c is None:
        names = ", ".join(collectivedefs.BY_KEY)
        raise CollectiveError(f"Unknown collective {str(name)[:40]!r}: choose one of {names}.")
    return c


def device_count(devices: Any, count: int) -> int:
    """``devices`` as a count from 1 to ``count`` (this process's devices); None: all."""
    if devices is None:
        return count
    try:
        n = operator.index(devices) if not isinstance(devices, bool) else None
    except TypeError:
        n = None
    if n is None or not 1 <= n <= count:
        raise CollectiveError(
            f"devices={devices!r:.40}: choose 1 to {count} devices (this process has {count})."
        )
    return n


def element_count(c: Collective, elements: Any, n: int) -> int:
    """Elements per device: as given (1 to the playground's ``MAX_ELEMENTS``), or the
    playground's default for ``n`` devices, made a multiple of ``n`` where ``c`` splits
    each block into one piece per device."""
    top = collectivechoices.MAX_ELEMENTS
    if elements is not None:
        if isinstance(elements, bool):
            elements = str(elements)
        return valueparse.parse_int(elements, "Elements per device", 1, top)
    m = max(4, n) if n <= top else top
    return -(-m // n) * n if c.needs_divisible else m


def value_kind(values: Any) -> str:
    """Which values each device starts with: one of ``collectivechoices.VALUE_KINDS``."""
    if values not in collectivechoices.VALUE_KINDS:
        kinds = " or ".join(map(collectivechoices.value_words, collectivechoices.VALUE_KINDS))
        raise CollectiveError(f"values={values!r:.40}: choose one of {kinds}.")
    return values


def groups_for(groups: Any, n: int) -> list[list[int]] | None:
    """``axis_index_groups`` from text ('0 1 | 2 3', '[[0, 1], [2, 3]]') or lists of device
    numbers, checked as the playground checks them; None: all devices in one group."""
    if groups is None or isinstance(groups, str):
        return collectivechoices.parse_groups(groups or "", n)
    try:
        found = [[operator.index(d) for d in g] for g in groups]
    except TypeError as err:
        raise CollectiveError(
            f"groups={groups!r:.60} is not a list of lists of device numbers; write groups "
            "like [[0, 1], [2, 3]] or '0 1 | 2 3'."
        ) from err
    return collectivechoices.check_groups(found, n) if found else None


def pairs_for(c: Collective, pairs: Any, n: int) -> list[tuple[int, int]] | None:
    """ppermute's (source, destination) pairs from text ('0->1, 1->0'), a ring's name
    ('ring right', 'ring left') or a list of pairs, checked; None: a ring right (ppermute)
    or no pairs. CollectiveError for pairs given to a collective that takes none."""
    if pairs is None:
        return None
    if not c.takes_pairs:
        raise CollectiveError(f"pairs apply to ppermute, not to {c.key}: leave pairs out.")
    if isinstance(pairs, str):
        if pairs.strip() in RINGS:
            return collectivedefs.ring(n, pairs.split()[1])
        return collectivechoices.parse_pairs(pairs, n)
    try:
        found = [(operator.index(s), operator.index(d)) for s, d in pairs]
    except (TypeError, ValueError) as err:
        raise CollectiveError(
            f"pairs={pairs!r:.60} is not a list of (source, destination) pairs; write "
            "[(0, 1), (1, 0)] or '0->1, 1->0'."
        ) from err
    if not found:
        raise CollectiveError("The permutation is empty: type pairs like 0->1, 1->2.")
    return collectivechoices.check_perm(found, n)


# ---------------------------------------------------------------- running it
@functools.lru_cache(maxsize=64)
def _compiled_in(device_set: str, key: str, n: int, groups, perm) -> Callable:
    return collectiveruns.compile_collective(key, n, groups, perm)


def program_cache(key: str, n: int, groups, perm) -> Callable:
    """The collective's pmap for the current device set, built once per setting (what the
    page's ``st.cache_resource`` does): :func:`collectiveruns.run`'s ``program_cache``."""
    return _compiled_in(deviceset.current(), key, n, groups, perm)


def compiled_ops(key: str, n: int, m: int, groups, perm) -> list[str]:
    """The collective ops XLA compiled the run's program to, read from its HLO text
    (``compiled.as_text()``): e.g. ['all-reduce']."""
    frozen = tuple(tuple(g) for g in groups) if groups else None
    fn = program_cache(key, n, frozen, tuple(perm or ()))
    text = collectiveruns.compiled_for(fn, n, m).as_text()
    return sorted({op.kind for op in hlo.parse_hlo(text).collectives})


def collective(
    name: str,
    devices: int | None = None,
    elements: int | None = None,
    groups: str | Sequence[Sequence[int]] | None = None,
    pairs: str | Sequence[tuple[int, int]] | None = None,
    values: str = "arange",
) -> View:
    """Run collective ``name`` (``"psum"``, ``"all_gather"``, ``"ppermute"``, ...) inside
    ``jax.pmap`` on ``devices`` devices (default: all of this process's) with ``elements``
    numbers each (default as the playground: at least 4, one per device), and show every
    device's values before and after, read from the arrays' shards. ``groups``: the
    reductions' ``axis_index_groups`` ('0 1 | 2 3' or [[0, 1], [2, 3]]); ``pairs``: ppermute's
    pairs ('0->1, 1->0', [(0, 1), (1, 0)] or 'ring left'; default a ring right); ``values``:
    'arange' (1, 2, 3, ...: device i holds row i of ``np.arange(1, n*m + 1).reshape(n, m)``,
    never 0, so a zero after the collective is never a value that moved) or 'random' (distinct
    whole numbers from 1 to max(99, n*m)). Raises ValueError
    (``collectivechoices.CollectiveError``) with the playground's message for a name, count,
    group or pair that is not one."""
    notes = notebookviews.ready()
    c = collective_for(name)
    n = device_count(devices, devicefacts.facts().local_count)
    m = element_count(c, elements, n)
    kind = value_kind(values)
    group_list = groups_for(groups, n)
    perm = pairs_for(c, pairs, n)
    out = collectiveruns.run(
        c.key, n, m, kind, groups=group_list, perm=perm, program_cache=program_cache
    )
    labels = [str(d) for d in devicefacts.local_devices_for_work()[:n]]
    ops = compiled_ops(c.key, n, m, out.groups, out.perm)
    return view(out, m, kind, labels, ops, notes)


# ---------------------------------------------------------------- words and data
def pairs_words(out: CollectiveOutcome) -> str:
    """ppermute's pairs in words, and which devices receive zeros; '' for other collectives."""
    if not out.collective.takes_pairs or out.perm is None:
        return ""
    moves = "; ".join(f"device {s} sends its block to device {d}" for s, d in out.perm)
    idle = sorted(set(range(out.n)) - {d for _, d in out.perm})
    zeros = f" Device(s) {idle} are no pair's destination, so they receive zeros." if idle else ""
    return f"Pairs {', '.join(f'{s}->{d}' for s, d in out.perm)}: {moves}.{zeros}"


def numpy_words(out: CollectiveOutcome) -> str:
    """Whether every device's result is numpy's answer, or which devices differ."""
    differs = collectiveruns.differs_from_numpy(out)
    if not differs:
        return f"Matches numpy's answer on every one of the {out.n} devices."
    return f"Differs from numpy's answer on device(s) {differs} (see 'numpy expects')."


def ops_words(c: Collective, ops: list[str]) -> str:
    """The XLA op the collective compiles to, as read from the compiled HLO."""
    if ops:
        return f"XLA compiles it to: {', '.join(ops)} (read from the compiled HLO)."
    return "XLA compiles it to no collective op: nothing is sent between devices."


def cost_words(out: CollectiveOutcome, m: int) -> str:
    """What the run costs in communication per device, under the ring model."""
    sent, received = out.cost["sent"], out.cost["received"]
    return (
        f"Communication: each device sends about {sent:,.0f} bytes and receives about "
        f"{received:,.0f} bytes for {out.n} devices x {m} float32 elements. Model: {out.model}. "
        + devicewords.say(devicefacts.facts(), "wire")
    )


def call_code(out: CollectiveOutcome, m: int) -> str:
    """The call as the page shows it: ``y = jax.pmap(lambda x: ..., axis_name='i')(x)``."""
    return f"y = jax.pmap(lambda x: {out.code}, axis_name='i')(x)   # x: ({out.n}, {m})"


def _values(a) -> list:
    return np.atleast_1d(np.asarray(a)).tolist()


def data_rows(out: CollectiveOutcome, labels: list[str]) -> list[dict[str, Any]]:
    """One plain row per device (``to_frame()``): its name, values before and after, numpy's
    answer where it differs, and where each piece came from or which devices it combines."""
    show, differs = collectiveruns.show_values, collectiveruns.differs_from_numpy(out)
    where = collectivegrids.group_of(out)
    found = []
    for d in range(out.n):
        row = {
            "device": labels[d],
            "position": d,
            "before": show(out.before[d]),
            "after": show(out.after[d]),
        }
        if differs:
            row["numpy expects"] = show(out.expected[d])
        if collectivegrids.shows_sources(out.collective):
            row["came from"] = list(out.sources[d])
        elif collectivegrids.combines(out.collective):
            row["combines"] = list(where[d])
        found.append(row)
    return found


def view_data(out: CollectiveOutcome, m: int, kind: str, labels: list[str], ops: list[str]) -> dict:
    """The view's data: the setting, every device's values, numpy's verdict, the rows."""
    differs = collectiveruns.differs_from_numpy(out)
    return {
        "name": out.collective.key,
        "label": out.collective.label,
        "code": out.code,
        "devices": out.n,
        "elements": m,
        "values": kind,
        "groups": [list(g) for g in out.groups] if out.groups else None,
        "pairs": [list(p) for p in out.perm] if out.perm else None,
        "labels": list(labels),
        "before": [_values(b) for b in out.before],
        "after": [_values(a) for a in out.after],
        "expected": None if out.expected is None else [_values(e) for e in out.expected],
        "sources": [list(s) for s in out.sources],
        "matches_numpy": not differs,
        "differs": differs,
        "hlo": out.collective.hlo,
        "compiled_ops": list(ops),
        "cost": dict(out.cost),
        "warnings": list(out.warnings),
        "rows": data_rows(out, labels),
    }


def view_text(out: CollectiveOutcome, m: int, labels: list[str], ops: list[str]) -> str:
    """The terminal form: what it does, the call, one line per device, the verdict."""
    show, differs = collectiveruns.show_values, collectiveruns.differs_from_numpy(out)
    lines = [out.collective.explain, call_code(out, m)]
    for row in data_rows(out, labels):
        d = row["position"]
        line = f"device {d} ({row['device']}): before [{row['before']}] -> after [{row['after']}]"
        if "came from" in row:
            came = ", ".join("-" if s is None else str(s) for s in row["came from"])
            line += f"; came from [{came}]"
        if d in differs:
            line += f"; numpy expects [{show(out.expected[d])}]"
        lines.append(line)
    lines += [f"warning: {w}" for w in out.warnings]
    if words := pairs_words(out):
        lines.append(words)
    lines += [numpy_words(out), ops_words(out.collective, ops)]
    return "\n".join(lines)


def _box(text: str, fill: str, edge: str, role: str) -> str:
    return (
        f"<div role='{role}' style='background:{fill};border-left:4px solid {edge};"
        f"padding:6px 10px;margin:6px 0'>{notebookviews.escape(text)}</div>"
    )


def view_html(out: CollectiveOutcome, m: int, labels: list[str], ops: list[str], notes) -> str:
    """The view's body: notes, what it does, the call, the before/after grid, warnings, the
    pairs in words, numpy's verdict, the communication and the XLA op."""
    para = notebookviews.paragraph
    parts = [para(note) for note in notes]
    parts.append(para(out.collective.explain))
    parts.append(notebookviews.code_block(call_code(out, m), "the collective's call"))
    parts.append(
        gridhtml.block_grid(collectivegrids.rows(out, labels), collectiveruns.picture_label(out))
    )
    parts += [_box(w, "#fff8c5", "#9a6700", "alert") for w in out.warnings]
    if words := pairs_words(out):
        parts.append(para(words))
    ok = not collectiveruns.differs_from_numpy(out)
    fill, edge = ("#dafbe1", "#1a7f37") if ok else ("#ffebe9", "#cf222e")
    parts.append(_box(numpy_words(out), fill, edge, "status"))
    parts.append(para(cost_words(out, m)))
    parts.append(para(ops_words(out.collective, ops)))
    return "".join(parts)


def view(
    out: CollectiveOutcome,
    m: int,
    kind: str,
    labels: list[str],
    ops: list[str],
    notes: Sequence[str] = (),
) -> View:
    """The view of a run ``out`` (``m`` elements per device of ``kind`` values) on devices
    named ``labels``, compiled to ``ops``; ``notes``: what setting up the devices said."""
    return View(
        title=f"{out.collective.label} on {out.n} device(s)",
        body=view_html(out, m, labels, ops, notes),
        text=view_text(out, m, labels, ops),
        data=view_data(out, m, kind, labels, ops),
        source=out,
    )
