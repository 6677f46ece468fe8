"""The guided tour: ten steps through what the seed teaches, each a short explanation, a small
live demo on this server's devices, and links that open the full pages with the same settings.

Every step is one function ``step_N(ctx) -> list[Block]`` (plain data, so it can be cached and
tested); the page only renders blocks. Two steps have a heavier demo behind a button
(:data:`ACTIONS`). Links come from :class:`pmapviz.core.planning.scenarios.Scenario` and
:func:`page_url`,
never written by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pmapviz.core.base import queues, settings
from pmapviz.core.base.valuetext import first_line, fmt_shape
from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.expressions import collectivedefs, functions
from pmapviz.core.planning import planning
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.cluster import cluster
from pmapviz.features.collectives import collectiveops
from pmapviz.features.home import pmapdemos
from pmapviz.features.live import dotproduct
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import sweepsetup, workloads
from pmapviz.features.training import trainingrun


@dataclass(frozen=True)
class Block:
    """One piece of a step: kind is markdown, code, lesson (a mistake's message, shown on
    purpose), info, table, link, or a picture:
    grid (rows; extra: what it shows), chips (the devices), cards (an explorer scenario's
    texts, drawn as JAX splits its arrays; extra: a title)."""

    kind: str
    body: Any
    extra: str = ""  # code language, a link's target, or a picture's words

    @property
    def picture(self) -> bool:
        """Whether the block is drawn as a picture (grid, chips or cards)."""
        return self.kind in PICTURES


PICTURES = ("grid", "chips", "cards")


@dataclass(frozen=True)
class Context:
    """What a step needs to know about this server."""

    n: int  # devices
    labels: tuple[str, ...]  # device names from JAX
    facts: devicefacts.Facts  # what the devices are (every platform statement comes from it)
    restart_command: str  # for 4 devices (emulated CPU devices when these are real ones)


def page_url(page: str, **params: Any) -> str:
    """A link to another page with its settings (home is ``/``)."""
    path = "/" if page == "home" else f"/{page}"
    return path + (f"?{urlencode({k: str(v) for k, v in params.items()})}" if params else "")


def _link(label: str, url: str) -> Block:
    return Block("link", label, url)


# ---------------------------------------------------------------- the steps
def step_devices(ctx: Context) -> list[Block]:
    """Step 1: what this server's devices are, and the command for 4 of them."""
    n = ctx.n
    return [
        Block("markdown", devicewords.devices_story(ctx.facts, n)),
        Block("code", ctx.restart_command, "bash"),
        Block("chips", None),
        Block("info", devicewords.say(ctx.facts, "devices info", n)),
        _link("Home: the device set", page_url("home")),
    ]


