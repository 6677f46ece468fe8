"""The guided tour's steps: eleven steps through what the seed teaches, each a short explanation, a
small live demo on this server's devices, and links that open the full pages with the same settings.

Every step is one function ``step_N(ctx) -> list[TourBlock]`` (plain data, from
:mod:`pmapviz.features.tour.tourblocks`); the page only renders blocks. Two steps have a heavier
demo behind a button (:mod:`pmapviz.features.tour.tourruns`). Links come from
:class:`pmapviz.core.planning.scenarios.Scenario` and
:func:`pmapviz.features.tour.tourblocks.page_url`, never written by hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from pmapviz.core.base import queues, settings
from pmapviz.core.base.valuetext import first_line, fmt_shape
from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.drawing import gridhtml
from pmapviz.core.expressions import collectivedefs, functions
from pmapviz.core.planning import planning, scenarios, seedpairs
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import jaxsays
from pmapviz.features.cluster import clusterview
from pmapviz.features.collectives import collectiveruns
from pmapviz.features.exercises import exercisebook
from pmapviz.features.home import pmapdemos
from pmapviz.features.live import dotproduct
from pmapviz.features.timing import sweepsetup
from pmapviz.features.tour import tourafter, tourruns
from pmapviz.features.tour.tourblocks import Context, TourBlock, page_url
from pmapviz.features.training import trainingmodel, trainingrun


def _link(label: str, url: str) -> TourBlock:
    return TourBlock("link", label, url)


# ---------------------------------------------------------------- the steps
def step_devices(ctx: Context) -> list[TourBlock]:
    """Step 1: what this server's devices are, and the command for 4 of them."""
    n = ctx.n
    return [
        TourBlock("markdown", devicewords.devices_story(ctx.facts, n)),
        TourBlock("code", ctx.restart_command, "bash"),
        TourBlock("chips", None),
        TourBlock("info", devicewords.say(ctx.facts, "devices info", n)),
        _link("Home: the device set", page_url("home")),
    ]


def step_hello(ctx: Context) -> list[TourBlock]:
    """Step 2: pmap(lambda x: x * 2) on arange(n), each device's x and result drawn."""
    r = pmapdemos.run_hello(pmapdemos.hello_program(ctx.n), ctx.n)
    cells = [
        (s.device, s.position, int(x.data[0]), int(s.data[0]))
        for x, s in zip(r.inputs, r.outputs, strict=True)
    ]
    return [
        TourBlock(
            "markdown",
            "`jax.pmap(f)` compiles `f` once with XLA, replicates it to every "
            "device and runs one copy per device on its slice of the input: SPMD, single "
            "program, multiple data. No separate `jax.jit` is needed. Here "
            "`pmap(lambda x: x * 2)` on `arange(n)`:",
        ),
        TourBlock(
            "grid",
            [
                ("device", [(d, p, d) for d, p, _, _ in cells]),
                ("x", [(str(x), p, "input") for _, p, x, _ in cells]),
                ("x * 2", [(str(y), p, "computed on this device") for _, p, _, y in cells]),
            ],
            f"pmap(lambda x: x * 2) on arange({ctx.n}): each device's x and the x * 2 it computed",
        ),
        _link("Home: hello pmap", page_url("home")),
    ]


DOT_PAIRS_PER_DEVICE = 10_000  # step 3's live run: this many pairs a device (a quick run)


def step_dot(ctx: Context) -> list[TourBlock]:
    """Step 3: the seed's dot product, one block per device, checked live on a small run
    (:data:`DOT_PAIRS_PER_DEVICE` pairs a device); the seed's own pairs drawn as pmap splits
    them on these devices (:func:`pmapviz.core.planning.seedpairs.split`)."""
    n = ctx.n
    r = dotproduct.run_dot(n * DOT_PAIRS_PER_DEVICE, n, repeat=2, limit=10**8)
    split = seedpairs.split(n)
    blocked = scenarios.shape_text(split.blocked)
    seed = Scenario.defaults("batched_dot", n).with_changes({"s0": blocked, "s1": blocked}, n)
    kept = f" (the largest multiple of {n} up to {split.pairs:,})" if split.left_over else ""
    return [
        TourBlock(
            "markdown",
            f"The seed's {split.pairs:,} pairs of 3-vectors do not fit pmap's rule (the mapped "
            f"axis may not exceed the device count): {split.reshape_words()}, run "
            "`jax.pmap(jax.vmap(jnp.dot))`, and reshape back. Live, with "
            f"{r.pairs:,} pairs ({r.block:,} a device): **{fmt_shape(r.pmap_out_shape)} -> "
            f"reshape -> {fmt_shape(r.flat_shape)}**, equal to `jit(vmap(dot))`: "
            f"**{r.allclose}** (max |diff| {r.max_abs_diff:.2g}). Without `vmap`, pmap of "
            f"`vdot` gives {fmt_shape(r.without_vmap_shape)}: one number per device, the "
            "wrong meaning.",
        ),
        TourBlock(
            "cards",
            seed.texts(),
            f"{split.used:,} pairs{kept}, reshaped to {fmt_shape(split.blocked)}",
        ),
        _link("Explorer with the seed's shapes", seed.url("explorer")),
        _link("Live outputs: the seed's example at full size", page_url("live")),
    ]


