"""python -m pmapviz mesh: a named mesh and PartitionSpecs, which device holds which block, and
each argument's type under the mesh's axis types (``--axis-types explicit,auto``) as
``jax.typeof`` prints it."""

from __future__ import annotations

import argparse

from pmapviz.core.base import valueparse, valuetext
from pmapviz.core.devices import devicefacts, devicewords
from pmapviz.core.devices.cliflags import _print, _settings, _start
from pmapviz.features.meshes import meshplacement, meshsettings, meshspecs, meshtypes


def _mesh_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mesh",
        default=None,
        help="the mesh's axis sizes, e.g. 2,4 or 2x4 "
        "(default: 2 x n/2 of the devices, or n on one axis)",
    )
    p.add_argument(
        "--axis-names",
        default=None,
        metavar="NAMES",
        help="one name per mesh axis, e.g. data,model (default: data, model, ...)",
    )
    p.add_argument(
        "--axis-types",
        default=None,
        metavar="TYPES",
        help="one type per mesh axis: explicit, auto or manual, e.g. explicit,auto "
        "(default: explicit for every axis, as jax.make_mesh gives)",
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="SHAPE",
        help="an argument's global shape, e.g. 8,16 (once per argument)",
    )
    p.add_argument(
        "--spec",
        action="append",
        metavar="SPEC",
        help="its PartitionSpec as you would write it: \"P('data', None)\", "
        "\"P(('data', 'model'))\", \"P()\", or data,None (once per --shape)",
    )
    p.add_argument(
        "--plan-devices",
        default=None,
        metavar="N",
        help="plan for a mesh of N devices from shapes alone (N = the mesh's size)",
    )


def _mesh_inputs(args: argparse.Namespace, n_devices: int | None) -> tuple:
    """The mesh, the shapes and the specs from the flags, through the settings layer (no
    ``--mesh``: the default mesh of ``n_devices``, as the Meshes page's; nothing at all: the
    page's example arguments too)."""
    if args.mesh is None and n_devices is None:
        raise valueparse.SettingError("give --mesh with --plan-devices, e.g. --mesh 4x4.")
    sizes = (
        meshspecs.parse_mesh(args.mesh, "--mesh")
        if args.mesh is not None
        else meshsettings.default_mesh(n_devices)
    )
    names = meshspecs.parse_axis_names(
        args.axis_names or ", ".join(meshspecs.DEFAULT_NAMES[: len(sizes)]),
        len(sizes),
        "--axis-names",
    )
    types = meshspecs.parse_axis_types(args.axis_types or "", len(sizes), "--axis-types")
    shape_texts, spec_texts = args.shape or [], args.spec or []
    if args.mesh is None and not shape_texts and not spec_texts:  # the Meshes page's example
        page = meshsettings.schema(n_devices).defaults()
        shape_texts = [page[f"s{k}"] for k in range(meshsettings.MAX_ARGS) if page[f"s{k}"].strip()]
        spec_texts = [page[f"p{k}"] for k in range(len(shape_texts))]
    shapes = [valueparse.parse_shape(t, f"--shape {k + 1}") for k, t in enumerate(shape_texts)]
    specs = [meshspecs.parse_spec(t, f"--spec {k + 1}") for k, t in enumerate(spec_texts)]
    if not shapes or len(specs) != len(shapes):
        raise valueparse.SettingError(
            f"give --shape and --spec once per argument (got "
            f"{len(shapes)} --shape and {len(specs)} --spec)."
        )
    return meshspecs.Mesh(sizes, names, types), shapes, specs


