"""Where smap refuses a call: the refusal said plainly in the user's numbers, with JAX's own
words (read from the real call on abstract inputs,
:func:`pmapviz.features.smap.smapcall.smap_pipeline`) and a fix that, applied, runs.

The refusals, in the order the script meets them: no ``jax.set_mesh`` (smap takes its mesh from
the context); a negative in_axes that does not mean axis 0 (smap in JAX 0.10, like pmap, splits
axis 0 whatever it says); a mapped axis the mesh does not divide (``jax.reshard`` refuses it
with Explicit axes, shard_map with Auto ones; pmap instead takes the first devices); ``in_axes``
left out on an Auto axis (nothing to infer them from); an input not resharded under Explicit
axes (its type says it is not split); mapped axes of different sizes; settings f itself refuses
(jit(vmap) refuses them too); ``out_axes=None`` for an output that differs between devices
(smap checks it, pmap returns device 0's value without a word). Which one JAX met is read from
the settings in that order; tests/features/smap/test_smaprefusals.py checks each against JAX's
own message. Where smap runs but parts from pmap: :mod:`pmapviz.features.smap.smapparts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pmapviz.core.base.valuetext import counted, fmt_shape
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running.jaxsays import JaxSaid
from pmapviz.features.smap.pmappipeline import Pipeline
from pmapviz.features.smap.smapcall import axis_name, block, mapped_size, spec
from pmapviz.features.smap.smapsettings import SmapSettings

# the plan's problems after which smap cannot be called (f's arguments or axes are not known)
NOT_CALLABLE = (
    "in_axes_length",
    "in_axes_structure",
    "dtype",
    "too_large",
    "axis_out_of_range",
    "no_mapped_axis",
)


@dataclass(frozen=True)
class Refusal:
    """smap's refusal: ``code``, the plain ``message`` and ``fix``, JAX's words (``said``),
    and what applying the fix changes: smap's settings (``changes``, field -> value) or the
    explorer's (``explorer``, its URL keys -> text)."""

    code: str
    message: str
    fix: str
    said: JaxSaid
    changes: Mapping[str, Any] = field(default_factory=dict)
    explorer: Mapping[str, str] = field(default_factory=dict)

    @property
    def fixable(self) -> bool:
        """Whether applying the fix is one click (it changes a setting)."""
        return bool(self.changes or self.explorer)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "code": self.code,
            "message": self.message,
            "fix": self.fix,
            "jax_says": self.said.text,
            "changes": dict(self.changes),
            "explorer_changes": dict(self.explorer),
        }


def callable_with(plan: Plan | None) -> bool:
    """Whether the plan knows f's arguments and their axes, so smap can be called with them;
    not with an empty array (JAX 0.10 handles empty blocks inconsistently: reading back an
    empty sharded output fails inside JAX, so pmapviz refuses them, as the plan does)."""
    return (
        plan is not None
        and bool(plan.leaves)
        and all(leaf.axis is not None or leaf.given_axis is None for leaf in plan.leaves)
        and all(0 not in leaf.shape for leaf in plan.leaves)
        and not any(q.code in NOT_CALLABLE for q in plan.problems)
    )


def _has_none(prefix: Any) -> bool:
    if prefix is None:
        return True
    if isinstance(prefix, dict):
        return any(_has_none(v) for v in prefix.values())
    if isinstance(prefix, (tuple, list)):
        return any(_has_none(v) for v in prefix)
    return False


def largest_divisor(size: int, limit: int) -> int:
    """The largest mesh of at most ``limit`` devices that divides ``size`` (1 at least)."""
    return max((d for d in range(1, max(1, limit) + 1) if size % d == 0), default=1)


def _first_mapped(plan: Plan):
    return next(leaf for leaf in plan.leaves if leaf.axis is not None)