def step_too_many(ctx: Context) -> list[TourBlock]:
    """Step 4: a mapped axis longer than the device count: the planner's explanation and its
    fix (drawn), then JAX's own error for the real call, collapsed."""
    n = ctx.n
    program = functions.get("double")
    p = planning.plan(program, [(n + 1, 3)], n_devices=n)
    mistake = Scenario.defaults("double", n).with_changes({"s0": f"{n + 1}, 3"}, n)
    return [
        TourBlock(
            "markdown",
            f"What happens when the mapped axis has {n + 1} elements and there are {n} "
            "devices? pmapviz, from the shapes alone:",
            problem=True,
        ),
        TourBlock("grid", *gridhtml.misfit_rows(ctx.labels, n + 1), problem=True),
        TourBlock("lesson", p.problems[0].message, problem=True),
        TourBlock("markdown", f"**Fix:** {p.problems[0].fix}"),
        *_jax_words(program, p),
        *_fixed_cards(p, n),
        _link("Explorer with this mistake", mistake.url("explorer")),
    ]


def _jax_words(program, p) -> list[TourBlock]:
    """What JAX itself raises for the plan's real call on these devices, folded: read from a
    lowering of it (:mod:`pmapviz.core.running.jaxsays`), nothing allocated."""
    said = jaxsays.jax_says(program, p)
    if said is None:
        return [TourBlock("info", "JAX itself raises no error for this call on these devices.")]
    if not said.asked:
        return [TourBlock("info", said.not_asked)]
    words = (
        f"What `jax.pmap(lambda x: x * 2)` raises at its first call on {p.n_devices} "
        "device(s), read from a real lowering of the call; it does not say what to change:"
    )
    return [TourBlock("folded_code", (words, said.text), f"What JAX itself says: {said.name}")]


