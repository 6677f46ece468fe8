"""A notebook's ``f`` and arguments as a program for a TPU slice
(``pmapviz.compiled(f, *args, topology="v5e:4x4")``): the program given, compiled as given, or
every change said before any figure.

- a plain ``f`` is pmapped as on this machine (``in_axes``, ``out_axes``, ``axis_name``) over the
  slice's devices. pmap maps one entry of the mapped axis to each device, so where that axis is
  not the slice's device count, JAX refuses the call as given: the axis is re-laid to the
  device count, and a :class:`~pmapviz.core.pods.compiledinputs.Change` names the argument, the
  axis, both shapes and JAX's refusal, with the calls that compile the program unchanged;
- an ``f`` with ``.lower`` (``jax.jit(f)``) keeps its own shardings: each argument is laid out as
  it says (a ``jax.Array`` or ``ShapeDtypeStruct`` with a ``NamedSharding`` keeps its
  PartitionSpec, its mesh's axes laid on the slice), or as ``in_specs`` says (PartitionSpecs over
  a 1-D mesh of every device of the slice, named ``axis_name``). Arguments that carry no
  sharding are replicated, nothing is guessed, and a note says so before the figures. On
  several slices (``topology="2 x v5e:4x4"``) that mesh is one slice's: an axis ``'dcn'`` of the
  slice count is prepended, outermost (:func:`pmapviz.core.pods.podprograms.laid_out`), and what
  the specs split over the mesh's first axis is split over ``('dcn', <first>)``; a note names
  the mesh compiled. A pmapped f runs over every slice's devices, slice by slice, and a note
  says what that program is on a ``('dcn', axis_name)`` mesh.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pmapviz.core.pods import compiledinputs, podprograms
from pmapviz.core.pods.compiledinputs import Change
from pmapviz.core.pods.podprograms import Lowered, PodProgram
from pmapviz.core.pods.podtopology import Pod
from pmapviz.core.running.programanalysis import Target
from pmapviz.features.compiled import functionargs


def program_for(
    f: Callable,
    args: tuple,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: str = "i",
    in_specs: Any = None,
) -> PodProgram:
    """The program to compile for a slice (ValueError with the fix for bad arguments)."""
    import jax

    if not args:
        raise ValueError("no arguments: give the arrays (or jax.ShapeDtypeStructs) f takes.")
    name = getattr(f, "__name__", None) or type(f).__name__
    names = leaf_names(f, args)
    if hasattr(f, "lower"):
        specs = _given_specs(f, args, in_specs, axis_name)
        key = f"notebook:{name}:{id(f)}:{_shapes(args)}:{specs!r}:{axis_name}"
        code = f"{name}.lower(*args)  # " + (
            f"in_specs={in_specs!r} on a mesh ({axis_name!r},)"
            if in_specs is not None
            else "each argument laid out by its own sharding"
        )
        return PodProgram(key, name, code, _jit_lower(f, args, specs, names, axis_name))
    if in_specs is not None:
        raise ValueError(
            "in_specs is for a jitted f (it says how jax.jit's arguments are split); a plain f "
            f"is pmapped by in_axes. Fix: pmapviz.compiled(jax.jit({name}), ..., in_specs=...), "
            "or leave in_specs out."
        )
    structs = [jax.tree.map(functionargs.struct, a) for a in args]
    axes = functionargs.axes(in_axes, len(args))
    n = functionargs.mapped_size(structs, axes)
    key = f"notebook:{name}:{id(f)}:{_shapes(args)}:{in_axes}:{out_axes}:{axis_name}"
    shown = axes if len(axes) > 1 else axes[0]
    code = f"jax.pmap({name}, in_axes={shown!r}, axis_name={axis_name!r})"
    target = Target(name, code, f, tuple(structs), axes, out_axes, axis_name, n)
    program = podprograms.from_target(target, key, names)
    return _with_fixes(program, name, names, axes, axis_name)


def _shapes(args: tuple) -> str:
    import jax

    structs = [jax.tree.map(functionargs.struct, a) for a in args]
    return repr([jax.tree.map(lambda s: (s.shape, str(s.dtype)), a) for a in structs])


def leaf_names(f: Callable, args: tuple) -> tuple[str, ...]:
    """Each argument leaf named as the user would index it: ``w``, ``params['b']``, ``args[2]``
    (from f's signature where it names its parameters)."""
    import jax

    try:
        params = [
            p.name
            for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        params = []
    out = []
    for k, a in enumerate(args):
        base = params[k] if k < len(params) else f"args[{k}]"
        for path, _ in jax.tree_util.tree_flatten_with_path(a)[0]:
            out.append(base + jax.tree_util.keystr(path))
    return tuple(out)


def _with_fixes(
    program: PodProgram, name: str, names: tuple[str, ...], axes: tuple, axis_name: str
) -> PodProgram:
    """The pmap program whose re-laid axes each say the calls that compile it unchanged."""
    original = program.lower

    def lower(pod: Pod, b: int | None) -> Lowered:
        low = original(pod, b)
        if not low.changes:
            return low
        specs = ", ".join("P()" if a is None else _spec_text(a, axis_name) for a in axes)
        specs = f"({specs},)" if len(axes) == 1 else f"({specs})"
        shown = axes if len(axes) > 1 else axes[0]
        note = (
            f"To compile {name} unchanged, give the slice the whole mapped axis, split over its "
            f"{pod.n_devices} devices: one call of {name} per entry, as pmap maps them, is "
            f"pmapviz.compiled(jax.jit(jax.vmap({name}, in_axes={shown!r})), "
            f"{', '.join(_arg_list(names, len(axes)))}, topology={pod.name!r}, "
            f"in_specs={specs}); a {name} that takes the whole batch at once (a global-view "
            f"step) is pmapviz.compiled(jax.jit({name}), ..., in_specs={specs})."
        )
        return replace(low, notes=(*low.notes, note))

    return replace(program, lower=lower)


def _arg_list(names: tuple[str, ...], count: int) -> list[str]:
    """One name per argument (a pytree's first leaf's base name)."""
    bases = []
    for n in names:
        base = n.split("[")[0] if not n.startswith("args[") else n.split("]")[0] + "]"
        if base not in bases:
            bases.append(base)
    return (bases + [f"args[{k}]" for k in range(len(bases), count)])[:count]


def _spec_text(axis: int, name: str) -> str:
    return "P(" + ", ".join(["None"] * axis + [repr(name)]) + ")"


# ---------------------------------------------------------------- a jitted f
def _given_specs(f: Callable, args: tuple, in_specs: Any, axis_name: str) -> tuple:
    """Per argument leaf: ``(axis names or None, sizes or None, spec entries or None)`` from
    ``in_specs`` (over a 1-D mesh ``axis_name``), else from the leaf's own NamedSharding or
    PartitionSpec; None where it has none (replicated). ValueError with the fix."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    if in_specs is not None:
        given = tuple(in_specs) if isinstance(in_specs, (tuple, list)) else (in_specs,)
        if len(given) != len(args) or any(
            not (s is None or isinstance(s, PartitionSpec)) for s in given
        ):
            raise ValueError(
                f"in_specs={in_specs!r} does not give one PartitionSpec (or None) for each of "
                f"the {len(args)} argument(s). Fix: e.g. in_specs=(P(), P({axis_name!r})) to "
                f"keep the first whole on every device and split the second's axis 0."
            )
        out = []
        for a, spec in zip(args, given, strict=True):
            entries = () if spec is None else tuple(spec)
            _check_names(entries, (axis_name,), f"in_specs {spec!r}")
            out += [((axis_name,), None, entries)] * len(jax.tree.leaves(a))
        return tuple(out)
    out = []
    for leaf in jax.tree.leaves(args):
        sh = getattr(leaf, "sharding", None)
        if isinstance(sh, NamedSharding):
            mesh = sh.mesh
            out.append((tuple(mesh.axis_names), tuple(mesh.axis_sizes), tuple(sh.spec)))
        elif isinstance(sh, PartitionSpec):
            out.append((None, None, tuple(sh)))
        else:
            out.append(None)
    return tuple(out)


def _check_names(entries: tuple, axes: tuple[str, ...], what: str) -> None:
    used = [a for e in entries for a in ((e,) if isinstance(e, str) else (e or ()))]
    unknown = [a for a in used if a not in axes]
    if unknown:
        raise ValueError(
            f"{what} names the axis {unknown[0]!r}, but the slice's mesh has only "
            f"{', '.join(map(repr, axes))}. Fix: name {axes[0]!r} (axis_name={axes[0]!r}), or "
            f"pass axis_name={unknown[0]!r}."
        )


def _slice_mesh(
    specs: tuple, n: int, axis_name: str
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[Change, ...]]:
    """The slice's mesh: the arguments' own mesh axes (sizes laid on the slice's ``n``
    devices, the first axis taking what the others leave), or one axis ``axis_name``."""
    meshes = {(names, sizes) for names, sizes, _ in filter(None, specs) if names}
    if len({names for names, _ in meshes}) > 1:
        raise ValueError(
            "the arguments' shardings name different meshes "
            f"({' and '.join(str(m[0]) for m in meshes)}). Fix: place every argument on one "
            "mesh, or give in_specs=... over one axis."
        )
    if not meshes:
        names = {a for s in filter(None, specs) for a in _axes_named(s[2])}
        return ((axis_name,), (n,), ()) if names <= {axis_name} else (tuple(sorted(names)), (), ())
    names, sizes = next(iter(meshes))
    if sizes is None:
        return names, (n,), ()
    rest = math.prod(sizes[1:])
    if n % rest:
        raise ValueError(
            f"the arguments' mesh {dict(zip(names, sizes, strict=True))} keeps {rest} devices "
            f"on its other axes, which does not divide the slice's {n}. Fix: a mesh whose axes "
            f"after the first multiply to a divisor of {n}, or in_specs=... over one axis."
        )
    new = ((n // rest), *sizes[1:])
    if tuple(new) == tuple(sizes):
        return names, tuple(new), ()
    words = (
        f"the arguments' mesh {_mesh_text(names, sizes)} laid on the slice's {n} devices as "
        f"{_mesh_text(names, new)}: the first axis takes the devices the others leave"
    )
    return names, tuple(new), (Change("mesh", tuple(sizes), tuple(new), words),)


def _axes_named(entries: tuple) -> list[str]:
    return [a for e in entries for a in ((e,) if isinstance(e, str) else (e or ()))]


def _mesh_text(names, sizes) -> str:
    return "(" + ", ".join(f"{a!r}: {s}" for a, s in zip(names, sizes, strict=True)) + ")"


def _jit_lower(
    f: Callable, args: tuple, specs: tuple, names: tuple[str, ...], axis_name: str
) -> Callable[[Pod, int | None], Lowered]:
    def lower(pod: Pod, _batch: int | None) -> Lowered:
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        axes, sizes, changes = _slice_mesh(specs, pod.n_devices // pod.n_slices, axis_name)
        if not sizes:
            raise ValueError(
                f"the arguments' PartitionSpecs name {', '.join(map(repr, axes))} but no mesh "
                f"says their sizes. Fix: give in_specs over one axis {axis_name!r}, or place "
                "the arguments on a mesh."
            )
        if pod.n_slices > 1 and podprograms.DCN in axes:
            raise ValueError(
                f"the mesh {axes} names an axis {podprograms.DCN!r}, the axis added across "
                f"{pod.n_slices} slices. Fix: rename yours (e.g. 'data'), or pick one slice."
            )
        # one slice: the mesh as given; several: 'dcn' outermost, the first axis over both
        grid, mesh_names, grid_sizes, spec_of = podprograms.laid_out(
            pod, tuple(zip(axes, sizes, strict=True))
        )
        mesh = Mesh(grid, mesh_names)
        leaves, tree = jax.tree.flatten(list(args))
        placed, layouts, blocks = [], [], []
        for leaf, spec in zip(leaves, specs, strict=True):
            s = functionargs.struct(leaf)
            entries = spec_of(spec[2]) if spec else ()
            sharding = NamedSharding(mesh, PartitionSpec(*entries))
            placed.append(jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding))
            layouts.append(podprograms.layout_text(entries))
            blocks.append(sharding.shard_shape(s.shape))
        with jax.set_mesh(mesh):
            low = f.lower(*jax.tree.unflatten(tree, placed))
        notes = () if any(spec and any(spec[2]) for spec in specs) else (_nothing_split(axis_name),)
        mesh_axes = tuple(zip(mesh_names, grid_sizes, strict=True))
        if len(mesh_names) > len(axes):  # several slices: the mesh compiled, named
            notes = (podprograms.dcn_note(axes[0], mesh_axes), *notes)
        order = tuple(int(d.id) for d in mesh.devices.flat)
        found = compiledinputs.inputs_of(low, names, layouts, blocks)
        return Lowered(low, order, mesh_axes, found, changes, notes=notes)

    return lower


def _nothing_split(axis_name: str) -> str:
    return (
        "No argument carries a sharding and no in_specs were given, so nothing is split: "
        "every device holds every argument whole and computes all of f (jax.jit's arguments "
        "are laid out as they are placed; pmapviz does not guess). To split, e.g. a batch's "
        f"rows over the slice: in_specs=(P(), P({axis_name!r})) with "
        "P = jax.sharding.PartitionSpec."
    )