def step_hello(ctx: Context) -> list[Block]:
    """Step 2: pmap(lambda x: x * 2) on arange(n), each device's x and result drawn."""
    r = pmapdemos.run_hello(pmapdemos.hello_program(ctx.n), ctx.n)
    cells = [
        (s.device, s.position, int(x.data[0]), int(s.data[0]))
        for x, s in zip(r.inputs, r.outputs, strict=True)
    ]
    return [
        Block(
            "markdown",
            "`jax.pmap(f)` compiles `f` once with XLA, replicates it to every "
            "device and runs one copy per device on its slice of the input: SPMD, single "
            "program, multiple data. No separate `jax.jit` is needed. Here "
            "`pmap(lambda x: x * 2)` on `arange(n)`:",
        ),
        Block(
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


def step_dot(ctx: Context) -> list[Block]:
    """Step 3: the seed's dot product, one block per device, checked live."""
    n, pairs = ctx.n, ctx.n * 10_000
    r = dotproduct.run_dot(pairs, n, repeat=2, limit=10**8)
    block = f"{10_000_000 // n:_}"
    seed = Scenario.defaults("batched_dot", n).with_changes(
        {"s0": f"{n}, {block}, 3", "s1": f"{n}, {block}, 3"}, n
    )
    return [
        Block(
            "markdown",
            f"Ten million pairs of 3-vectors do not fit pmap's rule (the mapped "
            f"axis may not exceed the device count), so reshape `(pairs, 3)` to `({n}, pairs "
            f"/ {n}, 3)`, run `jax.pmap(jax.vmap(jnp.dot))`, and reshape back. Live, with "
            f"{pairs:,} pairs: **{fmt_shape(r.pmap_out_shape)} -> reshape -> "
            f"{fmt_shape(r.flat_shape)}**, equal to `jit(vmap(dot))`: **{r.allclose}** (max "
            f"|diff| {r.max_abs_diff:.2g}). Without `vmap`, pmap of `vdot` gives "
            f"{fmt_shape(r.without_vmap_shape)}: one number per device, the wrong meaning.",
        ),
        Block("cards", seed.texts(), f"10,000,000 pairs, reshaped to ({n}, {block}, 3)"),
        _link("Explorer with the seed's shapes", seed.url("explorer")),
        _link("Live outputs: the full 10M example", page_url("live")),
    ]


def step_too_many(ctx: Context) -> list[Block]:
    """Step 4: a mapped axis longer than the device count: JAX's message, the planner's,
    and its fix drawn."""
    import jax
    import numpy as np

    n = ctx.n
    try:  # the real, cryptic message
        devs = devicefacts.local_devices_for_work()[:n]
        jax.pmap(lambda v: v * 2, devices=devs)(np.zeros((n + 1, 3), np.float32))
        jax_msg = "(no error)"
    except Exception as err:  # noqa: BLE001
        jax_msg = f"{type(err).__name__}: {first_line(err)}"
    p = planning.plan(functions.get("double"), [(n + 1, 3)], n_devices=n)
    mistake = Scenario.defaults("double", n).with_changes({"s0": f"{n + 1}, 3"}, n)
    return [
        Block(
            "markdown",
            f"What happens when the mapped axis has {n + 1} elements and there "
            f"are {n} devices? JAX itself says:",
        ),
        Block("code", jax_msg, "text"),
        Block(
            "markdown", "which does not tell you what to change. pmapviz, from the shapes alone:"
        ),
        Block("lesson", p.problems[0].message),
        Block("markdown", f"**Fix:** {p.problems[0].fix}"),
        *_fixed_cards(p, n),
        _link("Explorer with this mistake", mistake.url("explorer")),
    ]


def _fixed_cards(p, n: int) -> list[Block]:
    """The planner's fix, drawn: the reshaped array split over the devices."""
    new = p.problems[0].new_shapes if p.problems else None
    if not new:
        return []
    shape = new[0]
    fixed = Scenario.defaults("double", n).with_changes({"s0": ", ".join(map(str, shape))}, n)
    return [Block("cards", fixed.texts(), f"The planner's fix, drawn: x as {fmt_shape(shape)}")]


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


def step_axes(ctx: Context) -> list[Block]:
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
        Block(
            "markdown",
            "`in_axes` says which axis of each argument is split (None: every "
            "device gets all of it); `out_axes` says where the device axis goes in the "
            "result.",
        ),
        Block("cards", broadcast.texts(), "in_axes (0, None): x split, the weights broadcast"),
        Block("table", rows),
        _link("Explorer: broadcast weights", broadcast.url("explorer")),
        _link("Explorer: mapped axis 1, out_axes=1", axis1.url("explorer")),
    ]


def step_collectives(ctx: Context) -> list[Block]:
    """Step 6: psum normalisation and a ppermute ring: each device's values before and after."""
    import numpy as np

    n = ctx.n
    blocks = [
        Block(
            "markdown",
            "With `axis_name='i'`, the copies of f can talk: "
            "`lax.psum(x, 'i')` sums over devices. Normalising by the global sum, then "
            "a ring shift with `ppermute`:",
        )
    ]
    for key, perm in (("normalise", None), ("ppermute", collectivedefs.ring(n, "right"))):
        out = collectiveops.run(key, n, 1, perm=perm)
        blocks.append(Block("markdown", f"`{out.code}`"))
        blocks.append(
            Block(
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
                collectiveops.picture_label(out),
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


def step_training(ctx: Context) -> list[Block]:
    """Step 7: data-parallel training with pmean, live: the loss and identical replicas."""
    n = ctx.n
    h = trainingrun.train(trainingrun.Config("linear", n, 32 * n, 30, 0.05))
    return [
        Block(
            "markdown",
            f"Each device gets a shard of the batch and a copy of the "
            f"parameters; `lax.pmean` of the gradients makes every device apply the same "
            f"update. Live, 30 steps of linear regression on {n} devices: loss "
            f"{h.losses[0]:.3g} -> {h.losses[-1]:.3g}; replicas identical at every step: "
            f"**{h.replicas_identical}**; difference from one-device training: "
            f"{h.max_param_diff:.2g}.",
        ),
        Block(
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


def step_processes(ctx: Context) -> list[Block]:
    """Step 8: two processes' local and global devices (their launch is behind a button)."""
    return [
        Block(
            "markdown",
            "Across hosts, each process sees its **local** devices; collectives "
            "span the **global** ones. This starts two real processes with one device each, "
            "joined by `jax.distributed.initialize` (about two seconds):",
        ),
        Block("grid", *cluster.plan_grid(2, 1)),
        _link("Multi-process", page_url("cluster", p=2, d=2)),
    ]


class NotMeasured(Exception):
    """A step whose measurement could not be made now: its ``blocks`` without it. Raised, so a
    page that caches steps (``tour_step.demo``) does not keep the step unmeasured."""

    def __init__(self, blocks: list[Block]):
        super().__init__("not measured now")
        self.blocks = blocks


ARRIVAL_WAIT_S = 2.0  # step 9 measures on arrival, unless other benchmarks hold the turn


def step_scaling(ctx: Context) -> list[Block]:
    """Step 9: why more devices are not proportionally faster, on these devices: x * 2 + 1
    measured on arrival (the page keeps the server's last measurement, with its time)."""
    story = Block("markdown", devicewords.scaling_story(ctx.facts, ctx.n))
    try:
        rows = time_one_and_all(ctx.n, queue_timeout=ARRIVAL_WAIT_S)
    except (sweepsetup.BenchError, queues.WaitTimeout, queues.Cancelled) as err:
        raise NotMeasured(
            [
                story,
                Block("chips", None),
                Block(
                    "info", f"Not measured now ({first_line(str(err))}); press the button below."
                ),
                _link("Timing lab", page_url("timing")),
            ]
        ) from err
    taken = time.strftime("%H:%M:%S")
    size = scaling_size(ctx.n)
    return [
        story,
        Block("grid", *speedup_grid(rows, size, taken)),
        Block(
            "markdown",
            f"Measured at {taken} on this server: `x * 2 + 1` on {size:,} float32 elements, "
            "the median of 5 calls each, and each run's speed-up over pmap on one device. "
            "Press the button below to measure again.",
        ),
        _link("Timing lab", page_url("timing")),
    ]


def speedup_grid(rows: list[dict], size: int, taken: str) -> tuple[list, str]:
    """``time_one_and_all``'s rows as a picture: each run's median compute time and its
    speed-up over pmap on one device, labelled with when it was measured."""
    base = next(r for r in rows if r["impl"] == "pmap" and r["devices"] == 1)
    one = base["compute (ms, median)"] or 1e-9
    cells = []
    for r in rows:
        name = "jit(vmap)" if r["impl"] == "vmap" else r["impl"]
        what = f"{name} on {r['devices']} device(s)"
        ms, speedup = r["compute (ms, median)"], one / max(r["compute (ms, median)"], 1e-9)
        cells.append(
            (
                what,
                [
                    (f"{ms:.3f} ms", None, f"{what}: {ms:.3f} ms, median of 5"),
                    (f"{speedup:.2f}x", None, f"{speedup:.2f}x pmap on 1 device"),
                ],
            )
        )
    label = (
        f"x * 2 + 1 on {size:,} float32 elements, measured at {taken} on this server: "
        + "; ".join(f"{w}: {c[0][0]} ({c[1][0]})" for w, c in cells)
    )
    return cells, label


def step_today(ctx: Context) -> list[Block]:
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
        Block(
            "grid",
            [(api, [(res, None, f"{api}: {res}")]) for api, res in ways],
            f"The same {n}-device dot products three ways: "
            + "; ".join(f"{api} gives {res}" for api, res in ways),
        ),
        Block(
            "markdown",
            f"pmap is now `jit(shard_map(...))` and in maintenance mode. The "
            f"same {n}-device dot products, three ways, live:\n\n{table}",
        ),
        Block(
            "markdown",
            "**When to use which.** `jit` + `NamedSharding` for most new code: "
            "write global-view code and let XLA insert the communication. `shard_map` when "
            "you want to write the per-device program and its collectives yourself. `pmap` "
            "for existing code and for learning the per-device picture; it no longer nests.",
        ),
        _link("Explorer: the code tab shows the shard_map version", page_url("explorer")),
    ]


@dataclass(frozen=True)
class Step:
    """One step of the tour: its title and the demo that makes its blocks."""

    title: str
    demo: Callable[[Context], list[Block]]


def titles(facts: devicefacts.Facts) -> list[str]:
    """The steps' titles on these devices (step 1 names what the devices are)."""
    return [
        devicewords.say(facts, "devices title") if s.demo is step_devices else s.title
        for s in STEPS
    ]


STEPS: tuple[Step, ...] = (
    Step("Emulating devices on a CPU", step_devices),
    Step("pmap basics", step_hello),
    Step("The 10M-pair dot product", step_dot),
    Step("The mapped axis and the device count", step_too_many),
    Step("in_axes and out_axes", step_axes),
    Step("axis_name and collectives", step_collectives),
    Step("Data-parallel training", step_training),
    Step("Multiple processes", step_processes),
    Step("Sublinear scaling", step_scaling),
    Step("pmap today: shard_map and jit + NamedSharding", step_today),
)


# ---------------------------------------------------------------- demos behind a button
def launch_two_processes(on_wait=None) -> list[dict]:
    """Two real processes with one device each (step 8); raises ClusterError on failure."""
    res = cluster.launch(2, 1, timeout=30, compare_single=False, on_wait=on_wait)
    return [
        {
            "process": p["process_index"],
            "local devices": str(p["local_device_ids"]),
            "global devices": p["global_devices"],
            "psum": p["psum"],
        }
        for p in res.per_process
    ]


def scaling_size(n: int) -> int:
    """Step 9's size: x * 2 + 1 on elements that 1 and ``n`` devices both divide."""
    return sweepsetup.size_choices("elementwise", [1, n])[1]


def time_one_and_all(n: int, on_wait=None, queue_timeout: float | None = None) -> list[dict]:
    """x * 2 + 1 timed with pmap on 1 and on n devices and jit(vmap) (step 9), at a size every
    count divides; raises BenchError on failure (queues.WaitTimeout after ``queue_timeout``
    seconds behind other benchmarks)."""
    size = scaling_size(n)
    rep = bench.sweep(
        workloads.WORKLOADS["elementwise"],
        [size],
        sorted({1, n}),  # one device: pmap on it once
        ["pmap", "vmap"],
        repeat=5,
        on_wait=on_wait,
        **({} if queue_timeout is None else {"queue_timeout": queue_timeout}),
    )
    return [
        {
            "impl": m.impl,
            "devices": m.devices,
            "compute (ms, median)": round(m.run_s_median * 1e3, 3),
            "memory floor (ms)": round(m.floor_s * 1e3, 3),
        }
        for m in rep.results
    ]


# ---------------------------------------------------------------- the page's URL state
def schema() -> settings.Schema:
    """The tour's settings: step."""
    return settings.Schema((settings.int_field("step", "Step", 1, len(STEPS), 1),))
