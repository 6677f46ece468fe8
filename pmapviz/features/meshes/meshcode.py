"""Code export for named meshes: one runnable script of both views (the global ``jax.jit`` with
NamedSharding and the per-device ``jax.shard_map`` with collectives over named axes) that
checks they agree, for a Meshes example and for your own f; and one that prints each
argument's type (``jax.typeof``) under the mesh's axis types and inside ``jax.shard_map``
(:func:`types_script`). Every script says the axis types explicitly
(``jax.make_mesh(..., axis_types=(AxisType.Explicit, ...))``). The header and device set-up
are the explorer's (:func:`pmapviz.features.explorer.codegen.header`)."""

from __future__ import annotations

from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.expr import ExprProgram
from pmapviz.features.explorer.codegen import header
from pmapviz.features.meshes import meshexamples, meshspecs


def mesh_script(ex: meshexamples.Example, facts: devicefacts.Facts | None = None) -> str:
    """A runnable script of one Meshes example: the mesh, the arguments placed by their
    PartitionSpecs, f in the global view (``jax.jit`` with NamedSharding) and in the per-device
    view (``jax.shard_map`` with collectives over named axes), and a check that they agree."""
    names = ("x", "w")[: len(ex.shapes)]
    return _mesh_views(
        f"both views on a named mesh: {ex.title}",
        ex.mesh,
        names,
        ex.shapes,
        ex.in_specs,
        ex.out_spec,
        ex.global_code,
        ex.local_code,
        facts,
    )


def mesh_own_script(
    mesh: meshspecs.Mesh,
    args: list,
    g: ExprProgram,
    loc: ExprProgram,
    out_spec: tuple,
    facts: devicefacts.Facts | None = None,
) -> str:
    """Your own f on a mesh (the Meshes page's arguments ``(label, shape, spec)`` and the two
    checked expressions), as the same runnable script as :func:`mesh_script`."""
    return _mesh_views(
        "both views of your own f on a named mesh",
        mesh,
        g.arg_names,
        [shape for _, shape, _ in args],
        [spec for _, _, spec in args],
        out_spec,
        g.source,
        loc.source,
        facts,
    )


def _mesh_views(
    title: str,
    mesh: meshspecs.Mesh,
    names,
    shapes,
    in_specs,
    out_spec,
    global_code: str,
    local_code: str,
    facts,
) -> str:
    args = ", ".join(names)
    unpack = args + ("," if len(names) == 1 else "")  # x, = ... for one argument
    specs = ", ".join(meshspecs.spec_text(sp) for sp in in_specs) + (
        "," if len(in_specs) == 1 else ""
    )
    out = meshspecs.spec_text(out_spec)
    lines = [
        header(title, mesh.devices, facts),
        "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P",
        "",
        *mesh_lines(mesh),
        "rng = np.random.default_rng(0)",
        *(
            f"{n} = rng.standard_normal({tuple(shape)}).astype(np.float32)"
            for n, shape in zip(names, shapes, strict=True)
        ),
        f"specs = ({specs})",
        f"{unpack} = (jax.device_put(a, NamedSharding(mesh, s))",
        f"{' ' * len(unpack)}    for a, s in zip(({unpack}), specs))",
        "",
        "",
        f"def f({args}):  # the global view: written for the whole arrays",
        f"    return {global_code}",
        "",
        "",
        f"def f_local({args}):  # the per-device view: this device's blocks; collectives over",
        "    # the mesh's named axes",
        f"    return {local_code}",
        "",
        "",
        "with jax.set_mesh(mesh):",
        f"    glob = jax.jit(f, out_shardings=NamedSharding(mesh, {out}))({args})",
        f"    local = jax.jit(jax.shard_map(f_local, mesh=mesh, in_specs=specs, out_specs={out}))(",
        f"        {args})",
        'print("global view:", glob.shape, glob.sharding.spec)',
        "for shard in local.addressable_shards:",
        '    print("  ", shard.device, "holds", shard.index, shard.data.shape)',
        "diff = float(np.max(np.abs(np.asarray(glob) - np.asarray(local))))",
        'print("max |global - per-device| =", diff)',
        "assert diff <= 1e-4, diff",
    ]
    return "\n".join(lines) + "\n"


def code_types(types: tuple[str, ...]) -> str:
    """Axis types as code: ``(AxisType.Explicit, AxisType.Auto)``."""
    words = [f"AxisType.{t.capitalize()}" for t in types]
    return "(" + ", ".join(words) + ("," if len(words) == 1 else "") + ")"


def mesh_lines(mesh: meshspecs.Mesh) -> list[str]:
    """``mesh = jax.make_mesh(...)`` with its axis types said (a Manual axis is Explicit
    there, with a comment: ``jax.set_mesh`` refuses a Manual axis, ``jax.shard_map`` makes
    one)."""
    outside = tuple("explicit" if t == "manual" else t for t in mesh.axis_types)
    lines = [
        f"mesh = jax.make_mesh({tuple(mesh.shape)}, {tuple(mesh.names)},",
        f"                     axis_types={code_types(outside)})",
    ]
    if mesh.manual:
        lines.append(
            f"# {', '.join(mesh.manual)}: Manual only inside jax.shard_map (jax.set_mesh "
            "refuses a Manual axis)"
        )
    return lines


def types_script(mesh: meshspecs.Mesh, args: list, facts: devicefacts.Facts | None = None) -> str:
    """A runnable script that places the Meshes page's arguments ``(label, shape, spec)`` on
    the mesh with its axis types and prints each one's ``jax.typeof``, then inside
    ``jax.shard_map`` over the Manual axes (every axis when none is) the type of each
    device's block."""
    names = [n if n.isidentifier() else f"a{k}" for k, (n, _, _) in enumerate(args)]
    inside = mesh.manual or mesh.names
    manual = set(inside)
    specs = [meshspecs.spec_text(meshspecs.only_axes(sp, manual)) for _, _, sp in args]
    lines = [
        header("each argument's type on a named mesh", mesh.devices, facts),
        "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P",
        "",
        *mesh_lines(mesh),
        *(
            f"{n} = jax.device_put(np.zeros({tuple(shape)}, np.float32), "
            f"NamedSharding(mesh, {meshspecs.spec_text(spec)}))"
            for n, (_, shape, spec) in zip(names, args, strict=True)
        ),
        *(f'print("{n}:", jax.typeof({n}))' for n in names),
        "",
        "",
        f"def per_device({', '.join(names)}):  # each device's blocks; {', '.join(inside)} Manual",
        *(f'    print("each device\'s {n}:", jax.typeof({n}))' for n in names),
        "    return ()",
        "",
        "",
        "with jax.set_mesh(mesh):",
        "    jax.shard_map(",
        "        per_device,",
        f"        in_specs=({', '.join(specs)}{',' if len(specs) == 1 else ''}),",
        "        out_specs=(),",
        "        axis_names={" + ", ".join(repr(a) for a in inside) + "},",
        f"    )({', '.join(names)})",
    ]
    return "\n".join(lines) + "\n"
