"""The migration traps that JAX's API itself answers, asked of the installed JAX on the
explorer's settings: shard_map's refusal of an unproven ``out_specs=P()``, nested pmap's
refusal, the old placement functions that are gone (``hasattr``, and what JAX says when they
are used) with their replacements run, and host-local against global arrays
(``jax.make_array_from_process_local_data``). Each returns a
:class:`Trap`: what was run, what happened, JAX's words and the fix; the pmap runs
themselves are :mod:`pmapviz.features.meshes.migrationtraps`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pmapviz.core.base.valuetext import fmt_shape, quote, whole_message
from pmapviz.core.devices import devicefacts
from pmapviz.core.planning.planning import Plan
from pmapviz.features.meshes import migration
from pmapviz.features.meshes.meshspecs import spec_text

OLD_APIS = (
    ("jax", "device_put_replicated"),
    ("jax", "device_put_sharded"),
    ("jax.sharding", "PmapSharding"),
)
PROCESSES = 2  # the multi-process case said in numbers: two processes like this one


@dataclass(frozen=True)
class Trap:
    """One trap run on these settings: what was run, what happened (read from the run), JAX's
    own words where it said something, and the fix with what it did. ``facts``: the measured
    values themselves (for tests and JSON)."""

    key: str  # index, out_axes_none, nested, deprecated, host_local
    title: str
    code: str
    said: str
    jax_words: str = ""
    fix_code: str = ""
    fix_said: str = ""
    applies: bool = True  # False: these settings do not meet it (said says why)
    facts: dict = field(default_factory=dict)


def said(err: BaseException) -> str:
    """An exception as a traceback's last line says it: ``ValueError: ...``, its lines joined
    (JAX's longest cut at 1,200 characters)."""
    return f"{type(err).__name__}: {whole_message(err, 1200)}"


def _name(plan: Plan) -> str:
    return plan.axis_name or "i"


def _mesh(plan: Plan, devs: list):
    """``jax.make_mesh((n,), (axis_name,))`` on the plan's devices (Explicit, its default)."""
    import jax

    return jax.make_mesh((len(devs),), (_name(plan),), devices=devs)


def _block_fn(fn, plan: Plan):
    """f on shard_map's blocks: each mapped input's axis (size 1) squeezed off, as pmap does."""
    import jax.numpy as jnp

    def f_block(*blocks):
        return fn(
            *(
                b if ax is None else jnp.squeeze(b, ax)
                for b, ax in zip(blocks, plan.leaf_axes, strict=True)
            )
        )

    return f_block


def shard_map_replicated(fn, plan: Plan, xs) -> str:
    """``jax.shard_map`` of f with ``out_specs=P()`` for every output (what ``out_axes=None``
    becomes), ``check_vma`` on, traced on the inputs' shapes: JAX's refusal in its words, or
    "" when it accepts."""
    import jax
    from jax.sharding import Mesh as JaxMesh
    from jax.sharding import PartitionSpec

    name = _name(plan)
    mesh = JaxMesh(np.array(devicefacts.local_devices_for_work()[: plan.devices_used]), (name,))
    mapped = jax.shard_map(
        _block_fn(fn, plan),
        mesh=mesh,
        in_specs=tuple(PartitionSpec(*migration.axis_spec(ax, name)) for ax in plan.leaf_axes),
        out_specs=PartitionSpec(),
        check_vma=True,
    )
    try:
        jax.jit(mapped).trace(*(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in xs))
    except Exception as err:  # noqa: BLE001 - JAX's refusal, shown as said
        return said(err)
    return ""


# ---------------------------------------------------------------- nested pmap
def split_in_two(n: int) -> tuple[int, int]:
    """(outer, inner) with outer * inner = n: outer the smallest factor above 1 (n prime or
    1: (n, 1))."""
    outer = next((p for p in range(2, n + 1) if n % p == 0), 1)
    return outer, n // outer


def nested_trap(fn, plan: Plan):
    """``jax.pmap(jax.pmap(f))`` over the mapped axis split in two, lowered on abstract inputs
    (nothing runs): JAX's refusal."""
    import jax

    outer, inner = split_in_two(plan.devices_used)
    structs = [
        jax.ShapeDtypeStruct(
            leaf.shape
            if leaf.axis is None
            else leaf.shape[: leaf.axis] + (outer, inner) + leaf.shape[leaf.axis + 1 :],
            np.dtype(leaf.dtype) if leaf.dtype != "bfloat16" else jax.numpy.bfloat16,
        )
        for leaf in plan.leaves
    ]
    inner_pmap = jax.pmap(fn, in_axes=plan.leaf_axes, axis_name=plan.axis_name)
    nested = jax.pmap(inner_pmap, in_axes=plan.leaf_axes, axis_name="outer")
    shown = ", ".join(
        f"{quote(leaf.name)} {fmt_shape(s.shape)}"
        for leaf, s in zip(plan.leaves, structs, strict=True)
    )
    try:
        nested.lower(*structs)
        words = ""
    except Exception as err:  # noqa: BLE001 - JAX's refusal, shown as said
        words = said(err)
    name = _name(plan)
    return Trap(
        "nested",
        "Nested pmap no longer works",
        f"jax.pmap(jax.pmap(f, axis_name={plan.axis_name!r}), axis_name='outer')",
        f"The {plan.devices_used} device(s) as {outer} x {inner}, on {shown}: "
        + (
            "JAX refuses it (pmap is a shard_map now, and one pmap knows nothing of the mesh "
            "axis of the other)."
            if words
            else "JAX lowered it."
        ),
        jax_words=words,
        fix_code=(
            f"mesh = jax.make_mesh(({outer}, {inner}), ('outer', {name!r}))\n"
            f"jax.shard_map(f, mesh=mesh, in_specs=P(('outer', {name!r})), ...)"
        ),
        fix_said=(
            "One jax.shard_map maps an axis over both mesh axes at once; or nest "
            "jax.shard_map / jax.smap, one mesh axis at a time (the guide's fixes)."
        ),
        facts={"outer": outer, "inner": inner, "refused": bool(words), "words": words},
    )


# ---------------------------------------------------------------- the old placement functions
def _old_api_words(w, devs) -> dict[str, tuple[bool, str]]:
    """Per old API: whether the installed JAX has it (``hasattr``) and what it says when it
    is used (its exception or warning, "" when it works without a word)."""
    import importlib
    import warnings

    out = {}
    for module, attr in OLD_APIS:
        mod = importlib.import_module(module)
        has = hasattr(mod, attr)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                thing = getattr(mod, attr)
                if attr == "device_put_replicated":
                    thing(w, devs)
                elif attr == "device_put_sharded":
                    thing([w] * len(devs), devs)
            words = "; ".join(f"{c.category.__name__}: {c.message}" for c in caught)
        except Exception as err:  # noqa: BLE001 - what JAX says, shown as said
            words = said(err)
        out[f"{module}.{attr}"] = (has, words)
    return out


def _placed(x: np.ndarray, sharding, axis: int | None) -> tuple:
    """``jax.device_put(x, sharding)``, and whether every device's shard is what it should be
    (all of x; or its slice k of ``axis``), read back shard by shard."""
    import jax

    a = jax.device_put(x, sharding)
    right = all(
        np.array_equal(
            np.asarray(s.data),
            x if axis is None else np.take(x, [s.index[axis].start or 0], axis=axis),
        )
        for s in a.addressable_shards
    )
    return a, right, tuple(a.addressable_shards[0].data.shape)


def _fed(run, plan: Plan, xs, placed: dict, want: list) -> str:
    """What the pmap returns given these placed inputs (by leaf index) instead of NumPy's."""
    import jax

    inputs = [placed.get(i, x) for i, x in enumerate(xs)]
    try:
        got = [np.asarray(o) for o in jax.tree.leaves(run(plan.out_axes, inputs))]
    except Exception as err:  # noqa: BLE001 - what JAX says, shown as said
        return f"an error, {said(err)}"
    same = all(np.array_equal(g, v) for g, v in zip(got, want, strict=True))
    return "the same output" if same else "a different output"


def deprecated_trap(plan: Plan, xs, devs, run) -> Trap:
    """The old APIs in the installed JAX, then their replacements run: the first broadcast
    input (else device 0's block of the first mapped one) placed ``P()``, the first mapped
    input placed ``P(name)``, and the pmap given the placed inputs."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    name, mesh = _name(plan), _mesh(plan, devs)
    k = next(i for i, ax in enumerate(plan.leaf_axes) if ax is not None)
    ax, x = plan.leaf_axes[k], xs[k]
    b = next((i for i, a in enumerate(plan.leaf_axes) if a is None), None)
    w = xs[b] if b is not None else np.take(x, 0, axis=ax)
    w_name = quote(plan.leaves[b].name if b is not None else f"{plan.leaves[k].name}[0]")
    old = _old_api_words(w, devs)
    rep, rep_ok, rep_shape = _placed(w, NamedSharding(mesh, PartitionSpec()), None)
    spec = migration.axis_spec(ax, name)
    shd, shd_ok, shd_shape = _placed(x, NamedSharding(mesh, PartitionSpec(*spec)), ax)
    want = [np.asarray(o) for o in jax.tree.leaves(run(plan.out_axes))]
    fed = _fed(run, plan, xs, {k: shd, **({b: rep} if b is not None else {})}, want)
    if fed.startswith("an error"):  # an Explicit axis pmap does not know: try an Auto one
        auto = jax.sharding.Mesh(np.array(devs), (name,))
        moved = _placed(x, NamedSharding(auto, PartitionSpec(*spec)), ax)[0]
        fed += (
            f". Placed on an Auto axis instead (jax.sharding.Mesh(devices, ({name!r},))), "
            f"it returned {_fed(run, plan, xs, {k: moved}, want)}"
        )
    gone = [api for api, (has, _) in old.items() if not has]
    n = len(devs)
    return Trap(
        "deprecated",
        "device_put_replicated, device_put_sharded and PmapSharding",
        "jax.device_put_replicated(w, devices); jax.device_put_sharded(blocks, devices)",
        (
            f"Not in this JAX: {', '.join(f'`{a}`' for a in gone)}."
            if gone
            else "All still in this JAX."
        )
        + " Used, JAX says:",
        jax_words="\n".join(f"{api}: {words or 'no warning'}" for api, (_, words) in old.items()),
        fix_code=(
            f"mesh = jax.make_mesh(({n},), ({name!r},))\n"
            f"w = jax.device_put(w, NamedSharding(mesh, P()))\n"
            f"x = jax.device_put(x, NamedSharding(mesh, {spec_text(spec)}))"
        ),
        fix_said=(
            f"Run: {w_name} placed `P()` puts all of it, {fmt_shape(rep_shape)}, on each of "
            f"{n} device(s) (every shard checked: {rep_ok}); {quote(plan.leaves[k].name)} placed "
            f"`{spec_text(spec)}` gives each device its {fmt_shape(shd_shape)} block "
            f"({shd_ok}). The pmap, given them, returned {fed}."
        ),
        facts={
            "has": {api: has for api, (has, _) in old.items()},
            "words": {api: words for api, (_, words) in old.items()},
            "replicated_ok": rep_ok,
            "sharded_ok": shd_ok,
            "pmap_on_placed": fed,
        },
    )


# ---------------------------------------------------------------- host-local and global arrays
def host_local_trap(plan: Plan, xs, devs) -> Trap:
    """``jax.make_array_from_process_local_data`` of the first mapped input on this process,
    and what JAX says when asked here for the global shape :data:`PROCESSES` processes like
    this one would make."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    k = next(i for i, ax in enumerate(plan.leaf_axes) if ax is not None)
    ax, x, leaf = plan.leaf_axes[k], xs[k], plan.leaves[k]
    spec = migration.axis_spec(ax, _name(plan))
    sharding = NamedSharding(_mesh(plan, devs), PartitionSpec(*spec))
    g = jax.make_array_from_process_local_data(sharding, x)
    same = bool(np.array_equal(np.asarray(g), x))
    several = tuple(d * PROCESSES if i == ax else d for i, d in enumerate(x.shape))
    try:
        jax.make_array_from_process_local_data(sharding, x, several)
        words = ""
    except Exception as err:  # noqa: BLE001 - what JAX says, shown as said
        words = said(err)
    count = jax.process_count()
    return Trap(
        "host_local",
        "Host-local and global arrays across processes",
        f"jax.make_array_from_process_local_data(NamedSharding(mesh, "
        f"{spec_text(spec)}), {leaf.name})",
        f"On this process (`jax.process_count()` = {count}) the global array is "
        f"{quote(leaf.name)} itself: {fmt_shape(g.shape)}, every shard addressable here "
        f"(`is_fully_addressable`: {g.is_fully_addressable}; the same values: {same}). With "
        f"{PROCESSES} processes like this one, each would pass only its own rows and the "
        f"global array would be {fmt_shape(several)}, of which each process addresses only "
        "its own devices' blocks (not run here: one process). pmap converts host-local "
        "arrays to global ones and back on every call; with shard_map you make the global "
        "array once. Asked here for that global shape, JAX says:",
        jax_words=words,
        fix_code=f"x = jax.make_array_from_process_local_data(sharding, {leaf.name})  # once",
        fix_said="The Multi-process page runs real jax.distributed clusters of several processes.",
        facts={
            "process_count": count,
            "shape": list(g.shape),
            "fully_addressable": bool(g.is_fully_addressable),
            "same_values": same,
            "several_shape": list(several),
            "words": words,
        },
    )
