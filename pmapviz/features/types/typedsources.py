"""The programs pmapviz knows, each as a :class:`TypedSource`: a named mesh and the
:class:`pmapviz.features.types.typedmodes.ProgramParts` its three modes are built from.

* :func:`from_target`: a per-device function as pmap maps it (an explorer function or your own
  f under a valid plan, the training step, the seed's dot): the global view is
  ``jax.vmap(f, in_axes, out_axes, axis_name)`` over the whole arrays, each mapped axis split
  over a one-axis mesh named after ``axis_name``; the per-device view is pmap's own shape in
  shard_map: the block's mapped axis squeezed, f, the axis put back.
* :func:`from_mesh_f`: the Meshes page's f, its two bodies on its own mesh and specs.
* :func:`from_function`: any Python function (the notebook's), with a per-device body of its
  own or the same one.

Nothing here traces or compiles: :mod:`pmapviz.features.types.typedprogram` does, per mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.running import programanalysis
from pmapviz.core.running.programanalysis import Target
from pmapviz.features.meshes.meshownf import Args, MeshF
from pmapviz.features.meshes.meshspecs import Mesh, spec_text
from pmapviz.features.types import typedmodes
from pmapviz.features.types.typedmodes import ModeProgram, ProgramParts

DEFAULT_AXIS = "i"  # the mesh axis of a pmap-style program without an axis_name


@dataclass(frozen=True)
class TypedSource:
    """A program and its mesh: ``key`` identifies it for caches (None: never cached),
    ``label`` says what it is, ``parts()`` builds its JAX parts when a mode is asked for."""

    key: tuple | None
    label: str
    mesh: Mesh
    parts: Callable[[], ProgramParts]

    def mode(self, mode: str, devices: list | None = None) -> ModeProgram:
        """This program in ``mode`` on its mesh (JAX objects; nothing traced yet)."""
        return typedmodes.build(self.parts(), self.mesh, mode, devices)


# ---------------------------------------------------------------- pmap-style programs
def _axes_text(axes) -> str:
    return repr(tuple(axes)) if isinstance(axes, tuple | list) else repr(axes)


def target_parts(target: Target) -> ProgramParts:
    """The parts of a pmap-style target (see the module's docstring)."""
    import jax

    name = target.axis_name or DEFAULT_AXIS
    per_block = programanalysis.per_block(target)
    global_fn = jax.vmap(
        target.fn, in_axes=target.in_axes, out_axes=target.out_axes, axis_name=target.axis_name
    )
    in_specs, out_specs = programanalysis.block_specs(target, name)
    mapped = f"in_axes={_axes_text(target.in_axes)}, out_axes={target.out_axes!r}" + (
        f", axis_name={target.axis_name!r}" if target.axis_name else ""
    )
    specs = ", ".join(spec_text(tuple(s)) for s in in_specs)
    code = {
        "auto": f"jax.jit(jax.vmap(f, {mapped})), arguments placed by {specs}",
        "explicit": f"jax.jit(jax.vmap(f, {mapped})) under jax.set_mesh, arguments {specs}",
        "manual": (
            f"jax.jit(jax.shard_map(block -> squeeze -> f -> expand_dims, in_specs="
            f"{typedmodes.specs_tuple(in_specs)}, "
            f"out_specs=...)), as JAX runs jax.pmap(f, {mapped})"
        ),
    }
    return ProgramParts(global_fn, per_block, tuple(target.args), in_specs, out_specs, code)


def from_target(target: Target, key: tuple | None) -> TypedSource:
    """A pmap-style target on a one-axis mesh of its ``n`` devices."""
    mesh = Mesh((target.n,), (target.axis_name or DEFAULT_AXIS,))
    code = target.code if "\n" not in target.code.strip() else ""
    label = f"{target.label}: {code}" if code else target.label
    return TypedSource(key, label, mesh, lambda: target_parts(target))


# ---------------------------------------------------------------- the Meshes page's f
def mesh_f_parts(args: Args, f: MeshF) -> ProgramParts:
    """The parts of the Meshes page's f: the global body for Auto and Explicit, the
    per-device body for Manual (raises ExprError when a body does not parse)."""
    import jax
    import jax.numpy as jnp

    g, loc = f.programs()
    structs = tuple(jax.ShapeDtypeStruct(shape, jnp.float32) for _, shape, _ in args)
    specs = tuple(tuple(spec) for _, _, spec in args)
    names = ", ".join(g.arg_names)
    code = {
        "auto": f"jax.jit(lambda {names}: {g.source})",
        "explicit": f"jax.jit(lambda {names}: {g.source}) under jax.set_mesh",
        "manual": (
            f"jax.jit(jax.shard_map(lambda {names}: {loc.source}, in_specs="
            f"{typedmodes.specs_tuple(specs)}, out_specs={spec_text(f.out_spec)}))"
        ),
    }
    out = typedmodes.partition_spec(f.out_spec)
    return ProgramParts(g.build(), loc.build(), structs, specs, out, code)


def from_mesh_f(mesh: Mesh, args: Args, f: MeshF) -> TypedSource:
    """The Meshes page's f on its mesh (checked when a mode is built)."""
    shapes = ", ".join(f"{label} {tuple(shape)} {spec_text(spec)}" for label, shape, spec in args)
    key = ("mesh", mesh, tuple((tuple(s), tuple(p)) for _, s, p in args), f)
    label = f"f({f.arg_names}) = {f.global_body} on {mesh.text()}: {shapes}"
    return TypedSource(key, label, mesh, lambda: mesh_f_parts(args, f))


# ---------------------------------------------------------------- any Python function
def from_function(
    fn: Callable,
    args: tuple,
    mesh: Mesh,
    in_specs: tuple,
    out_specs: Any,
    local_fn: Callable | None = None,
    label: str = "f",
) -> TypedSource:
    """A Python function on ``mesh``: ``args`` pytrees of ``jax.ShapeDtypeStruct`` (global
    shapes), one spec per argument, Manual's ``out_specs``; ``local_fn`` the per-device body
    (default: ``fn`` itself). Never cached (a function has no stable key)."""
    name = getattr(fn, "__name__", "f")
    given = tuple(tuple(s) for s in in_specs)
    specs = typedmodes.specs_text(given)
    code = {
        "auto": f"jax.jit({name}), arguments placed by {specs}",
        "explicit": f"jax.jit({name}) under jax.set_mesh, arguments {specs}",
        "manual": (
            f"jax.jit(jax.shard_map({getattr(local_fn, '__name__', name)}, "
            f"in_specs={typedmodes.specs_tuple(given)}, out_specs=...))"
        ),
    }

    def parts() -> ProgramParts:
        return ProgramParts(fn, local_fn, tuple(args), tuple(in_specs), out_specs, code)

    return TypedSource(None, label, mesh, parts)
