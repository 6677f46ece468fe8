"""The exercises judged by a live run: the attempt runs for real on this server's devices, in
its share of the memory budget, and every device's block is read back from the output's shards.

* :func:`dot_pairs`: your own f under pmap (the Live outputs page's run, checked against
  ``jit(vmap(f))``), its output reshaped, against ``jax.jit(jax.vmap(jnp.dot))`` of the same
  pairs;
* :func:`ring_shift`: a collective from the Collectives playground, run, against the target
  "each device holds its left neighbour's x".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import first_line
from pmapviz.core.budgets.memorymodel import BudgetError
from pmapviz.core.expressions.collectivedefs import BY_KEY
from pmapviz.core.planning import planning
from pmapviz.core.running import pmapcompile, pmaprun
from pmapviz.features.collectives import collectivechoices, collectiveruns
from pmapviz.features.exercises import verdicts
from pmapviz.features.exercises.verdicts import SOLVED, Judgement

PAIRS = 4  # pairs of 3-vectors on each device in the dot exercise
BUSY = (queues.WaitTimeout, queues.Cancelled, BudgetError)  # the server's memory, not the attempt


def dot_pairs(values: Mapping[str, Any], n: int) -> Judgement:
    """Your own f(x, y) (``values["body"]``, checked by the expression parser) under
    ``jax.pmap`` on x, y of shape (n, 4, 3): one dot product per pair, its output reshaped to
    (4n,) equal to ``jax.jit(jax.vmap(jnp.dot))`` of the (4n, 3) pairs."""
    program = values["body"]
    shape = (n, PAIRS, 3)
    p = planning.plan(program, [shape, shape], in_axes=(0, 0), axis_name="i", n_devices=n)
    if not p.ok:
        return verdicts.plan_verdict(program, p)
    want_shape = (n, PAIRS)
    if pmaprun.not_runnable(p) or tuple(p.out_shapes) != want_shape:
        return verdicts.wrong(
            verdicts.WRONG,
            "one number per pair",
            f"pmap takes it, and its output is {p.out_shapes}: one number per pair is "
            f"{verdicts.shape_words(want_shape)}, {PAIRS} pairs on each of the {n} devices.",
        )
    try:
        out, want, live = _run_beside_vmap_dot(program, p)
    except BUSY as err:
        return verdicts.not_checked(f"Not checked now: {first_line(str(err))}")
    if not live.passed:
        return verdicts.wrong(verdicts.WRONG, "pmap differs from jit(vmap(f))", "")
    if not np.allclose(out.reshape(-1), want, rtol=1e-5, atol=1e-3):
        worst = float(np.max(np.abs(out.reshape(-1) - want)))
        return verdicts.wrong(
            verdicts.WRONG,
            "numbers differ from jit(vmap(jnp.dot))",
            f"pmap's output has the right shape, and differs from jax.jit(jax.vmap(jnp.dot)) "
            f"of the same pairs by up to {worst:.3g}.",
        )
    return SOLVED


def _run_beside_vmap_dot(program, p) -> tuple[np.ndarray, np.ndarray, pmaprun.LiveResult]:
    """pmap's output, read back from every device's shard, and ``jit(vmap(jnp.dot))`` of the
    same values on one device; the live run's own check (pmap against ``jit(vmap(f))``)."""
    import jax
    import jax.numpy as jnp

    compiled = pmapcompile.compile_plan(program, p)
    live = pmaprun.run_plan(program, p, compiled, repeat=1, keep=True)
    out = np.empty(live.out_shape, np.float32)
    for shard in live.blocks[1]:
        out[shard.index] = shard.data
    x, y = (a.reshape(-1, 3) for a in pmaprun.make_values(p))
    want = np.asarray(jax.jit(jax.vmap(jnp.dot))(x, y))
    return out, want, live


def target(before: list[np.ndarray]) -> list[np.ndarray]:
    """Each device's x after the ring shift: its left neighbour's (device n - 1 for device 0)."""
    n = len(before)
    return [np.asarray(before[(j - 1) % n]).reshape(-1) for j in range(n)]


def ring_shift(values: Mapping[str, Any], n: int) -> Judgement:
    """A collective (``values["c"]``, with ``values["perm"]``: ring right, ring left or pairs
    like 0->1, for ppermute) run on n devices holding one number each: each device must end
    with its left neighbour's x."""
    key, pairs = values["c"], str(values.get("perm", "")).strip()
    c = BY_KEY[key]
    mode = pairs.lower() if pairs.lower() in ("ring right", "ring left") else "custom"
    try:
        choice = collectivechoices.playground_choice(key, n, "", pairs, mode)
        out = collectiveruns.run(key, n, 1, perm=choice.perm)
    except collectivechoices.CollectiveError as err:
        rule = "pairs that are no permutation" if c.takes_pairs else f"{key} refuses the block"
        return verdicts.wrong("CollectiveError", rule, str(err))
    except BUSY as err:
        return verdicts.not_checked(f"Not checked now: {first_line(str(err))}")
    want = target(out.before)
    got = [np.asarray(a).reshape(-1) for a in out.after]
    if all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want, strict=True)):
        return SOLVED
    return verdicts.wrong(
        verdicts.WRONG,
        f"{key} is not a shift to the right",
        f"After `{out.code}`, device 0 holds {collectiveruns.show_values(got[0])}; its left "
        f"neighbour, device {n - 1}, had {collectiveruns.show_values(want[0])}.",
    )
