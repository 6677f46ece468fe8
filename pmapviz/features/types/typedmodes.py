"""The three modes JAX teaches for one program, built as JAX objects from its parts.

A program is its :class:`ProgramParts`: the global function (what ``jax.jit`` runs on whole
arrays), the per-device function (what ``jax.shard_map`` runs on each device's block), the
arguments as ``jax.ShapeDtypeStruct`` (global shapes: nothing is allocated), each argument's
PartitionSpec and the output's. :func:`build` makes one mode of it on a named mesh:

* **Auto** (``AxisType.Auto``, what ``Mesh(...)`` makes): ``jax.jit(global f)`` with the
  arguments placed by ``NamedSharding``; the compiler chooses how every other value is split,
  and JAX's types carry no sharding (``f32[64,16]``);
* **Explicit** (``AxisType.Explicit``, ``jax.make_mesh``'s default): the same call under
  ``jax.set_mesh``; the sharding is part of every type (``f32[64@data,16]``);
* **Manual**: ``jax.jit(jax.shard_map(per-device f, in_specs, out_specs, check_vma=True))``
  on the Explicit mesh: inside, each device sees its block, and ``{V:data}`` marks a value that
  differs from device to device along ``data``.

JAX is imported inside functions only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.features.meshes import meshviews
from pmapviz.features.meshes.meshspecs import Entry, Mesh, spec_text

MODES = ("auto", "explicit", "manual")
TITLES = {"auto": "Auto", "explicit": "Explicit", "manual": "Manual"}
WORDS = {
    "auto": (
        "Auto: the global view, and the compiler shards. Its types carry no sharding: JAX "
        "prints f32[64,16] whatever the compiler does, so beside each value is the "
        "PartitionSpec XLA chose for it, read from the compiled module."
    ),
    "explicit": (
        "Explicit: the global view with the sharding in the types: f32[64@data,16] is split "
        "over the mesh axis data along its first dimension. JAX works out each output's "
        "sharding while it traces, and refuses an operation whose result would be ambiguous."
    ),
    "manual": (
        "Manual: inside shard_map each device sees its own block (per-device types); "
        "{V:data} marks a value that differs from device to device along data, and every "
        "communication is a collective you wrote."
    ),
}
Spec = tuple[Entry, ...]


@dataclass(frozen=True)
class ProgramParts:
    """One program, ready to be built in any mode: the global function, the per-device one
    (None: the global function itself), the arguments (pytrees of ``jax.ShapeDtypeStruct``,
    global shapes, no sharding), one PartitionSpec per argument (applied to each of its
    leaves) and Manual's out_specs."""

    global_fn: Callable
    local_fn: Callable | None
    args: tuple
    in_specs: tuple  # per argument: a spec as typed (a tuple of entries) or a PartitionSpec
    out_specs: Any  # Manual's out_specs: a PartitionSpec, or a pytree prefix of them
    code: dict[str, str]  # mode -> how the program is written in that mode


@dataclass(frozen=True)
class ModeProgram:
    """One mode of a program as JAX objects: the function ``jax.jit`` takes (the global f, or
    its shard_map), its arguments placed on the mode's mesh (abstract), and the mesh itself."""

    mode: str
    fn: Callable
    args: tuple
    mesh: Any  # jax.sharding.Mesh
    code: str


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else ValueError naming them."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    return mode


def jax_mesh(mesh: Mesh, mode: str, devices: list | None = None):
    """The JAX mesh of ``mesh`` for ``mode``: Auto axes for Auto, Explicit otherwise (Manual's
    shard_map makes them Manual inside), on this process's first devices."""
    import jax
    from jax.sharding import AxisType

    kind = AxisType.Auto if check_mode(mode) == "auto" else AxisType.Explicit
    devs = meshviews.mesh_devices(mesh, devices)
    return jax.make_mesh(mesh.shape, mesh.names, axis_types=(kind,) * len(mesh.shape), devices=devs)


def partition_spec(spec):
    """A spec as typed (a tuple of entries), or a PartitionSpec already, as a PartitionSpec."""
    from jax.sharding import PartitionSpec

    return spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)


def placed(m, args: tuple, in_specs: tuple[Spec, ...]) -> tuple:
    """Each argument's leaves as ``jax.ShapeDtypeStruct`` placed by its spec on mesh ``m``."""
    import jax
    from jax.sharding import NamedSharding

    out = []
    for arg, spec in zip(args, in_specs, strict=True):
        sharding = NamedSharding(m, partition_spec(spec))
        out.append(
            jax.tree.map(
                lambda s, sh=sharding: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), arg
            )
        )
    return tuple(out)


def build(parts: ProgramParts, mesh: Mesh, mode: str, devices: list | None = None) -> ModeProgram:
    """``parts`` in ``mode`` on ``mesh`` (see the module's docstring)."""
    import jax

    m = jax_mesh(mesh, mode, devices)
    args = placed(m, parts.args, parts.in_specs)
    if mode == "manual":
        body = parts.local_fn or parts.global_fn
        fn = jax.shard_map(
            body,
            mesh=m,
            in_specs=tuple(partition_spec(s) for s in parts.in_specs),
            out_specs=parts.out_specs,
            check_vma=True,
        )
    else:
        fn = parts.global_fn
    return ModeProgram(mode, fn, args, m, parts.code.get(mode, ""))


def mesh_words(mesh: Mesh, mode: str) -> str:
    """The mesh as the mode builds it, in words: 'data=2 x model=4, Explicit axes'."""
    kind = "Auto" if mode == "auto" else "Explicit"
    inside = ", Manual inside shard_map" if mode == "manual" else ""
    return f"{mesh.text()}, {kind} axes{inside}"


def specs_text(specs: tuple[Spec, ...]) -> str:
    """'P('data', None), P()' for a tuple of specs as typed."""
    return ", ".join(spec_text(tuple(s)) for s in specs)


def specs_tuple(specs: tuple[Spec, ...]) -> str:
    """The specs as a Python tuple: '(P('data', None),)', '(P('data', None), P())'."""
    return f"({specs_text(specs)}{',' if len(specs) == 1 else ''})"