def cmd_mesh(args: argparse.Namespace) -> int:
    """Which device holds which block of each argument on a named mesh (exit 1: a spec fails)."""
    device_settings = _settings(args)
    if args.plan_devices is not None:
        n = valueparse.parse_int(args.plan_devices, "--plan-devices", 1, meshspecs.MAX_MESH_DEVICES)
        mesh, shapes, specs = _mesh_inputs(args, n if args.mesh is None else None)
        if n != mesh.devices:
            raise valueparse.SettingError(
                f"--plan-devices {n}, but the mesh {mesh.text()} has {mesh.devices} devices: "
                "give that number."
            )
        jax_devices = None
    else:
        _start(device_settings, args)
        have = devicefacts.facts().local_count
        mesh, shapes, specs = _mesh_inputs(args, have)
        if have < mesh.devices:
            raise valueparse.SettingError(
                f"the mesh {mesh.text()} needs {mesh.devices} devices; "
                f"{devicefacts.facts().devices_phrase()} here: "
                f"{devicewords.more_devices(devicefacts.facts(), mesh.devices)}, or plan with "
                f"--plan-devices {mesh.devices}."
            )
        jax_devices = devicefacts.local_devices_for_work()
    found = [
        (k, p)
        for k, (shape, spec) in enumerate(zip(shapes, specs, strict=True))
        for p in meshspecs.problems(mesh, shape, spec, f"argument {k + 1}")
    ]
    placed = (
        []
        if found
        else [
            meshplacement.place(mesh, shape, spec, jax_devices)
            for shape, spec in zip(shapes, specs, strict=True)
        ]
    )
    data = {
        "mesh": {
            "shape": list(mesh.shape),
            "axis_names": list(mesh.names),
            "devices": meshplacement.device_grid(mesh, placed[0].blocks) if placed else None,
        },
        "arguments": [p.to_dict() for p in placed],
        "problems": [
            {"argument": k + 1, "code": p.code, "message": p.message, "fix": p.fix}
            for k, p in found
        ],
    }
    typed = None
    data["axis_types"] = {"mesh": list(mesh.axis_types)}  # planned: not read from JAX
    if placed and jax_devices is not None:  # JAX is up: the types, read from it
        typed = meshtypes.read(
            mesh, [(f"argument {k + 1}", p.shape, p.spec) for k, p in enumerate(placed)]
        )
        data["axis_types"] = _types_data(typed)
        for arg, t in zip(data["arguments"], typed.args, strict=True):
            arg |= {"type": t.yours, "per_device_type": t.per_device}
    _print(args.json, data, _mesh_lines(mesh, placed, found, typed))
    return 1 if found else 0


def _types_data(typed: meshtypes.MeshTypes) -> dict:
    """The axis types: the mesh's, the two constructors' defaults (read from JAX) and the axes
    the per-device types are read inside ``jax.shard_map`` over."""
    return {
        "mesh": list(typed.mesh.axis_types),
        "jax.make_mesh": list(typed.make_mesh_default),
        "Mesh": list(typed.mesh_default),
        "shard_map_axes": list(typed.shard_map_axes),
    }


def _mesh_lines(
    mesh: meshspecs.Mesh, placed: list, found: list, typed: meshtypes.MeshTypes | None = None
) -> list[str]:
    lines = [f"mesh {mesh.text()} ({mesh.devices} device{'s' * (mesh.devices != 1)})"]
    if typed is not None:
        lines.append(
            f"axis types {', '.join(typed.mesh.axis_types)} (jax.make_mesh's default: "
            f"{', '.join(typed.make_mesh_default)}; Mesh(...)'s: {', '.join(typed.mesh_default)})"
        )
    elif placed and not placed[0].from_jax:
        lines.append(
            f"axis types {', '.join(mesh.axis_types)} (types are read from JAX on this "
            "machine's devices; planned from shapes alone, none are read)"
        )
    for k, p in found:
        lines += [f"argument {k + 1}: {p.message}", f"  fix: {p.fix}"]
    for k, p in enumerate(placed):
        rep = f"; replicated over {', '.join(p.replicated_over)}" if p.replicated_over else ""
        lines.append(
            f"argument {k + 1}: {valuetext.fmt_shape(p.shape)} "
            f"{meshspecs.spec_text(p.spec)}: each device holds "
            f"{valuetext.fmt_shape(p.local_shape)}{rep}"
        )
        if typed is not None:
            t = typed.args[k]
            lines.append(
                f"  jax.typeof: {t.yours}; each device inside shard_map over "
                f"{', '.join(typed.shard_map_axes)}: {t.per_device}"
            )
        lines += [
            f"  device {b.device} at {b.coords}: "
            + "["
            + ", ".join(f"{a}:{z}" for a, z in b.index)
            + "]"
            for b in p.blocks
        ]
    return lines
