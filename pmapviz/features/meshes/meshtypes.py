"""Axis types on a named mesh, read from JAX: what ``jax.typeof`` says of each argument placed by
its PartitionSpec under the mesh's axis types, under ``jax.make_mesh``'s default and under
``jax.sharding.Mesh(...)``'s default, and what each device sees inside ``jax.shard_map``.

The defaults are read from the installed JAX (``jax.make_mesh(...).axis_types``,
``Mesh(...).axis_types``): Explicit and Auto in JAX 0.9 and later, the trap of the two
constructors. With Explicit axes an array's type carries its sharding (``float32[8@data,16]``);
with Auto it does not (``float32[8,16]``) and the compiler chooses. Manual is what
``jax.shard_map`` makes of an axis: each device's block, varying over it (``{V:data}``); a
mesh axis cannot be Manual outside it, and :func:`read` says so in JAX's words.

:func:`read` also runs ``jax.shard_map`` on an argument not yet placed by its spec under each
set of axis types: JAX refuses it when every axis is Explicit (its words, and
``jax.reshard``, the fix it names, run), and places it itself otherwise. Everything is traced
on ``jax.ShapeDtypeStruct`` inputs: nothing is allocated, and a mesh bigger than this process
is read on a ``jax.sharding.AbstractMesh``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from pmapviz.core.base.valuetext import first_line
from pmapviz.core.devices import devicefacts
from pmapviz.features.meshes.meshplacement import jax_axis_types
from pmapviz.features.meshes.meshspecs import Entry, Mesh, axes_of, only_axes, spec_text

Spec = tuple[Entry, ...]
Args = tuple[tuple[str, tuple[int, ...], Spec], ...]  # (name, global shape, spec)
DTYPE = "float32"  # the page's arguments


@dataclass(frozen=True)
class ArgTypes:
    """One argument's types as JAX prints them (``str(jax.typeof(x))``)."""

    name: str
    shape: tuple[int, ...]
    spec: Spec
    yours: str  # under the mesh's axis types (a Manual axis is Explicit outside shard_map)
    make_mesh: str  # under jax.make_mesh's default axis types
    mesh_default: str  # under jax.sharding.Mesh(...)'s default axis types
    per_device: str  # inside jax.shard_map over the Manual axes (every axis when none is)


@dataclass(frozen=True)
class Unplaced:
    """``jax.shard_map(f, in_specs=spec)`` on an argument not placed by ``spec``, under one
    set of axis types: JAX's refusal (empty: it ran), the type each device saw, and with the
    fix (``jax.reshard(x, spec)`` first) the same two."""

    label: str  # "your axis types", "jax.make_mesh", "Mesh(...)"
    types: tuple[str, ...]
    refused: str  # JAX's words, "" when it ran
    per_device: str
    fix_refused: str = ""
    fix_per_device: str = ""


@dataclass(frozen=True)
class MeshTypes:
    """The mesh's axis types, the two constructors' defaults, every argument's types and the
    un-placed argument's runs."""

    mesh: Mesh
    make_mesh_default: tuple[str, ...]  # read from JAX
    mesh_default: tuple[str, ...]
    args: tuple[ArgTypes, ...]
    unplaced_name: str | None  # the argument shard_map is run on (None: every spec is P())
    unplaced_spec: Spec
    unplaced: tuple[Unplaced, ...]
    manual_refused: str  # JAX's words for jax.set_mesh on a mesh with Manual axes ("": none)
    abstract: bool  # read on a jax.sharding.AbstractMesh (more devices than this process)

    @property
    def shard_map_axes(self) -> tuple[str, ...]:
        """The axes the per-device types are read inside: the Manual ones, else every axis."""
        return self.mesh.manual or self.mesh.names


def read(mesh: Mesh, args: Args) -> MeshTypes:
    """Every argument's types and the un-placed run, read from JAX (traces only; kept)."""
    here = len(devicefacts.local_devices_for_work())
    return _read(mesh, tuple((n, tuple(s), tuple(p)) for n, s, p in args), here)


