"""Time budget: how long an action will take on this machine, and a limit it must fit in.

A run that fits the memory budget can still take minutes (a large matmul is FLOP-bound), and while
it runs it holds its turn (:mod:`pmapviz.core.base.queues`). So every long action is estimated
first, from its FLOPs and bytes against the device's own measured rates
(:func:`pmapviz.core.devices.devicefacts.rates`, once per process: memory bandwidth, FLOP rate and
host-to-device transfer rate), plus fixed costs measured on a 2-core CPU: one ahead-of-time compile,
one call's dispatch, one training step's bookkeeping.

An action whose estimate passes the operator's limit (``--max-seconds``, default 60 s, see
:func:`pmapviz.core.devices.jaxstartup.time_limit`) is refused with :class:`TooLong`, whose message
says the largest size (or number of steps) that fits. Estimates are rough (within a few x); they
exist to stop the ten-minute run, not to predict the two-second one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pmapviz.core.budgets import memoryestimates, memorypool
from pmapviz.core.devices import jaxstartup
from pmapviz.core.devices.devicerates import Rates
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning
from pmapviz.core.planning.planning import Plan
from pmapviz.core.xla import hlo

COMPILE_S = 0.25  # one lower + compile of a small program
CALL_S = 0.5e-3  # dispatch of one call, pmap on 8 emulated devices ~0.25 ms
GEN_S_PER_BYTE = 2.5e-9  # generating random host inputs (~10 ns per float32)
STEP_S, STEP_PER_DEVICE_S = 4e-3, 1.5e-3  # a training step's transfers, reads and checks
FIXED_S = 0.5  # measuring bandwidth, machine info, first-call set-up


class TooLong(ValueError):
    """An action's estimate passes the limit; the message says what fits."""

    def __init__(self, message: str, estimate_s: float, limit_s: float):
        super().__init__(message)
        self.estimate_s, self.limit_s = estimate_s, limit_s


def machine_rates() -> Rates:
    """The device's rates, measured on first use (a probe sized by the memory budget) and
    shared with the Timing lab's floor."""
    return memorypool.measured_rates()


def _limit(limit_s: float | None) -> float:
    if limit_s is None:
        return float(jaxstartup.time_limit())
    return float(limit_s)


def _largest_fitting(
    cost: Callable[[int], float], lo: int, hi: int, step: int, limit_s: float
) -> int | None:
    """The largest multiple of ``step`` in [lo, hi] with cost <= limit (cost grows with it)."""
    if cost(lo) > limit_s:
        return None
    a, b = lo // step, hi // step
    while a < b:
        mid = (a + b + 1) // 2
        a, b = (mid, b) if cost(mid * step) <= limit_s else (a, mid - 1)
    return a * step


# ---------------------------------------------------------------- timing sweeps
def sweep_seconds(
    wl, runs: Sequence[tuple[str, int, int]], repeat: int, rates: Rates, cap: int | None = None
) -> float:
    """Estimated seconds for a sweep's runs (sizes above ``cap`` counted as ``cap``)."""
    total = FIXED_S
    sizes = [s if cap is None else min(s, cap) for _, _, s in runs]
    if sizes:
        total += max(sizes) * wl.input_bytes(1) * GEN_S_PER_BYTE
    for (impl, _k, _s), s in zip(runs, sizes, strict=True):
        total += 0.0 if impl == "numpy" else COMPILE_S + 2 * rates.transfer_s(wl.input_bytes(s))
        total += (repeat + 1) * rates.call_s(wl.flops(s), wl.bytes_moved(s), CALL_S)
    return total


def check_sweep(
    wl,
    runs: Sequence[tuple[str, int, int]],
    repeat: int,
    limit_s: float | None = None,
    rates: Rates | None = None,
) -> float:
    """The sweep's estimate in seconds; raises TooLong with the largest size that fits."""
    limit = _limit(limit_s)
    rates = rates or machine_rates()
    est = sweep_seconds(wl, runs, repeat, rates)
    if est <= limit or not runs:
        return est
    step = math.lcm(*{k for _, k, _ in runs})
    biggest = max(s for _, _, s in runs)
    fit = _largest_fitting(
        lambda cap: sweep_seconds(wl, runs, repeat, rates, cap), step, biggest, step, limit
    )
    head = (
        f"This sweep of {len(runs)} measurements x {repeat + 1} calls would take about "
        f"{est:,.0f} s (estimated from {rates.describe()}); the limit is {limit:.0f} s per "
        "action."
    )
    if fit is None:
        advice = (
            " Even the smallest size does not fit: choose fewer implementations, device "
            "counts or timed runs."
        )
    else:
        advice = (
            f" The largest size that fits with these settings is {fit:,} {wl.unit}; or "
            "time fewer sizes, implementations or runs."
        )
    raise TooLong(head + advice, est, limit)


# ---------------------------------------------------------------- training
@dataclass(frozen=True)
class StepCost:
    """One training step, in numbers (the training module says what its models cost)."""

    flops: float  # forward and backward, data-parallel and on one device
    nbytes: int  # bytes moved per step
    devices: int


def training_step_seconds(step: StepCost, rates: Rates) -> float:
    """Estimated seconds of one training ``step`` at the measured ``rates``."""
    return STEP_S + STEP_PER_DEVICE_S * step.devices + rates.call_s(step.flops, step.nbytes, CALL_S)


