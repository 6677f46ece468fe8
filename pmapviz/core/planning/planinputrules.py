"""The plan's rules on the inputs: each a small named rule (``rule_*``) that reads the normalised
settings (:class:`pmapviz.core.planning.planfacts.Normalised`) and returns a Problem, several, or
nothing, in the user's own names, shapes and numbers, with a fix.

They check what ``jax.pmap`` adds to vmap's shape semantics before f is traced: in_axes that fit
the arguments, supported dtypes and sizes, axes in range, one mapped size of at most the device
count (the fix: reshape it into per-device blocks), no empty blocks, no negative in_axes (JAX
0.10 shards the wrong axis), and an axis_name for a collective. :data:`INPUT_RULES` runs them in
order; the first that finds problems ends the plan there.
"""

from __future__ import annotations

import math

from pmapviz.core.base.settings import DTYPES
from pmapviz.core.base.valueparse import MAX_ELEMENTS
from pmapviz.core.base.valuetext import counted, fmt_count, fmt_int, fmt_shape, quote
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planfacts import Normalised, Problem, Rule


# ---------------------------------------------------------------- rules on the inputs
def rule_in_axes_length(n: Normalised) -> Problem | None:
    """in_axes has exactly one entry per argument of f."""
    n_args, given = len(n.arguments), len(n.in_axes_given)
    if given == n_args:
        return None
    return Problem(
        "in_axes_length",
        f"in_axes has {given} entr{'y' if given == 1 else 'ies'} but f takes "
        f"{n_args} argument{'' if n_args == 1 else 's'} "
        f"({', '.join(a.name for a in n.arguments)}).",
        f"Give one entry per argument, e.g. in_axes={tuple([0] * n_args)}.",
    )


def rule_in_axes_structure(n: Normalised) -> list[Problem]:
    """An argument's in_axes prefix must fit its tree (one axis, or exactly its structure)."""
    return [
        Problem(
            "in_axes_structure",
            why,
            "Give the argument one in_axes (e.g. 0 or None) "
            "or a dict / tuple with exactly its keys.",
            arg=k,
        )
        for k, why in n.unfit
    ]