@functools.lru_cache(maxsize=64)
def _read(mesh: Mesh, args: Args, here: int) -> MeshTypes:
    """:func:`read` for ``here`` devices in this process's device set (part of the key)."""
    made, plain = constructor_defaults(mesh.names)
    yours = _jax_mesh(mesh, mesh.axis_types)
    by_make, by_plain = _jax_mesh(mesh, made), _jax_mesh(mesh, plain)
    inside = frozenset(mesh.manual or mesh.names)
    rows = tuple(
        ArgTypes(
            name,
            shape,
            spec,
            type_of(yours, shape, spec),
            type_of(by_make, shape, spec),
            type_of(by_plain, shape, spec),
            per_device_type(yours, shape, spec, inside),
        )
        for name, shape, spec in args
    )
    first = next(((n, s, p) for n, s, p in args if any(axes_of(e) for e in p)), None)
    runs = ()
    if first is not None:
        runs = tuple(
            unplaced(_jax_mesh(mesh, t), first[1], first[2], label, t)
            for label, t in _flavours(mesh, made, plain)
        )
    return MeshTypes(
        mesh,
        made,
        plain,
        rows,
        first[0] if first else None,
        first[2] if first else (),
        runs,
        manual_refusal(mesh) if mesh.manual else "",
        here < mesh.devices,
    )


def _flavours(mesh: Mesh, made: tuple, plain: tuple) -> list[tuple[str, tuple[str, ...]]]:
    """(label, axis types) for the page's types and the two constructors' defaults, one entry
    per distinct set of types (the page's own outside shard_map: Manual as Explicit)."""
    outside = tuple("explicit" if t == "manual" else t for t in mesh.axis_types)
    found: list[tuple[list[str], tuple[str, ...], tuple[str, ...]]] = []
    for label, types, key in (
        ("your axis types", mesh.axis_types, outside),
        ("jax.make_mesh", made, made),
        ("Mesh(...)", plain, plain),
    ):
        same = next((f for f in found if f[2] == key), None)
        if same is None:
            found.append(([label], types, key))
        else:
            same[0].append(label)
    return [(" = ".join(labels), types) for labels, types, _ in found]