def check_training(
    steps: int, step: StepCost, limit_s: float | None = None, rates: Rates | None = None
) -> float:
    """Estimated seconds for ``steps`` training steps; raises TooLong with the most that fit."""
    limit = _limit(limit_s)
    rates = rates or machine_rates()
    per_step = training_step_seconds(step, rates)
    fixed = FIXED_S + 4 * COMPILE_S  # both steps, forward and backward
    est = fixed + steps * per_step
    if est <= limit:
        return est
    fit = max(0, int((limit - fixed) / per_step))
    advice = (
        f" At most {fit:,} steps fit; or use a smaller batch or fewer devices."
        if fit
        else " Even one step does not fit: use a smaller batch."
    )
    raise TooLong(
        f"Training {steps:,} steps would take about {est:,.0f} s ({per_step * 1e3:.1f} ms "
        f"per step, estimated from {rates.describe()}); the limit is {limit:.0f} s per "
        f"action.{advice}",
        est,
        limit,
    )


# ---------------------------------------------------------------- a plan (live run, explorer)
def plan_cost(plan: Plan, program: Program | None = None) -> tuple[float, float, float]:
    """(FLOPs, bytes, sort compares) of one call of the plan over all devices, from XLA's
    cost analysis of jit(vmap(f)) and its text when ``program`` is given (lowering only, no
    compile). A sort's compares are taken out of the FLOPs: they have their own rate."""
    nbytes = memoryestimates.live_run_bytes(plan).total / 3  # inputs and outputs once
    if program is None:
        return 0.0, nbytes, 0.0
    try:
        flops, xla_bytes, compares = xla_cost(program, plan.key)
    except Exception:  # noqa: BLE001 -- an estimate: fall back to bytes alone (not kept)
        return 0.0, nbytes, 0.0
    return flops, max(nbytes, xla_bytes), compares


@functools.lru_cache(maxsize=256)  # a few hundred bytes each; a failure raises, so is not kept
def xla_cost(program: Program, key: tuple) -> tuple[float, float, float]:
    """(FLOPs less sort compares, bytes accessed, sort compares) of jit(vmap(f)) for the plan
    of :attr:`Plan.key` ``key``, from XLA's cost analysis and the lowered text. Lowered once
    per program and plan: a page asks again on every rerun (the Live page before its Run
    button), and the answer depends on nothing else."""
    import jax
    import jax.numpy as jnp

    plan = planning.replan(program, key)
    fn = jax.vmap(
        plan.leaf_fn(program.build(plan.axis_name)),
        in_axes=plan.leaf_axes,
        out_axes=plan.out_axes,
        axis_name=plan.axis_name,
    )
    specs = [jax.ShapeDtypeStruct(leaf.shape, jnp.dtype(leaf.dtype)) for leaf in plan.leaves]
    lowered = jax.jit(fn).lower(*specs)
    cost = lowered.cost_analysis() or {}
    compares = hlo.sort_compares(lowered.as_text())
    flops = max(0.0, float(cost.get("flops", 0.0)) - compares)
    return flops, float(cost.get("bytes accessed", 0.0)), compares


def plan_seconds(
    plan: Plan, calls: int, compiles: int, rates: Rates, program: Program | None = None
) -> float:
    """Estimated seconds of a live run of ``plan``: fixed costs (``compiles`` compilations,
    making and transferring the inputs) plus ``calls`` calls."""
    flops, nbytes, compares = plan_cost(plan, program)
    gen = memoryestimates.live_run_bytes(plan).total / 3 * GEN_S_PER_BYTE
    fixed = FIXED_S + compiles * COMPILE_S + gen + 3 * rates.transfer_s(nbytes)
    return fixed + calls * rates.call_s(flops, nbytes, CALL_S, compares)


def check_plan(
    plan: Plan,
    calls: int,
    compiles: int,
    limit_s: float | None = None,
    program: Program | None = None,
    rates: Rates | None = None,
    what: str = "This run",
) -> float:
    """Estimated seconds for ``calls`` calls of the plan; TooLong says how much smaller fits."""
    limit = _limit(limit_s)
    rates = rates or machine_rates()
    est = plan_seconds(plan, calls, compiles, rates, program)
    if est <= limit:
        return est
    fixed = FIXED_S + compiles * COMPILE_S + calls * CALL_S
    share = max(0.0, (limit - fixed) / max(est - fixed, 1e-9))
    first = plan.leaves[0].shape
    axis = max(range(len(first)), key=lambda a: first[a], default=None)
    example = ""
    if axis is not None and share > 0:
        size = first[axis]
        example = f" (e.g. the largest axis from {size:,} to at most {int(size * share):,})"
    advice = (
        f" Make the inputs about {share:.0%} of their size{example}."
        if share > 0
        else " Even tiny inputs do not fit this limit."
    )
    raise TooLong(
        f"{what} would take about {est:,.0f} s (estimated from {rates.describe()}); the limit "
        f"is {limit:.0f} s per action.{advice}",
        est,
        limit,
    )


def check_live(
    plan: Plan,
    limit_s: float | None = None,
    program: Program | None = None,
    repeat: int = 5,
    rates: Rates | None = None,
) -> float:
    """For the live run (``pmaprun.run_plan``): pmap and jit(vmap) compiled, each called
    1 + ``repeat`` times, read back and checked. Returns the estimate or raises TooLong."""
    return check_plan(plan, 2 * (repeat + 1) + 2, 2, limit_s, program, rates, "This live run")
