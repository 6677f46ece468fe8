"""Planning and validation: what ``jax.pmap`` will do with given shapes, before anything runs.

:func:`plan` works from abstract shapes only (``jax.ShapeDtypeStruct`` + ``jax.eval_shape``), so
planning a (10_000_000, 3) input allocates nothing. The per-device program is traced with
``jax.vmap(f, axis_name=...)``, which has pmap's shape semantics (and binds the same collectives)
without needing the devices; the rules pmap adds on top (mapped axis <= device count, no
negative axes, out_axes=None only for outputs equal on every device) are checked here, with a
message in the user's own shapes and a fix. ``tests/core/test_planning.py`` proves the result
against real ``jax.pmap``.

Also here: parsing what a user types for shapes and axes (never evaluated as code).
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pmapviz.settings import (  # noqa: F401  (re-exported: the planner's text API)
    DTYPES,
    MAX_ELEMENTS,
    MAX_RANK,
    check_elements,
    fmt_count,
    fmt_int,
    fmt_shape,
    parse_axis,
    parse_axis_name,
    parse_choice,
    parse_shape,
    quote,
)
from pmapviz.settings import SettingError as InputError

# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    fix: str
    arg: int | None = None  # which argument it is about, if one
    # a concrete change that fixes it, for an "apply" button: {arg index: new shape}
    new_shapes: dict[int, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Plan:
    ok: bool
    problems: tuple[Problem, ...]
    n_devices: int
    devices_used: int
    arg_names: tuple[str, ...]
    arg_shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    in_axes: tuple[int | None, ...]  # normalised: non-negative, one per argument
    out_axes: int | None
    axis_name: str | None
    per_device_in_shapes: tuple[tuple[int, ...], ...] = ()
    out_shapes: Any = None  # tuple, or a pytree of tuples
    per_device_out_shapes: Any = None
    out_dtypes: Any = None
    out_varies: bool | None = None  # does the output differ from device to device?
    notes: tuple[str, ...] = field(default=())


def _arg_names(fn: Any, n: int) -> tuple[str, ...]:
    names = getattr(fn, "arg_names", None)
    if names and len(names) == n:
        return tuple(names)
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return tuple(params) if len(params) == n else tuple(f"arg{k}" for k in range(n))


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


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


@functools.lru_cache(maxsize=1024)
def _trace(fn: Callable, structs: tuple, in_axes: tuple, axis_name: str | None):
    """Global output (device axis at 0) and whether any output leaf varies per device."""
    import jax

    out = jax.eval_shape(jax.vmap(fn, in_axes=in_axes, out_axes=0, axis_name=axis_name), *structs)
    try:
        jax.eval_shape(jax.vmap(fn, in_axes=in_axes, out_axes=None, axis_name=axis_name), *structs)
        varies = False
    except ValueError as err:
        if "out_axes" not in str(err):
            raise
        varies = True
    return out, varies


def plan(
    fn: Callable,
    arg_shapes: Sequence[Sequence[int]],
    in_axes: int | None | Sequence[int | None] = 0,
    out_axes: int | None = 0,
    axis_name: str | None = None,
    n_devices: int | None = None,
    dtypes: str | Sequence[str] | None = None,
) -> Plan:
    """What ``jax.pmap(fn, in_axes, out_axes, axis_name)`` does with arguments of these shapes.

    ``fn`` is a callable or a :class:`pmapviz.catalog.Program`. ``n_devices`` defaults to the
    local device count and may be larger (planning for a bigger machine). Never raises for
    bad shapes or axes: they become ``problems``, each with a ``fix``.
    """
    from pmapviz.catalog import Program

    shapes = tuple(tuple(int(d) for d in s) for s in arg_shapes)
    n_args = len(shapes)
    if n_devices is None:
        import jax

        n_devices = jax.local_device_count()
    names = _arg_names(fn, n_args)
    if dtypes is None or isinstance(dtypes, str):
        dts = (dtypes or "float32",) * n_args
    else:
        dts = tuple(str(d) for d in dtypes)
    problems: list[Problem] = []

    def result(**kw) -> Plan:
        return Plan(
            ok=not problems, problems=tuple(problems), n_devices=n_devices,
            arg_names=names, arg_shapes=shapes, dtypes=dts, out_axes=out_axes,
            axis_name=axis_name, **kw,
        )  # fmt: skip

    # --- in_axes: one per argument, in range, normalised
    if isinstance(in_axes, (list, tuple)):
        axes = tuple(in_axes)
        if len(axes) != n_args:
            problems.append(Problem(
                "in_axes_length",
                f"in_axes has {len(axes)} entr{'y' if len(axes) == 1 else 'ies'} but f "
                f"takes {n_args} argument{'' if n_args == 1 else 's'} ({', '.join(names)}).",
                f"Give one entry per argument, e.g. in_axes={tuple([0] * n_args)}.",
            ))  # fmt: skip
            return result(in_axes=tuple([None] * n_args), devices_used=0)
    else:
        axes = (in_axes,) * n_args
    if len(dts) != n_args:
        raise ValueError(f"dtypes has {len(dts)} entries for {n_args} arguments")
    for k, dt in enumerate(dts):
        if dt not in DTYPES:
            problems.append(Problem(
                "dtype", f"{names[k]}: dtype {dt!r} is not supported here.",
                f"Choose one of {', '.join(DTYPES)}.", arg=k,
            ))  # fmt: skip
    for k, shape in enumerate(shapes):
        if math.prod(shape) > MAX_ELEMENTS:
            problems.append(Problem(
                "too_large",
                f"{names[k]} {fmt_shape(shape)} has {fmt_count(math.prod(shape))} elements; "
                f"pmapviz plans arrays of at most {MAX_ELEMENTS:,} (2**40) elements.",
                "Use smaller sizes.", arg=k,
            ))  # fmt: skip
    if problems:
        return result(in_axes=tuple([None] * n_args), devices_used=0)
    norm: list[int | None] = []
    for k, (shape, ax) in enumerate(zip(shapes, axes, strict=True)):
        if ax is None:
            norm.append(None)
            continue
        rank = len(shape)
        if rank == 0:
            problems.append(Problem(
                "axis_out_of_range",
                f"{names[k]} is a scalar (shape ()), so it has no axis {ax} to map over.",
                f"Set in_axes for {names[k]} to None to give every device the same value, "
                f"or give {names[k]} a leading axis, e.g. shape ({n_devices},).", arg=k,
            ))  # fmt: skip
            norm.append(None)
        elif not -rank <= ax < rank:
            problems.append(Problem(
                "axis_out_of_range",
                f"in_axes={ax} for {names[k]}, but {names[k]} has shape {fmt_shape(shape)} "
                f"(rank {rank}): valid axes are 0 to {rank - 1} (or -{rank} to -1).",
                f"Use in_axes={rank - 1} for the last axis, 0 for the first, or None to "
                "broadcast it.", arg=k,
            ))  # fmt: skip
            norm.append(None)
        else:
            norm.append(ax % rank)
    in_axes_n = tuple(norm)
    if problems:
        return result(in_axes=in_axes_n, devices_used=0)

    mapped = [(k, shapes[k][a]) for k, a in enumerate(in_axes_n) if a is not None]
    if not mapped:
        problems.append(Problem(
            "no_mapped_axis",
            "Every argument has in_axes=None, so there is nothing to split across devices "
            "(pmap says: 'pmap requires at least one argument with a mapped axis').",
            "Set in_axes of at least one argument to an axis, e.g. 0.",
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=0)
    sizes = {size for _, size in mapped}
    if len(sizes) > 1:
        detail = ", ".join(f"{names[k]} axis {in_axes_n[k]} has {size:,}" for k, size in mapped)
        first_k, first = mapped[0]
        problems.append(Problem(
            "mapped_sizes_differ",
            f"The mapped axes differ in size: {detail}. pmap gives each device one slice of "
            "every mapped axis, so they must all have the same size.",
            f"Make them equal (e.g. {first:,} like {names[first_k]}), or set in_axes to None "
            "for an argument every device should get whole.",
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=0)
    size = sizes.pop()
    if size == 0:
        k = mapped[0][0]
        problems.append(Problem(
            "mapped_axis_empty",
            f"The mapped axis has size 0 (axis {in_axes_n[k]} of {names[k]}, shape "
            f"{fmt_shape(shapes[k])}): there is nothing to give the devices.",
            f"Use a size from 1 to {n_devices} for the mapped axis.", arg=k,
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=0)
    if size > n_devices:
        fixes = {}
        lines = []
        for k, _ in mapped:
            new, how = _reshape_fix(shapes[k], in_axes_n[k], n_devices)
            fixes[k] = new
            lines.append(f"reshape {names[k]} {fmt_shape(shapes[k])} to {fmt_shape(new)}{how}")
        k0 = mapped[0][0]
        ax0 = in_axes_n[k0]
        problems.append(Problem(
            "mapped_axis_too_large",
            f"Axis {ax0} of {names[k0]} has {size:,} elements but there are {n_devices} "
            f"devices; pmap puts exactly one slice of the mapped axis on each device, so it "
            f"can be at most {n_devices}.",
            "; ".join(lines).capitalize() + f", and keep in_axes={ax0}: each device then "
            "gets a block and can vmap over it (pmap(vmap(f))).",
            arg=k0, new_shapes=fixes,
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=0)

    per_in = tuple(
        s if a is None else s[:a] + s[a + 1 :] for s, a in zip(shapes, in_axes_n, strict=True)
    )
    for k, local in enumerate(per_in):
        if 0 in local:
            problems.append(Problem(
                "empty_block",
                f"{names[k]} has shape {fmt_shape(shapes[k])}, so every device would get an "
                f"empty block {fmt_shape(local)} (0 elements). There is nothing to compute, "
                "and JAX 0.10 handles empty blocks inconsistently (a dot over length 0 even "
                "fails to compile), so pmapviz refuses them.",
                "Give every axis a size of at least 1.", arg=k,
            ))  # fmt: skip
    if problems:
        return result(in_axes=in_axes_n, devices_used=size, per_device_in_shapes=per_in)
    if isinstance(fn, Program):
        if fn.needs_axis_name and not axis_name:
            problems.append(Problem(
                "needs_axis_name",
                f"{fn.body('axis_name')} uses a collective (lax.psum), which needs to know "
                "which mapped axis to reduce over, but axis_name is empty.",
                "Set axis_name, e.g. 'i' (pmap(f, axis_name='i')); the collective then names "
                "the same axis.",
            ))  # fmt: skip
            return result(in_axes=in_axes_n, devices_used=size, per_device_in_shapes=per_in)
        fn = fn.build(axis_name)

    import jax
    import jax.numpy as jnp

    structs = tuple(jax.ShapeDtypeStruct(s, jnp.dtype(d)) for s, d in zip(shapes, dts, strict=True))
    try:
        out, varies = _trace(fn, structs, in_axes_n, axis_name)
    except NameError as err:
        m = re.search(r"unbound axis name: (\S+?)[\s.]", str(err) + " ")
        missing = m.group(1) if m else "?"
        problems.append(Problem(
            "unbound_axis_name",
            f"f uses a collective over axis {missing!r}, but pmap's axis_name is "
            f"{axis_name!r}.",
            f"Pass axis_name={missing!r} to pmap (or use the same name in the collective).",
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=size, per_device_in_shapes=per_in)
    except Exception as err:  # the function rejects these per-device shapes
        shown = ", ".join(f"{n} {fmt_shape(s)}" for n, s in zip(names, per_in, strict=True))
        problems.append(Problem(
            "function_rejects_shapes",
            f"Each device would call f with {shown}, and f cannot take that: "
            f"{_first_line(err)}",
            "Change the shapes (or in_axes) so that one device's slice is what f expects.",
        ))  # fmt: skip
        return result(in_axes=in_axes_n, devices_used=size, per_device_in_shapes=per_in)

    # shapes are tuples, and tuples are pytree nodes too: work on the flat leaves
    out_leaves, treedef = jax.tree.flatten(out)
    per_leaves = [tuple(leaf.shape[1:]) for leaf in out_leaves]
    per_out = treedef.unflatten(per_leaves)
    out_dtypes = treedef.unflatten([str(leaf.dtype) for leaf in out_leaves])
    if out_axes is None:
        if varies:
            problems.append(Problem(
                "out_axes_none_varies",
                "out_axes=None says every device returns the same value, but f's output "
                "differs from device to device. JAX 0.10 does not raise here: it silently "
                "returns device 0's value (jit(vmap(f)) would raise).",
                "Use out_axes=0 to stack every device's result, or make the output equal on "
                "every device with a collective such as lax.psum or lax.all_gather.",
            ))  # fmt: skip
        global_out = per_out
    elif out_axes < 0:
        rank = len(per_leaves[0]) if per_leaves else 0
        problems.append(Problem(
            "negative_out_axes",
            f"out_axes={out_axes} is negative; pmap in JAX 0.10 does not support it and "
            "returns a wrongly shaped result instead of raising.",
            f"Use the non-negative axis, e.g. out_axes={out_axes % (rank + 1)}.",
        ))  # fmt: skip
        global_out = None
    elif any(out_axes > len(leaf) for leaf in per_leaves):
        worst = min(len(leaf) for leaf in per_leaves)
        shown = fmt_shape(per_leaves[0]) if len(per_leaves) == 1 else str(per_out)
        problems.append(Problem(
            "out_axes_out_of_range",
            f"out_axes={out_axes}, but each device returns shape {shown}: the stacked "
            f"result has rank {worst + 1}, so out_axes can be 0 to {worst}.",
            f"Use out_axes between 0 and {worst}.",
        ))  # fmt: skip
        global_out = None
    else:
        global_out = treedef.unflatten(
            [leaf[:out_axes] + (size,) + leaf[out_axes:] for leaf in per_leaves]
        )
    copies = 1 if out_axes is None else size
    huge = [leaf for leaf in per_leaves if math.prod(leaf) * copies > MAX_ELEMENTS]
    if huge:
        count = math.prod(huge[0]) * copies
        problems.append(Problem(
            "output_too_large",
            f"f's result would have {fmt_count(count)} elements (each device returns "
            f"{fmt_shape(huge[0])}, on {size} devices); pmapviz refuses outputs above "
            f"{MAX_ELEMENTS:,} (2**40) elements, far below what XLA can index.",
            "Use smaller sizes: check which axes f combines (e.g. x @ w multiplies the rows of "
            "x by the columns of w).",
        ))  # fmt: skip
        global_out = None
    notes = []
    if size < n_devices:
        notes.append(
            f"The mapped axis has {size} element(s), so pmap uses the first {size} of the "
            f"{n_devices} devices; the other {n_devices - size} stay idle."
        )
    return result(
        in_axes=in_axes_n, devices_used=size, per_device_in_shapes=per_in,
        out_shapes=global_out, per_device_out_shapes=per_out, out_dtypes=out_dtypes,
        out_varies=varies, notes=tuple(notes),
    )  # fmt: skip


def plan_from_text(settings: dict[str, str], n_devices: int):
    """Parse the explorer's text settings (fn, s0.., d0.., a0.., out, name) and plan them.

    Returns ``(program, plan or None, errors)``: errors are messages about text that is not a
    shape, an axis or a name; the plan is None when there are any."""
    from pmapviz import catalog

    key = settings.get("fn", "")
    if key not in catalog.BY_KEY:
        return None, None, [f"Unknown function {quote(key)}: choose one from the catalog."]
    program = catalog.get(key)
    errors: list[str] = []
    shapes, axes, dtypes = [], [], []

    def attempt(parse, *args):
        try:
            return parse(*args)
        except InputError as err:
            errors.append(str(err))
            return None

    for k, arg in enumerate(program.arg_names):
        shapes.append(attempt(parse_shape, settings.get(f"s{k}", ""), f"shape of {arg}"))
        axes.append(attempt(parse_axis, settings.get(f"a{k}", "0"), f"in_axes of {arg}"))
        dt = settings.get(f"d{k}", "float32")
        dtypes.append(attempt(parse_choice, dt, f"dtype of {arg}", DTYPES))
    out_axes = attempt(parse_axis, settings.get("out", "0"), "out_axes")
    axis_name = attempt(parse_axis_name, settings.get("name", ""))
    if errors:
        return program, None, errors
    p = plan(program, shapes, in_axes=tuple(axes), out_axes=out_axes, axis_name=axis_name,
             n_devices=n_devices, dtypes=dtypes)  # fmt: skip
    return program, p, []
