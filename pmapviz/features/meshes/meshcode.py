"""Code export for named meshes: one runnable script of both views (the global ``jax.jit`` with
NamedSharding and the per-device ``jax.shard_map`` with collectives over named axes) that
checks they agree; for a Meshes example and for your own f. The header and device set-up are
the explorer's (:func:`pmapviz.features.explorer.codegen.header`)."""

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
        "from jax.sharding import NamedSharding, PartitionSpec as P",
        "",
        f"mesh = jax.make_mesh({tuple(mesh.shape)}, {tuple(mesh.names)})  # Explicit axes",
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