# ---------------------------------------------------------------- read from JAX
def constructor_defaults(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The axis types ``jax.make_mesh`` and ``jax.sharding.Mesh(...)`` give axes of these
    names when none are asked for, read from both on one device of this process."""
    import jax
    import numpy as np
    from jax.sharding import Mesh as JaxMesh

    dev = devicefacts.local_devices_for_work()[0]
    ones = (1,) * len(names)
    made = jax.make_mesh(ones, names, devices=[dev]).axis_types
    plain = JaxMesh(np.array([dev]).reshape(ones), names).axis_types
    return _words(made), _words(plain)


def _words(axis_types) -> tuple[str, ...]:
    return tuple(t.name.lower() for t in axis_types)


def _jax_mesh(mesh: Mesh, types: tuple[str, ...]):
    """The JAX mesh with these axis types (Manual as Explicit: outside shard_map) on this
    process's devices, or an AbstractMesh when it has too few."""
    import jax
    from jax.sharding import AbstractMesh

    kinds = jax_axis_types(types)
    devs = devicefacts.local_devices_for_work()
    if len(devs) < mesh.devices:
        return AbstractMesh(mesh.shape, mesh.names, axis_types=kinds)
    return jax.make_mesh(mesh.shape, mesh.names, devices=devs[: mesh.devices], axis_types=kinds)


def _struct(m, shape: tuple[int, ...], spec: Spec):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    return jax.ShapeDtypeStruct(shape, DTYPE, sharding=NamedSharding(m, PartitionSpec(*spec)))


def type_of(m, shape: tuple[int, ...], spec: Spec) -> str:
    """``str(jax.typeof(x))`` of a float32 array of ``shape`` placed by ``spec`` on ``m``."""
    import jax

    return str(jax.typeof(_struct(m, shape, spec)))


def per_device_type(m, shape: tuple[int, ...], spec: Spec, axes: frozenset) -> str:
    """The type each device's block has inside ``jax.shard_map(..., axis_names=axes)`` (those
    axes Manual), as ``jax.typeof`` prints it there; or JAX's refusal, in its words."""
    import jax
    from jax.sharding import PartitionSpec

    seen: list[str] = []

    def probe(block):
        seen.append(str(jax.typeof(block)))
        return ()

    mapped = jax.shard_map(
        probe,
        mesh=m,
        in_specs=(PartitionSpec(*only_axes(spec, axes)),),
        out_specs=(),
        axis_names=set(axes),
    )
    try:
        jax.eval_shape(mapped, _struct(m, shape, spec))
    except Exception as err:  # noqa: BLE001 - JAX's refusal, shown as said
        return f"JAX says: {first_line(err)}"
    return seen[-1]


def unplaced(m, shape: tuple[int, ...], spec: Spec, label: str, types: tuple[str, ...]):
    """:class:`Unplaced`: ``jax.jit(jax.shard_map(f, in_specs=spec))`` traced on an array
    placed ``P()`` (as one made under ``jax.set_mesh`` without a spec is), under
    ``jax.set_mesh(m)``; refused, the same after ``jax.reshard(x, spec)``."""
    import jax
    from jax.sharding import PartitionSpec

    spec_p = PartitionSpec(*spec)
    seen: list[str] = []

    def f(block):
        seen.append(str(jax.typeof(block)))
        return block

    mapped = jax.shard_map(f, mesh=m, in_specs=(spec_p,), out_specs=spec_p)
    x = _struct(m, shape, ())

    def run(fn) -> tuple[str, str]:
        try:
            with _context(m):
                jax.jit(fn).trace(x)
        except Exception as err:  # noqa: BLE001 - JAX's refusal, shown as said
            return first_line(err, 600), ""
        return "", seen[-1]

    refused, typ = run(mapped)
    if not refused:
        return Unplaced(label, types, "", typ)
    fix_refused, fix_typ = run(lambda a: mapped(jax.reshard(a, spec_p)))
    return Unplaced(label, types, refused, "", fix_refused, fix_typ)


def _context(m):
    """``jax.set_mesh(m)``, as the script would say it (an AbstractMesh: its abstract form)."""
    import jax
    from jax.sharding import AbstractMesh

    if isinstance(m, AbstractMesh):
        return jax.sharding.use_abstract_mesh(m)
    return jax.set_mesh(m)


def manual_refusal(mesh: Mesh) -> str:
    """What ``jax.set_mesh`` says of the mesh with its Manual axes, read from a real call (on
    this process's devices; a mesh bigger than them is asked with its sizes all 1): it
    refuses them, since ``jax.shard_map`` makes an axis Manual."""
    import jax
    from jax.sharding import AxisType

    kinds = {"auto": AxisType.Auto, "explicit": AxisType.Explicit, "manual": AxisType.Manual}
    devs = devicefacts.local_devices_for_work()
    shape = mesh.shape if len(devs) >= mesh.devices else (1,) * len(mesh.shape)
    m = jax.make_mesh(
        shape,
        mesh.names,
        devices=devs[: math.prod(shape)],
        axis_types=tuple(kinds[t] for t in mesh.axis_types),
    )
    try:
        with jax.set_mesh(m):
            pass
    except Exception as err:  # noqa: BLE001 - JAX's refusal, shown as said
        return first_line(err, 600)
    return ""


def table_rows(found: MeshTypes) -> list[dict]:
    """Per argument: its spec and its types, each column named by what it was read under."""
    axes = ", ".join(repr(a) for a in found.shard_map_axes)
    yours = ", ".join(t.capitalize() for t in found.mesh.axis_types)
    if found.mesh.manual:
        yours += "; outside shard_map"
    return [
        {
            "argument": r.name,
            "PartitionSpec": spec_text(r.spec),
            f"your axis types ({yours})": r.yours,
            "jax.make_mesh's default": r.make_mesh,
            "Mesh(...)'s default": r.mesh_default,
            f"each device, inside shard_map over {axes}": r.per_device,
        }
        for r in found.args
    ]
