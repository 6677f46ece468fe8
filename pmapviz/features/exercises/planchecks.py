"""The exercises judged from a plan: the explorer's planner (shapes alone, ``jax.eval_shape``)
says whether pmap takes the attempt on these devices, and JAX's own exception for the real call
(a lowering, nothing allocated) is what the attendee reads when it does not.

Each check takes the attempt's parsed values and the device count and returns a
:class:`pmapviz.features.exercises.verdicts.Judgement`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.features.exercises import verdicts
from pmapviz.features.exercises.verdicts import SOLVED, Judgement


def rows_of(n: int) -> int:
    """The fit exercise's x has this many rows on ``n`` devices: two more than the devices."""
    return n + 2


def fit_devices(values: Mapping[str, Any], n: int) -> Judgement:
    """x of shape (n + 2, 3) reshaped (``values["shape"]``) so that pmap of ``x * 2`` takes it
    on ``n`` devices, every element kept."""
    shape = tuple(values["shape"])
    rows = rows_of(n)
    want = rows * 3
    if math.prod(shape) != want:
        return verdicts.wrong(
            verdicts.WRONG,
            f"x must keep its {want} elements",
            f"{verdicts.shape_words(shape)} holds {math.prod(shape):,} elements; x "
            f"({rows}, 3) holds {want}. Reshape it: no element dropped or added.",
        )
    if not shape:
        return verdicts.wrong(verdicts.WRONG, "x must keep an axis to map", "x needs an axis.")
    program = functions.get("double")
    p = planning.plan(program, [shape], n_devices=n)
    if not p.ok:
        return verdicts.plan_verdict(program, p, own_sizes=(rows,))
    return SOLVED


def broadcast_w(values: Mapping[str, Any], n: int) -> Judgement:
    """``x @ w`` with x (n, 4, 5) mapped over its first axis and w (5, 2) given the in_axes
    ``values["axis"]``: the result must be (n, 4, 2), every device using all of w."""
    axis = values["axis"]
    program = functions.get("matmul")
    p = planning.plan(program, [(n, 4, 5), (5, 2)], in_axes=(0, axis), n_devices=n)
    if not p.ok:
        return verdicts.plan_verdict(program, p, own_sizes=(5,))
    want = (n, 4, 2)
    if tuple(p.out_shapes) != want:
        return verdicts.wrong(
            verdicts.WRONG,
            f"the result must be ({n}, 4, 2)",
            f"pmap takes it, and its result is {verdicts.shape_words(p.out_shapes)}: each "
            f"device multiplied its x block by a part of w, not all of it. The task's "
            f"result is {verdicts.shape_words(want)}.",
        )
    return SOLVED
