"""The Types page's view for notebooks: ``pmapviz.types(f, *args, mesh=..., mode=...)``, every
equation of f's jaxpr with its type as JAX prints it, in the modes asked for, each compiled once
with the communication it has per equation.

``f`` is a Python function (its arguments arrays, ``jax.ShapeDtypeStruct`` or pytrees of them:
only their shapes and dtypes are used, nothing is allocated) or the name of a program pmapviz
knows (an explorer function's key, ``"meshes"``, ``"training"``, ``"seed"``). Text that cannot
be read raises ``ValueError`` with one line saying what to give instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import valueparse
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.features.meshes import meshspecs
from pmapviz.features.types import (
    typedcatalog,
    typedhtml,
    typedmodes,
    typedprogram,
    typedsources,
    typedtext,
    typesettings,
)
from pmapviz.features.types.typedmodes import MODES, TITLES

MAX_ARGS = 16
MAX_LEAVES = 256


def types(
    f: Any,
    *args: Any,
    mesh: Any = None,
    mode: Any = "explicit",
    axis_names: Any = None,
    in_specs: Any = None,
    out_specs: Any = None,
    local: Any = None,
) -> View:
    """Every equation of ``f`` with its type as JAX prints it, in each mode asked for.

    ``mesh``: a ``jax.sharding.Mesh`` (its shape and axis names, on this process's first
    devices; each mode sets its axis types), axis sizes (``(2, 4)``, ``"2x4"``) with ``axis_names``
    (default: data, model, ...), or None (the mesh of the first argument placed by a
    NamedSharding, else all devices on one axis ``i``). ``mode``: ``"auto"``, ``"explicit"``,
    ``"manual"``, several (``"auto,manual"``, a list) or ``"all"``. ``in_specs``: one
    PartitionSpec per argument (``P('data', None)``, ``"P('data', None)"``, ``("data", None)``;
    default: each argument's own NamedSharding's, else replicated). Manual runs
    ``jax.shard_map(local or f, in_specs, out_specs)``; ``out_specs`` defaults to each output
    split along its first dimension over the mesh axes it varies over (said in the notes); a
    list (or a tuple of PartitionSpecs) gives one spec per output.

    ``data``: ``program``, ``mesh``, ``notes`` and ``modes`` (per mode: every equation's
    ``primitive``, ``out_types`` (JAX's text), ``source``, ``collectives`` and for Auto
    ``chosen`` (XLA's PartitionSpec); the inputs' and outputs' types; JAX's ``error``)."""
    notes = list(notebookviews.ready())
    modes = _modes(mode)
    n = len(devicefacts.local_devices_for_work())
    if isinstance(f, str):
        if args:
            raise SettingError(f"{f!r} names a program pmapviz knows: give no arguments.")
        try:
            source = typedcatalog.named(f, n)
        except typedcatalog.Refused as err:
            raise SettingError(err.messages[0]) from None
    elif callable(f):
        source, more = _function_source(
            f, args, mesh, axis_names, in_specs, out_specs, local, modes
        )
        notes += more
    else:
        raise SettingError(
            f"f is a {type(f).__name__}: give a Python function or a program's name "
            f"({', '.join(typedcatalog.NAMES)})."
        )
    views = {m: typedprogram.typed(source, m) for m in modes}
    label = typedhtml.describe(views, source.label)
    body = (
        "".join(notebookviews.paragraph(t) for t in notes)
        + notebookviews.paragraph(source.label)
        + typedhtml.legend_html(source.mesh)
        + typedhtml.grid_html(views, source.mesh, label)
    )
    data = {
        "program": source.label,
        "mesh": {"shape": list(source.mesh.shape), "axis_names": list(source.mesh.names)},
        "notes": notes,
        "modes": {m: v.to_dict() for m, v in views.items()},
    }
    title = f"Types of {source.label[:80]}: " + ", ".join(TITLES[m] for m in modes)
    return View(title, body, typedtext.text(views, source.label), data, source=views)


def _modes(mode: Any) -> list[str]:
    if isinstance(mode, str) and mode.strip().lower() == "all":
        return list(MODES)
    return typesettings.parse_modes(mode, "mode")


def _mesh(mesh: Any, axis_names: Any, args: tuple) -> meshspecs.Mesh:
    """The named mesh from what was given (see :func:`types`)."""
    if mesh is None:
        mesh = _arguments_mesh(args)
        if mesh is None:
            return meshspecs.Mesh((len(devicefacts.local_devices_for_work()),), ("i",))
    if hasattr(mesh, "axis_names") and hasattr(mesh, "devices"):
        return meshspecs.Mesh(tuple(mesh.devices.shape), tuple(map(str, mesh.axis_names)))
    if isinstance(mesh, int) and not isinstance(mesh, bool):
        mesh = (mesh,)
    text = "x".join(str(s) for s in mesh) if isinstance(mesh, tuple | list) else mesh
    sizes = meshspecs.parse_mesh(text, "mesh")
    if axis_names is None:
        axis_names = meshspecs.DEFAULT_NAMES[: len(sizes)]
    if isinstance(axis_names, tuple | list):
        axis_names = ", ".join(str(a) for a in axis_names)
    return meshspecs.Mesh(sizes, meshspecs.parse_axis_names(axis_names, len(sizes)))


def _arguments_mesh(args: tuple):
    import jax
    from jax.sharding import NamedSharding

    for leaf in jax.tree.leaves(args):
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    return None


def _abstract(args: tuple) -> tuple:
    """Each argument's leaves as ``jax.ShapeDtypeStruct`` (shape and dtype only), each
    checked: at most MAX_ELEMENTS elements, MAX_RANK dimensions."""
    import jax

    leaves = jax.tree.leaves(args)
    if len(args) > MAX_ARGS or len(leaves) > MAX_LEAVES:
        raise SettingError(f"f gets {len(leaves)} arrays; at most {MAX_LEAVES}.")

    def one(x):
        shape = tuple(getattr(x, "shape", None) or ())
        if len(shape) > valueparse.MAX_RANK or math.prod(shape) > valueparse.MAX_ELEMENTS:
            raise SettingError(
                f"An argument of shape {fmt_shape(shape)[:80]} has more than "
                f"{valueparse.MAX_ELEMENTS:,} elements or {valueparse.MAX_RANK} dimensions: "
                "give a smaller shape."
            )
        return jax.ShapeDtypeStruct(shape, getattr(x, "dtype", None) or jax.numpy.float32)

    return tuple(jax.tree.map(one, a) for a in args)


def _spec(value: Any, name: str) -> tuple:
    """A spec given as text, a tuple of entries, a PartitionSpec or None (replicated)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return meshspecs.parse_spec(value, name)
    from jax.sharding import PartitionSpec

    if isinstance(value, tuple | PartitionSpec):
        return meshspecs.parse_spec(meshspecs.spec_text(tuple(value)), name)
    raise SettingError(f"{name} is a {type(value).__name__}: give a PartitionSpec or its text.")


def _in_specs(in_specs: Any, args: tuple) -> tuple:
    if in_specs is None:
        return tuple(_own_spec(a) for a in args)
    given = list(in_specs) if isinstance(in_specs, list | tuple) else [in_specs]
    if len(given) != len(args):
        raise SettingError(f"in_specs has {len(given)} entries; f gets {len(args)} arguments.")
    return tuple(_spec(s, f"in_specs[{k}]") for k, s in enumerate(given))


def _own_spec(arg: Any) -> tuple:
    import jax
    from jax.sharding import NamedSharding

    leaves = jax.tree.leaves(arg)
    sharding = getattr(leaves[0], "sharding", None) if leaves else None
    return tuple(sharding.spec) if isinstance(sharding, NamedSharding) else ()


def _checked(m: meshspecs.Mesh, structs: tuple, specs: tuple) -> None:
    import jax

    for k, (arg, spec) in enumerate(zip(structs, specs, strict=True)):
        for leaf in jax.tree.leaves(arg):
            found = meshspecs.problems(m, tuple(leaf.shape), spec, f"argument {k + 1}")
            if found:
                raise SettingError(f"{found[0].message} Fix: {found[0].fix}")


def _function_source(f, args, mesh, axis_names, in_specs, out_specs, local, modes):
    """(the source, notes) for a Python function (see :func:`types`)."""
    m = _mesh(mesh, axis_names, args)
    if m.devices > len(devicefacts.local_devices_for_work()):
        raise SettingError(
            f"The mesh {m.text()} needs {m.devices} devices; this process has "
            f"{len(devicefacts.local_devices_for_work())}: give a smaller mesh."
        )
    structs = _abstract(args)
    specs = _in_specs(in_specs, args)
    _checked(m, structs, specs)
    notes: list[str] = []
    outs = None
    if "manual" in modes:
        outs, inferred = _out_specs(out_specs, local or f, structs, specs, m)
        if inferred:
            notes.append(f"Manual's out_specs, from the outputs' varying axes: {inferred}.")
    name = getattr(f, "__name__", "f")
    label = f"{name}({', '.join(_arg_text(s) for s in structs)}) on {m.text()}"
    return typedsources.from_function(f, structs, m, specs, outs, local, label), notes


def _arg_text(struct) -> str:
    import jax

    leaves = jax.tree.leaves(struct)
    if len(leaves) == 1:
        return f"{leaves[0].dtype}{list(leaves[0].shape)}"
    return f"a pytree of {len(leaves)} arrays"


@dataclass(frozen=True)
class _Out:
    """One output leaf of the per-device f: the mesh axes it varies over, its rank."""

    varying: frozenset
    ndim: int


def _varying(aval) -> frozenset:
    """The mesh axes an abstract value varies over (JAX 0.10: ``.mat.varying``; ``.vma``
    where it exists)."""
    vma = getattr(aval, "vma", None)
    if vma is None:
        vma = getattr(getattr(aval, "mat", None), "varying", frozenset())
    return frozenset(vma)


def _out_specs(out_specs, body, structs, specs, m) -> tuple[Any, str]:
    """Manual's out_specs: as given, or each output leaf split along its first dimension over
    the mesh axes JAX says it varies over (``jax.typeof(out)``), read by tracing once."""
    import jax
    from jax.sharding import PartitionSpec

    if out_specs is not None:
        several = isinstance(out_specs, list) or (
            isinstance(out_specs, tuple) and any(isinstance(o, PartitionSpec) for o in out_specs)
        )
        if several:  # one spec per output
            return tuple(PartitionSpec(*_spec(o, "out_specs")) for o in out_specs), ""
        return PartitionSpec(*_spec(out_specs, "out_specs")), ""
    seen: dict = {}

    def probe(*blocks):
        out = body(*blocks)
        seen["out"] = jax.tree.map(lambda v: _Out(_varying(jax.typeof(v)), jax.numpy.ndim(v)), out)
        return ()

    mesh = typedmodes.jax_mesh(m, "manual")
    placed = typedmodes.placed(mesh, structs, specs)
    in_specs = tuple(PartitionSpec(*s) for s in specs)
    try:
        with jax.set_mesh(mesh):
            jax.eval_shape(
                jax.shard_map(probe, mesh=mesh, in_specs=in_specs, out_specs=()), *placed
            )
    except Exception:  # noqa: BLE001 - the Manual column shows JAX's own words for it
        return PartitionSpec(), ""

    def spec_of(leaf: _Out):
        axes = tuple(a for a in m.names if a in leaf.varying)
        if not axes or not leaf.ndim:
            return PartitionSpec()
        return PartitionSpec(axes if len(axes) > 1 else axes[0])

    outs = jax.tree.map(spec_of, seen["out"])
    words = ", ".join(meshspecs.spec_text(tuple(spec_of(o))) for o in jax.tree.leaves(seen["out"]))
    return outs, words
