"""Collectives inside pmap: run one for real, read every device's value before and after, and
say what it costs in communication. (The choices it runs with, parsed and checked:
:mod:`pmapviz.features.collectives.collectivechoices`.)

Each device i starts with a block of ``m`` numbers, all non-zero and distinct. The collective
runs under ``jax.pmap(..., axis_name="i")``; before/after values come from the arrays'
``addressable_shards``. Where a device's result is a copy of another device's block
(all_gather, ppermute, all_to_all), the source comes from the collective's definition (its
pairs, its pieces) and is then checked against the real values: a piece whose values do not
match is reported (``CollectiveOutcome.warnings``), never shown as a source.

``axis_index_groups`` of unequal sizes are allowed and run: on JAX 0.10 CPU ``psum`` handles them,
but ``pmean`` silently divides every group by the FIRST group's size, and TPUs reject them.
``CollectiveOutcome.expected`` (numpy) stands beside the real result so the difference shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.core.budgets import compiledmemory, memoryestimates, memorymodel, memorypool
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions import collectivedefs
from pmapviz.core.expressions.collectivedefs import BY_KEY, Collective, code_for
from pmapviz.core.planning.arrayshards import shards_of
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.features.collectives.collectivechoices import (
    CollectiveError,
    check,
    pairs_for,
    unequal_groups_warning,
)


# ---------------------------------------------------------------- running
@dataclass(frozen=True)
class CollectiveOutcome:
    """One collective run for real: every device's values before and after, where each piece came
    from, and what it cost."""

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
    expected: list[np.ndarray] | None = None  # per device: what numpy says it should hold
    warnings: tuple[str, ...] = ()  # e.g. pmean over unequal groups, a source that failed


def per_device(c: Collective, groups, perm) -> Callable:
    """The per-device function that runs collective ``c`` over the axis, with its groups or
    pairs."""
    return lambda x: c.call(x, collectivedefs.AXIS, groups, perm)


def make_input(n: int, m: int, kind: str = "arange", seed: int = 0) -> np.ndarray:
    """(n, m) float32: device i's block is row i. Every value non-zero and distinct (so a zero
    is never mistaken for a copy, and a copy's source is unique): 1, 2, ... or a random draw
    without repeats from 1 to max(99, n*m)."""
    if kind == "random":
        pool = np.arange(1, max(99, n * m) + 1)
        vals = np.random.default_rng(seed).choice(pool, size=n * m, replace=False)
        return vals.astype(np.float32).reshape(n, m)
    return np.arange(1, n * m + 1, dtype=np.float32).reshape(n, m)


def run(
    key: str,
    n: int,
    m: int,
    kind: str = "arange",
    groups=None,
    perm=None,
    program_cache: Callable[..., Callable] | None = None,
    on_wait=None,
) -> CollectiveOutcome:
    """Run collective ``key`` on n devices with blocks of m elements; all values from JAX.
    The program is compiled first, from the input's shape alone; then what it will hold
    (:func:`run_need`, from its ``memory_analysis()``) is refused when it could never fit
    (BudgetError, naming the largest block that fits) or held in the server's memory budget,
    waiting in the queue (``on_wait``) while other actions hold it all."""

    c = BY_KEY[key]
    if n < 1 or n > devicefacts.facts().local_count:
        raise CollectiveError(f"Choose 1 to {devicefacts.facts().local_count} devices.")
    if m < 1:
        raise CollectiveError("Each device needs at least one element.")
    check(c, n, m, groups)
    perm = pairs_for(c, n, perm)
    fn = (program_cache or compile_collective)(key, n, _freeze(groups), tuple(perm or ()))
    executable = compiled_for(fn, n, m)  # before any input exists: what it will hold
    need = run_need(executable, n, m)
    refuse_unfit(c, n, m, need)
    with memorypool.reserve(need, f"a {c.key} on {n} devices", on_wait):
        return _run(c, n, m, kind, groups, perm, executable)


def compiled_for(fn: Callable, n: int, m: int):
    """``fn`` (a collective's pmap) compiled for an (n, m) float32 input from its shape alone
    (``jax.ShapeDtypeStruct``): no input is allocated. JAX keeps the compilation, so a later
    call of ``fn`` on a real input of that shape compiles nothing again."""
    import jax
    import jax.numpy as jnp

    arg = jax.ShapeDtypeStruct((n, m), jnp.float32, sharding=pmap_sharding(2, 0, n))
    return fn.lower(arg).compile()


def run_need(executable, n: int, m: int) -> memorymodel.Need:
    """What a run of the compiled collective holds at its peak (:func:`run`; the Compiled
    page's trace, :func:`pmapviz.features.compiled.tracecapture.collective_timeline`): the larger of
    the formula (``memoryestimates.collective_bytes``: input and an all_gather-sized output) and the
    program's own ``memory_analysis()`` (``compiledmemory.compiled_need``). That analysis is per
    device (see ``compiledmemory.Footprint``): on the devices, n times each device's block
    (arguments), its result (outputs: n blocks for all_gather, one for psum, ppermute and
    all_to_all) and its scratch (temporaries: all_to_all's pieces); on the host, the (n, m) input
    made there and two copies of every device's result (read back, and numpy's
    reference)."""
    fp = compiledmemory.footprint(executable)
    host = 0 if fp is None else n * (fp.arguments + 2 * fp.outputs)
    compiled = compiledmemory.compiled_need(
        [(executable, n)], host, memoryestimates.COLLECTIVE_BYTES
    )
    return memorymodel.larger(memoryestimates.collective_bytes(n, m), compiled)


def refuse_unfit(
    c: Collective,
    n: int,
    m: int,
    need: memorymodel.Need,
    budget: int | memorymodel.Budget | None = None,
) -> None:
    """BudgetError, naming the largest block that fits, when ``need`` (blocks of ``m``
    elements) could never fit the memory budget. Larger and smaller blocks are ``need``
    scaled: a collective's buffers grow with its block, its runtime part does not."""
    b = memorypool.budget() if budget is None else memorymodel.Budget.of(budget)
    if b.fits(need):
        return
    step = n if c.needs_divisible else 1
    fit = memorymodel.largest_fitting(
        lambda size: memorymodel.scaled(need, size / m, memoryestimates.COLLECTIVE_BYTES),
        b,
        step,
        m,
        step,
    )
    fits = (
        f"The largest block that fits is {fit:,} element(s) per device."
        if fit
        else f"Not even blocks of {step} element(s) fit."
    )
    memorymodel.refuse_over(
        need, b, f"Running {c.key} on {n} devices with blocks of {m:,} elements", fits
    )


def _run(c, n: int, m: int, kind: str, groups, perm, executable) -> CollectiveOutcome:
    import jax

    key = c.key
    x = make_input(n, m, kind)
    placed = jax.device_put(x, pmap_sharding(2, 0, n))
    out = executable(placed)
    out.block_until_ready()
    before = [s.data.reshape(-1) for s in shards_of(placed)]
    after = [s.data[0] for s in shards_of(out)]  # drop pmap's leading device axis (size 1)
    cost, model = c.comm_bytes(n, m, x.itemsize, groups, perm)
    sources, warnings = checked_sources(c, n, m, perm, before, after)
    expected = c.reference(x, groups, perm)
    note = unequal_groups_warning(key, groups)
    if note:
        warnings.insert(0, note)
    return CollectiveOutcome(
        c,
        code_for(c, groups, perm),
        n,
        before,
        after,
        sources,
        groups,
        perm,
        cost,
        model,
        expected,
        tuple(warnings),
    )


def picture_label(out: CollectiveOutcome) -> str:
    """What a before/after grid of ``out`` shows, for a screen reader (``aria-label``)."""

    def first(v) -> str:
        return f"{float(np.asarray(v).reshape(-1)[0]):.3g}"

    before = ", ".join(first(b) for b in out.before[:8])
    after = ", ".join(first(a) for a in out.after[:8])
    more = " ..." if out.n > 8 else ""
    return f"{out.collective.label} on {out.n} devices: before {before}{more}; after {after}{more}"


def _freeze(groups):
    return tuple(tuple(g) for g in groups) if groups else None


def compile_collective(key: str, n: int, groups, perm) -> Callable:
    """The compiled pmap for a collective (pages cache this with st.cache_resource)."""
    import jax

    groups_list = [list(g) for g in groups] if groups else None
    return jax.pmap(
        per_device(BY_KEY[key], groups_list, list(perm) or None),
        axis_name=collectivedefs.AXIS,
        devices=devicefacts.local_devices_for_work()[:n],
    )


def checked_sources(c: Collective, n: int, m: int, perm, before, after):
    """Sources from the definition, each checked against the real values. Returns the
    sources (a device, or None) and a warning for every piece whose values do not match."""
    piece = m // n if c.needs_divisible else m  # all_to_all copies pieces, gathers blocks
    sources: list[list[int | None]] = []
    warnings: list[str] = []
    for d, defined in enumerate(c.sources(n, perm)):
        flat = np.asarray(after[d]).reshape(-1)
        row: list[int | None] = []
        for k, where in enumerate(defined):
            if where is None:
                row.append(None)
                if c.takes_pairs and flat.any():
                    warnings.append(f"Device {d} receives nothing, yet holds non-zero values.")
                continue
            src, j = where
            got, want = flat[k * piece : (k + 1) * piece], before[src][j * piece : (j + 1) * piece]
            if np.array_equal(got, want):
                row.append(src)
            else:
                row.append(None)
                warnings.append(
                    f"Device {d}, piece {k}: expected a copy of device {src}'s "
                    "values, but the values differ."
                )
        sources.append(row)
    return sources, warnings


def show_values(a, limit: int = 16) -> str:
    """A device's values, short: the first ``limit`` numbers."""
    flat = np.asarray(a).reshape(-1)
    shown = ", ".join(f"{v:.3g}" for v in flat[:limit])
    return shown + (", ..." if flat.size > limit else "")


def differs_from_numpy(out: CollectiveOutcome) -> list[int]:
    """Devices whose real result is not what numpy computes (e.g. pmean over unequal groups)."""
    if out.expected is None:
        return []
    return [
        d
        for d, (got, want) in enumerate(zip(out.after, out.expected, strict=True))
        if not np.allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6
        )
    ]
