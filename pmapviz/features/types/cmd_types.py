"""python -m pmapviz types: a program's every equation with its type as JAX prints it, in Auto,
Explicit and Manual modes, and the communication the compiled program has for each."""

from __future__ import annotations

import argparse

from pmapviz.core.base import valueparse
from pmapviz.core.base.valuetext import quote
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import _print, _settings, _start
from pmapviz.features.meshes import meshspecs
from pmapviz.features.types import typedcatalog, typedhtml, typedprogram, typedtext, typesettings

# the Meshes program's flags and the page's keys they set (the page's own parsers read them)
MESH_FLAGS = {
    "mesh": "--mesh",
    "axis_names": "--axis-names",
    "global_f": "--global-f",
    "local_f": "--local-f",
    "f_args": "--f-args",
    "out_spec": "--out-spec",
}
MESH_KEYS = {
    "mesh": "mesh",
    "axis_names": "names",
    "global_f": "gf",
    "local_f": "lf",
    "f_args": "margs",
    "out_spec": "mout",
}


def _types_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--program",
        default="meshes",
        help=f"one of {', '.join(typedcatalog.NAMES)} (default meshes: the Meshes page's f; "
        "an explorer function's key: its example, as pmap maps it)",
    )
    p.add_argument(
        "--mode",
        default="explicit",
        help="auto, explicit, manual, several (auto,manual) or all (default explicit)",
    )
    p.add_argument("--mesh", default=None, help="meshes: the mesh's axis sizes, e.g. 2x4")
    p.add_argument("--axis-names", default=None, help="meshes: one name per axis, e.g. data,model")
    p.add_argument(
        "--shape", action="append", metavar="SHAPE", help="meshes: an argument's global shape"
    )
    p.add_argument(
        "--spec",
        action="append",
        metavar="SPEC",
        help="meshes: its PartitionSpec, once per --shape",
    )
    p.add_argument("--f-args", default=None, help="meshes: f's argument names, e.g. x,w")
    p.add_argument("--global-f", default=None, help="meshes: f for Auto and Explicit, e.g. x @ w")
    p.add_argument("--local-f", default=None, help="meshes: the per-device f for Manual")
    p.add_argument("--out-spec", default=None, help="meshes: Manual's out_specs")
    p.add_argument("--model", default=None, help="training: linear or mlp")
    p.add_argument("--batch", default=None, help="training: the global batch")
    p.add_argument("--reduction", default=None, help="training: pmean or psum")


def _texts(args: argparse.Namespace, n: int) -> tuple[dict, dict]:
    """The page's texts from the flags (defaults where not given) and each key's flag."""
    schema = typesettings.schema(n)
    texts = schema.defaults()
    labels = {"mode": "--mode"}
    for attr, key in MESH_KEYS.items():
        if getattr(args, attr) is not None:
            texts[key] = getattr(args, attr)
        labels[key] = MESH_FLAGS[attr]
    if args.mesh is not None and args.axis_names is None:
        rank = len(meshspecs.parse_mesh(args.mesh, "--mesh"))
        texts["names"] = ", ".join(meshspecs.DEFAULT_NAMES[:rank])
    shapes, specs = args.shape or [], args.spec or []
    if shapes or specs:
        if len(shapes) != len(specs) or len(shapes) > 3:
            raise valueparse.SettingError(
                f"give --shape and --spec once per argument, at most 3 (got {len(shapes)} "
                f"--shape and {len(specs)} --spec)."
            )
        for k in range(3):
            texts[f"ms{k}"] = shapes[k] if k < len(shapes) else ""
            texts[f"p{k}"] = specs[k] if k < len(specs) else "P()"
            labels[f"ms{k}"], labels[f"p{k}"] = f"--shape {k + 1}", f"--spec {k + 1}"
    for attr, key in (("model", "model"), ("batch", "batch"), ("reduction", "red")):
        if getattr(args, attr) is not None:
            texts[key] = getattr(args, attr)
        labels[key] = f"--{attr}"
    return texts, labels


def cmd_types(args: argparse.Namespace) -> int:
    """Every equation's type in the modes asked for (exit 1: a mode JAX refused)."""
    device_settings = _settings(args)
    _start(device_settings, args)
    n = devicefacts.facts().local_count
    modes = ["auto", "explicit", "manual"] if args.mode == "all" else args.mode
    modes = typesettings.parse_modes(modes, "--mode")
    source = _source(args, n)
    views = {m: typedprogram.typed(source, m) for m in modes}
    data = {
        "program": source.label,
        "mesh": {"shape": list(source.mesh.shape), "axis_names": list(source.mesh.names)},
        "label": typedhtml.describe(views, source.label),
        "modes": {m: v.to_dict() for m, v in views.items()},
    }
    _print(args.json, data, typedtext.text(views, source.label).splitlines())
    return 1 if any(v.error for v in views.values()) else 0


def _source(args: argparse.Namespace, n: int):
    if args.program not in typedcatalog.NAMES:
        raise valueparse.SettingError(
            f"--program {quote(args.program)}: choose one of {', '.join(typedcatalog.NAMES)}."
        )
    try:
        if args.program in ("meshes", "training"):
            texts, labels = _texts(args, n)
            texts["prog"] = args.program
            schema = typesettings.schema(n)
            values, errors = schema.parse(texts, None, labels)
            if errors:
                raise valueparse.SettingError(errors[0])
            return typedcatalog.from_values(values, texts, n)
        return typedcatalog.named(args.program, n)
    except typedcatalog.Refused as err:
        raise valueparse.SettingError(err.messages[0]) from None