def explain(
    plan: Plan, s: SmapSettings, said: JaxSaid, n_local: int, vmap: Pipeline | None = None
) -> Refusal:
    """What JAX refused (``said``) in the user's numbers, and the fix (see the module doc);
    ``vmap``: jit(vmap)'s trace of the same settings, whose refusal says f itself refuses
    them."""
    m, name = s.devices_for(plan.n_devices), axis_name(plan)
    size = mapped_size(plan)
    not_divided = size is not None and size % m != 0
    mapped = [leaf for leaf in plan.leaves if leaf.axis is not None]
    if not s.set_mesh:
        return _no_mesh(said, s.resharded)
    if any(_negative_not_0(leaf) for leaf in mapped):
        return _negative(plan, said)
    if s.resharded and not_divided:
        return _not_divisible(plan, s, said, n_local, "jax.reshard")
    if not s.explicit and not s.in_axes:
        return Refusal(
            "auto_no_in_axes",
            f"The mesh axis {name!r} is Auto: Auto types carry no sharding, so smap cannot "
            "read how to split the inputs from them, and in_axes was left out.",
            "Give in_axes, as pmap has them (or make the mesh axis Explicit and reshard the "
            "inputs, so smap can infer them).",
            said,
            {"in_axes": True},
        )
    if s.explicit and not s.reshard and mapped:
        leaf = mapped[0]
        split = spec(leaf.axis, len(leaf.shape), name)
        return Refusal(
            "not_resharded",
            f"With Explicit axes smap takes each input as it is already split, and "
            f"{leaf.name} {fmt_shape(leaf.shape)} is a plain array, split over nothing, "
            f"where smap maps its axis {leaf.axis} over {name!r}.",
            f"Reshard it first: {leaf.name} = jax.reshard({leaf.name}, "
            f"P({', '.join(map(repr, split))})), as the script does.",
            said,
            {"reshard": True},
        )
    if not_divided:
        return _not_divisible(plan, s, said, n_local, "shard_map")
    if size is None and len(mapped) > 1:
        return _sizes_differ(plan, said)
    vmap_said = vmap.refused if vmap is not None and vmap.refused is not None else None
    # jit(vmap) refuses out_axes=None for an output that varies, as smap does: that one is
    # smap's own refusal (pmap runs it); any other refusal of vmap's is f's own
    if _has_none(plan.out_axes) and (vmap_said is None or "out_axes" in vmap_said.message):
        return _out_none(plan, s, said, n_local)
    if vmap_said is not None and vmap_said.asked:
        return _f_refuses(plan, said, vmap_said)
    return _other(plan, said)


def _no_mesh(said: JaxSaid, resharded: bool) -> Refusal:
    who = "jax.reshard (given a PartitionSpec) and smap take" if resharded else "smap takes"
    return Refusal(
        "no_mesh",
        f"{who} the mesh from the context, and this call is not under jax.set_mesh: there "
        "is no mesh to split over (pmap takes its devices itself).",
        "Call it inside `with jax.set_mesh(mesh):`.",
        said,
        {"set_mesh": True},
    )


def _negative_not_0(leaf) -> bool:
    return leaf.given_axis is not None and leaf.given_axis < 0 and leaf.axis != 0


def _negative(plan: Plan, said: JaxSaid) -> Refusal:
    """A negative in_axes: JAX 0.10's smap, like its pmap, maps axis 0 whatever it says
    (measured: in_specs P('i') for in_axes=-1), so only one that means axis 0 works."""
    bad = [lf for lf in plan.leaves if _negative_not_0(lf)]
    leaf = bad[0]
    fixed = {
        a: next(lf.axis for lf in bad if lf.argument == a) for a in {lf.argument for lf in bad}
    }
    plain = all(not plan.arguments[a].is_tree for a in fixed)
    return Refusal(
        "negative_in_axes",
        f"in_axes={leaf.given_axis} for {leaf.name} {fmt_shape(leaf.shape)} means axis "
        f"{leaf.axis}, but smap in JAX 0.10, like pmap, does not count it from the end: its "
        f"in_specs split axis 0 (of size {leaf.shape[0]:,}), and the reshard split axis "
        f"{leaf.axis}.",
        f"Write the axis as a non-negative number: in_axes={leaf.axis} for {leaf.name}.",
        said,
        explorer={f"a{a}": str(ax) for a, ax in fixed.items()} if plain else {},
    )