def rule_dtypes(n: Normalised) -> list[Problem]:
    """Every leaf has a dtype pmapviz supports (:data:`DTYPES`)."""
    return [
        Problem(
            "dtype",
            f"{leaf.name}: dtype {quote(leaf.dtype)} is not supported here.",
            f"Choose one of {', '.join(DTYPES)}.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if leaf.dtype not in DTYPES
    ]


def rule_sizes_fit(n: Normalised) -> list[Problem]:
    """No leaf has more than :data:`MAX_ELEMENTS` (2**40) elements."""
    return [
        Problem(
            "too_large",
            f"{leaf.name} {fmt_shape(leaf.shape)} has {fmt_count(math.prod(leaf.shape))} elements; "
            f"pmapviz plans arrays of at most {MAX_ELEMENTS:,} (2**40) elements.",
            "Use smaller sizes.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if math.prod(leaf.shape) > MAX_ELEMENTS
    ]


def rule_axes_in_range(n: Normalised) -> list[Problem]:
    """Every in_axes names an existing axis (scalars have none)."""
    found = []
    for leaf in n.leaves:
        ax, rank, name = leaf.given_axis, len(leaf.shape), leaf.name
        if ax is not None and rank == 0:
            found.append(
                Problem(
                    "axis_out_of_range",
                    f"{name} is a scalar (shape ()), so it has no axis {ax} to map over.",
                    f"Set in_axes for {name} to None to give every device the same value, "
                    f"or give {name} a leading axis, e.g. shape ({n.n_devices},).",
                    arg=leaf.argument,
                )
            )
        elif ax is not None and not -rank <= ax < rank:
            found.append(
                Problem(
                    "axis_out_of_range",
                    f"in_axes={ax} for {name}, but {name} has shape {fmt_shape(leaf.shape)} (rank "
                    f"{rank}): valid axes are 0 to {rank - 1}.",
                    f"Use in_axes={rank - 1} for the last axis, 0 for the first, or None to "
                    "broadcast it.",
                    arg=leaf.argument,
                )
            )
    return found


def rule_negative_in_axes(n: Normalised) -> list[Problem]:
    """JAX 0.10's pmap does not normalise a negative in_axes before sharding: it splits axis 0
    and then squeezes the axis the user named. That works only when the axis means axis 0, or
    when the mapped size is 1 (one device, nothing to split); otherwise it raises
    IndivisibleError or a squeeze ValueError. (Measured; tests/core/planning/test_planning.py checks
    this against real pmap with the user's own axes.)"""
    if n.size is None or n.size <= 1:
        return []
    found = []
    for k, leaf in enumerate(n.leaves):
        ax, norm = leaf.given_axis, leaf.axis
        if ax is None or ax >= 0 or norm in (None, 0):
            continue
        found.append(
            Problem(
                "negative_in_axes",
                f"in_axes={ax} for {leaf.name} {fmt_shape(leaf.shape)} means axis {norm}, but "
                "pmap in JAX 0.10 does not normalise negative in_axes: it shards the wrong axis "
                "and fails with a misleading IndivisibleError or 'cannot select an axis to "
                "squeeze out' (only a negative axis that means axis 0 works).",
                f"Write the axis as a non-negative number: in_axes={norm} for {leaf.name}.",
                arg=leaf.argument,
                new_axes=n.per_argument({k: norm}),
            )
        )
    return found


def rule_some_axis_mapped(n: Normalised) -> Problem | None:
    """At least one argument has a mapped axis (not every in_axes is None)."""
    if n.mapped:
        return None
    return Problem(
        "no_mapped_axis",
        "Every argument has in_axes=None, so there is nothing to split across devices "
        "(pmap says: 'pmap requires at least one argument with a mapped axis').",
        "Set in_axes of at least one argument to an axis, e.g. 0.",
    )


def rule_mapped_sizes_equal(n: Normalised) -> Problem | None:
    """Every mapped axis has the same size (the fix: one size this server can run, at most
    its device count: the largest such size given, else the device count)."""
    sizes = {leaf.shape[leaf.axis] for _, leaf in n.mapped}
    if len(sizes) <= 1:
        return None
    detail = ", ".join(
        f"{leaf.name} axis {leaf.axis} has {leaf.shape[leaf.axis]:,}" for _, leaf in n.mapped
    )
    fits = [s for s in sizes if 1 <= s <= n.n_devices]
    size = max(fits) if fits else n.n_devices
    like = next((leaf.name for _, leaf in n.mapped if leaf.shape[leaf.axis] == size), None)
    fixes = {
        k: leaf.shape[: leaf.axis] + (size,) + leaf.shape[leaf.axis + 1 :]
        for k, leaf in n.mapped
        if leaf.shape[leaf.axis] != size
    }
    changes = "; ".join(
        f"{n.leaves[k].name} {fmt_shape(n.leaves[k].shape)} -> {fmt_shape(v)}"
        for k, v in fixes.items()
    )
    why = f"like {like}" if like else f"the {n.n_devices} devices of this server"
    return Problem(
        "mapped_sizes_differ",
        f"The mapped axes differ in size: {detail}. pmap gives each device one slice of "
        "every mapped axis, so they must all have the same size.",
        f"Make them all {size:,} ({why}; at most {n.n_devices}, the device count): "
        f"{changes}; or set in_axes to None for an argument every device should get whole.",
        new_shapes=n.per_argument(fixes),
    )


def rule_mapped_axis_not_empty(n: Normalised) -> Problem | None:
    """The mapped axis is not of size 0."""
    if n.size != 0:
        return None
    leaf = n.mapped[0][1]
    return Problem(
        "mapped_axis_empty",
        f"The mapped axis has size 0 (axis {leaf.axis} of {leaf.name}, shape "
        f"{fmt_shape(leaf.shape)}): there is nothing to give the devices.",
        f"Use a size from 1 to {n.n_devices} for the mapped axis.",
        arg=leaf.argument,
    )


def _reshape_fix(shape: tuple[int, ...], axis: int, n: int) -> tuple[tuple[int, ...], str]:
    """Split axis `axis` (size S > n) into (d, S // d) with d <= n, d | S, as large as possible."""
    size = shape[axis]
    d = max(k for k in range(1, n + 1) if size % k == 0)
    new = shape[:axis] + (d, size // d) + shape[axis + 1 :]
    if d == n:
        how = ""
    elif d == 1:
        padded = -(-size // n) * n
        new = shape[:axis] + (n, padded // n) + shape[axis + 1 :]
        how = (
            f" ({fmt_int(size)} has no divisor between 2 and {n}: pad axis {axis} to "
            f"{fmt_int(padded)} first)"
        )
    else:
        how = f" (uses {d} of the {n} devices; pad to a multiple of {n} to use all)"
    return new, how


def rule_mapped_axis_fits(n: Normalised) -> Problem | None:
    """The mapped axis is at most the device count (the fix: reshape it into per-device blocks)."""
    if n.size is None or n.size <= n.n_devices:
        return None
    fixes, lines = {}, []
    for k, leaf in n.mapped:
        new, how = _reshape_fix(leaf.shape, leaf.axis, n.n_devices)
        fixes[k] = new
        lines.append(f"reshape {leaf.name} {fmt_shape(leaf.shape)} to {fmt_shape(new)}{how}")
    first = n.mapped[0][1]
    ax0 = first.axis
    return Problem(
        "mapped_axis_too_large",
        f"Axis {ax0} of {first.name} has {first.shape[ax0]:,} elements but there "
        f"{'is' if n.n_devices == 1 else 'are'} {counted(n.n_devices, 'device')}; pmap puts "
        f"exactly one slice of the mapped axis on each device, so it can be at most "
        f"{n.n_devices}.",
        "; ".join(lines).capitalize() + f", and keep in_axes={ax0}: each device then gets a "
        "block and can vmap over it (pmap(vmap(f))).",
        arg=first.argument,
        new_shapes=n.per_argument(fixes),
    )


def rule_no_empty_blocks(n: Normalised) -> list[Problem]:
    """No device gets an empty block (a 0 in any leaf's per-device shape)."""
    return [
        Problem(
            "empty_block",
            f"{leaf.name} has shape {fmt_shape(leaf.shape)}, so every device would get an "
            f"empty block {fmt_shape(leaf.local_shape)} (0 elements). There is nothing to compute, "
            "and JAX 0.10 handles empty blocks inconsistently (a dot over length 0 even fails to "
            "compile), so pmapviz refuses them.",
            "Give every axis a size of at least 1.",
            arg=leaf.argument,
        )
        for leaf in n.leaves
        if 0 in leaf.local_shape
    ]


def rule_axis_name_given(n: Normalised) -> Problem | None:
    """A catalog function that uses a collective has an axis_name to reduce over."""
    if not isinstance(n.fn, Program) or not n.fn.needs_axis_name or n.axis_name:
        return None
    return Problem(
        "needs_axis_name",
        f"{n.fn.body('axis_name')} uses a collective (lax.psum), which needs to know which "
        "mapped axis to reduce over, but axis_name is empty.",
        "Set axis_name, e.g. 'i' (pmap(f, axis_name='i')); the collective then names the same "
        "axis.",
    )


INPUT_RULES: tuple[Rule, ...] = (
    rule_in_axes_length,
    rule_in_axes_structure,
    rule_dtypes,
    rule_sizes_fit,
    rule_axes_in_range,
    rule_some_axis_mapped,
    rule_mapped_sizes_equal,
    rule_mapped_axis_not_empty,
    rule_mapped_axis_fits,
    rule_no_empty_blocks,
    rule_negative_in_axes,
    rule_axis_name_given,
)
"""Checked in order; the first rule that finds problems ends the plan there (it is the one a
person should fix first, and later rules assume it passed, e.g. a single mapped size)."""

AXES_CHECKED = INPUT_RULES.index(rule_axes_in_range)
"""A plan stopped at this rule or a later one reports its leaves' normalised axes."""
LAYOUT_CHECKED = INPUT_RULES.index(rule_mapped_axis_fits) + 1
"""A plan stopped after the mapped axes fit reports the devices used and each block."""