def _fixed_cards(p, n: int) -> list[TourBlock]:
    """The planner's fix, drawn: the reshaped array split over the devices, and how many of
    them it keeps busy (with the way to use them all when it leaves some idle)."""
    new = p.problems[0].new_shapes if p.problems else None
    if not new:
        return []
    shape = new[0]
    fixed = Scenario.defaults("double", n).with_changes({"s0": ", ".join(map(str, shape))}, n)
    blocks = [
        TourBlock("cards", fixed.texts(), f"The planner's fix, drawn: x as {fmt_shape(shape)}")
    ]
    used, rows = shape[0], math.prod(shape[:-1])
    if used < n:
        padded = -(-rows // n) * n
        blocks.append(
            TourBlock(
                "info",
                f"This fix runs on {used} of the {n} devices: {n - used} stay idle. To keep "
                f"all {n} busy, pad x to {padded:,} rows (a multiple of {n}) and reshape it "
                f"to ({n}, {padded // n}, {shape[-1]}).",
            )
        )
    return blocks


AXES_CASES = (  # label, function, shapes (with n), in_axes, out_axes
    ("a broadcast argument (None)", "matmul", ("{n}, 4, 5", "5, 2"), ("0", "None"), "0"),
    ("a non-leading mapped axis", "add", ("3, {n}", "3, {n}"), ("1", "1"), "0"),
    ("out_axes=1", "double", ("{n}, 3",), ("0",), "1"),
)


def _case(n: int, fn: str, shapes, axes, out) -> Scenario:
    changes = {"out": out}
    for k, (s, a) in enumerate(zip(shapes, axes, strict=True)):
        changes[f"s{k}"], changes[f"a{k}"] = s.format(n=n), a
    return Scenario.defaults(fn, n).with_changes(changes, n)


def step_axes(ctx: Context) -> list[TourBlock]:
    """Step 5: three in_axes and out_axes cases, what each device gets and the result."""
    rows = []
    for label, fn, shapes, axes, out in AXES_CASES:
        scenario = _case(ctx.n, fn, shapes, axes, out)
        _, p, _ = scenario.plan(ctx.n)
        rows.append(
            {
                "case": label,
                "f": functions.get(fn).body(None),
                "inputs": ", ".join(fmt_shape(leaf.shape) for leaf in p.leaves),
                "in_axes": str(p.in_axes_given),
                "out_axes": p.out_axes,
                "each device gets": ", ".join(fmt_shape(leaf.local_shape) for leaf in p.leaves),
                "result": fmt_shape(p.out_shapes),
            }
        )
    broadcast = _case(ctx.n, *AXES_CASES[0][1:])
    axis1 = _case(ctx.n, "add", ("3, {n}", "3, {n}"), ("1", "1"), "1")
    return [
        TourBlock(
            "markdown",
            "`in_axes` says which axis of each argument is split (None: every "
            "device gets all of it); `out_axes` says where the device axis goes in the "
            "result.",
        ),
        TourBlock("cards", broadcast.texts(), "in_axes (0, None): x split, the weights broadcast"),
        TourBlock("table", rows),
        _link("Explorer: broadcast weights", broadcast.url("explorer")),
        _link("Explorer: mapped axis 1, out_axes=1", axis1.url("explorer")),
    ]


def step_collectives(ctx: Context) -> list[TourBlock]:
    """Step 6: psum normalisation and a ppermute ring: each device's values before and after."""
    import numpy as np

    n = ctx.n
    blocks = [
        TourBlock(
            "markdown",
            "With `axis_name='i'`, the copies of f can talk: "
            "`lax.psum(x, 'i')` sums over devices. Normalising by the global sum, then "
            "a ring shift with `ppermute`:",
        )
    ]
    for key, perm in (("normalise", None), ("ppermute", collectivedefs.ring(n, "right"))):
        out = collectiveruns.run(key, n, 1, perm=perm)
        blocks.append(TourBlock("markdown", f"`{out.code}`"))
        blocks.append(
            TourBlock(
                "grid",
                [
                    ("before", [(f"{b[0]:g}", d, "") for d, b in enumerate(out.before)]),
                    (
                        "after",
                        [
                            (f"{float(np.asarray(a).reshape(-1)[0]):.3g}", None, "")
                            for a in out.after
                        ],
                    ),
                ],
                collectiveruns.picture_label(out),
            )
        )
    blocks.append(_link("Collectives: normalise", page_url("collectives", c="normalise", n=n, m=1)))
    blocks.append(
        _link(
            "Collectives: ppermute ring",
            page_url("collectives", c="ppermute", n=n, m=1, p="ring right"),
        )
    )
    return blocks


def step_training(ctx: Context) -> list[TourBlock]:
    """Step 7: data-parallel training with pmean, live: the loss and identical replicas."""
    n = ctx.n
    h = trainingrun.train(trainingmodel.Config("linear", n, 32 * n, 30, 0.05))
    return [
        TourBlock(
            "markdown",
            f"Each device gets a shard of the batch and a copy of the "
            f"parameters; `lax.pmean` of the gradients makes every device apply the same "
            f"update. Live, 30 steps of linear regression on {n} devices: loss "
            f"{h.losses[0]:.3g} -> {h.losses[-1]:.3g}; replicas identical at every step: "
            f"**{h.replicas_identical}**; difference from one-device training: "
            f"{h.max_param_diff:.2g}.",
        ),
        TourBlock(
            "grid",
            [
                ("device", [(ctx.labels[d], d, ctx.labels[d]) for d in range(n)]),
                (
                    "local loss",
                    [
                        (f"{h.local_losses[-1][d]:.3g}", None, "the loss on this shard")
                        for d in range(n)
                    ],
                ),
                (
                    "parameters",
                    [
                        (
                            "identical" if h.replica_diffs[-1] == 0 else "differ",
                            d,
                            "after the pmean of the gradients",
                        )
                        for d in range(n)
                    ],
                ),
            ],
            trainingrun.step_label(h),
        ),
        _link("Data-parallel training", page_url("training", k=n, steps=100)),
    ]


def step_processes(ctx: Context) -> list[TourBlock]:
    """Step 8: two processes' local and global devices (their launch is behind a button)."""
    return [
        TourBlock(
            "markdown",
            "Across hosts, each process sees its **local** devices; collectives "
            "span the **global** ones. This starts two real processes with one device each, "
            "joined by `jax.distributed.initialize` (about two seconds):",
        ),
        TourBlock("grid", *clusterview.plan_grid(2, 1)),
        _link("Multi-process", page_url("cluster", p=2, d=2)),
    ]


def step_scaling(ctx: Context) -> list[TourBlock]:
    """Step 9: why more devices are not proportionally faster, on these devices: x * 2 + 1
    measured on arrival (the page keeps the server's last measurement, with its time)."""
    story = TourBlock("markdown", devicewords.scaling_story(ctx.facts, ctx.n))
    try:
        rows = tourruns.time_one_and_all(ctx.n, queue_timeout=tourruns.ARRIVAL_WAIT_S)
    except (sweepsetup.BenchError, queues.WaitTimeout, queues.Cancelled) as err:
        raise tourruns.NotMeasured(
            [
                story,
                TourBlock("chips", None),
                TourBlock(
                    "info", f"Not measured now ({first_line(str(err))}); press the button below."
                ),
                _link("Timing lab", page_url("timing")),
            ]
        ) from err
    taken = time.strftime("%H:%M:%S")
    size = tourruns.scaling_size(ctx.n)
    return [
        story,
        TourBlock("grid", *tourruns.speedup_grid(rows, size, taken)),
        TourBlock(
            "markdown",
            f"Measured at {taken} on this server: `x * 2 + 1` on {size:,} float32 elements, "
            "the median of 5 calls each, and each run's speed-up over pmap on one device. "
            "Press the button below to measure again.",
        ),
        _link("Timing lab", page_url("timing")),
    ]


def step_today(ctx: Context) -> list[TourBlock]:
    """Step 10: the same dot products with pmap, shard_map and jit + NamedSharding, and
    when to use which."""
    n, r = ctx.n, pmapdemos.three_ways(ctx.n, 1000)
    table = "\n".join(
        [
            "| API | view | input | result | agrees with pmap |",
            "|---|---|---|---|---|",
            f"| `jax.pmap(jax.vmap(jnp.dot))` | per device, the mapped axis removed | "
            f"`({n}, 1000, 3)` | {fmt_shape(r['pmap_shape'])} | (reference) |",
            f"| `jax.jit(jax.shard_map(..., in_specs=P('i')))` | per device, blocks keep their "
            f"rank | `({n * 1000}, 3)` | {fmt_shape(r['shard_map_shape'])} sharded "
            f"{r['shard_map_sharding']} | max diff {r['max_diff_shard_map']:.2g} |",
            f"| `jax.jit(jax.vmap(jnp.dot))` on `NamedSharding` inputs | global: XLA partitions "
            f"it | `({n * 1000}, 3)` | {fmt_shape(r['jit_shape'])} sharded {r['jit_sharding']} "
            f"over {r['jit_devices']} devices | max diff {r['max_diff_jit']:.2g} |",
        ]
    )
    ways = [
        ("jax.pmap", f"{fmt_shape(r['pmap_shape'])}, the reference"),
        (
            "jax.shard_map",
            f"{fmt_shape(r['shard_map_shape'])}, max diff {r['max_diff_shard_map']:.2g}",
        ),
        ("jit + NamedSharding", f"{fmt_shape(r['jit_shape'])}, max diff {r['max_diff_jit']:.2g}"),
    ]
    return [
        TourBlock(
            "grid",
            [(api, [(res, None, f"{api}: {res}")]) for api, res in ways],
            f"The same {n}-device dot products three ways: "
            + "; ".join(f"{api} gives {res}" for api, res in ways),
        ),
        TourBlock(
            "markdown",
            f"pmap is now `jit(shard_map(...))` and in maintenance mode. The "
            f"same {n}-device dot products, three ways, live:\n\n{table}",
        ),
        TourBlock(
            "markdown",
            "**When to use which.** `jit` + `NamedSharding` for most new code: "
            "write global-view code and let XLA insert the communication. `shard_map` when "
            "you want to write the per-device program and its collectives yourself. `pmap` "
            "for existing code and for learning the per-device picture; it no longer nests.",
        ),
        _link("Explorer: the code tab shows the shard_map version", page_url("explorer")),
    ]


@dataclass(frozen=True)
class TourStep:
    """One step of the tour: its title and the demo that makes its blocks."""

    title: str
    demo: Callable[[Context], list[TourBlock]]


def titles(facts: devicefacts.Facts) -> list[str]:
    """The steps' titles on these devices (step 1 names what the devices are)."""
    return [
        devicewords.say(facts, "devices title") if s.demo is step_devices else s.title
        for s in STEPS
    ]


STEPS: tuple[TourStep, ...] = (
    TourStep("Emulating devices on a CPU", step_devices),
    TourStep("pmap basics", step_hello),
    TourStep("The 10M-pair dot product", step_dot),
    TourStep("The mapped axis and the device count", step_too_many),
    TourStep("in_axes and out_axes", step_axes),
    TourStep("axis_name and collectives", step_collectives),
    TourStep("Data-parallel training", step_training),
    TourStep("Multiple processes", step_processes),
    TourStep("Sublinear scaling", step_scaling),
    TourStep("pmap today: shard_map and jit + NamedSharding", step_today),
    TourStep("After pmap: jax.smap, and the sharding in every type", tourafter.step_after),
)


# ---------------------------------------------------------------- the page's URL state
def schema() -> settings.Schema:
    """The tour's settings: step, and the exercise whose worked answer it shows (answer)."""
    return settings.Schema(
        (settings.int_field("step", "Step", 1, len(STEPS), 1), exercisebook.answer_field())
    )