def _not_divisible(plan: Plan, s: SmapSettings, said: JaxSaid, n_local: int, who: str) -> Refusal:
    m, size = s.devices_for(plan.n_devices), mapped_size(plan) or 0
    d = largest_divisor(size, min(n_local, plan.n_devices))
    leaf = _first_mapped(plan)
    return Refusal(
        "not_divisible",
        f"The mapped axis (axis {leaf.axis} of {leaf.name} {fmt_shape(leaf.shape)}) has "
        f"{size:,} elements and the mesh {counted(m, 'device')}: smap gives every device an "
        f"equal block, so {m} must divide {size:,}, and {who} refuses it. pmap instead uses "
        f"the first {min(size, plan.n_devices):,} devices.",
        f"A mesh of {counted(d, 'device')} (the most that divide {size:,}): "
        f"jax.make_mesh(({d},), ({axis_name(plan)!r},), devices=jax.devices()[:{d}]), "
        f"blocks of {size // d:,}.",
        said,
        {"mesh_devices": d},
    )


def _sizes_differ(plan: Plan, said: JaxSaid) -> Refusal:
    problem = next((q for q in plan.problems if q.code == "mapped_sizes_differ"), None)
    sizes = ", ".join(
        f"{leaf.name} {leaf.shape[leaf.axis]:,}" for leaf in plan.leaves if leaf.axis is not None
    )
    return Refusal(
        "sizes_differ",
        f"The mapped axes differ in size ({sizes}): smap splits every mapped axis over the "
        "same mesh axis, so they must have one size.",
        problem.fix if problem else "Make the mapped axes one size.",
        said,
        explorer=_shapes(problem),
    )


def _shapes(problem) -> dict[str, str]:
    if problem is None or not problem.new_shapes:
        return {}
    return {f"s{k}": ", ".join(f"{d:_}" for d in s) for k, s in problem.new_shapes.items()}


def _out_none(plan: Plan, s: SmapSettings, said: JaxSaid, n_local: int) -> Refusal:
    b, size = block(plan, s.devices_for(plan.n_devices)), mapped_size(plan) or 0
    if b is not None and b > 1 and size <= min(n_local, plan.n_devices):
        return Refusal(
            "out_axes_none",
            f"out_axes={plan.out_axes!r} asks for one value for every device, but each "
            f"device vmaps f over a block of {b} elements, so f's output differs along the "
            "block, and vmap refuses out_axes=None for it.",
            f"A mesh of {counted(size, 'device')}: blocks of one element, as pmap's.",
            said,
            {"mesh_devices": size},
        )
    if b == 1:
        why = (
            "smap checks that such an output is the same on every device (check_vma), and "
            "f's output differs from device to device, so it refuses; pmap returns device "
            "0's value without a word."
        )
    else:
        why = (
            f"each device vmaps f over a block of {b} elements, so f's output differs along "
            "the block, and vmap refuses out_axes=None for it."
        )
    return Refusal(
        "out_axes_none",
        f"out_axes={plan.out_axes!r} asks for one value for every device, but {why}",
        "out_axes=0: every device's result, stacked on a new leading axis.",
        said,
        explorer={"out": "0"},
    )


def _f_refuses(plan: Plan, said: JaxSaid, vmap_said: JaxSaid) -> Refusal:
    r = _other(plan, said)
    return Refusal(
        "f_refuses",
        f"f itself refuses these shapes and axes: jit(vmap) of f refuses them too (with a "
        f"{vmap_said.name}), so no way of mapping f runs them; smap's own words are below.",
        r.fix,
        said,
        explorer=r.explorer,
    )


def _other(plan: Plan, said: JaxSaid) -> Refusal:
    problem = next((q for q in plan.problems if q.new_shapes or q.new_axes), None)
    explorer = _shapes(problem)
    if problem is not None and problem.new_axes:
        explorer |= {f"a{k}": str(a) for k, a in problem.new_axes.items()}
    return Refusal(
        "other",
        "smap refuses these settings; JAX's own words say why"
        + (", and pmapviz's plan above names the same problem." if problem else "."),
        problem.fix if problem else "Change the settings as JAX's words say.",
        said,
        explorer=explorer,
    )
