"""The Meshes page's URL state: its mesh, axis names, each axis's type (t0.., Auto, Explicit or
Manual), each argument's global shape and
PartitionSpec (as typed), "your own f" (argument names, the global and per-device bodies,
out_specs), and the TPU slice your f is compiled for (empty: none), with their defaults for this
many devices.
"""

from __future__ import annotations

from pmapviz.core.base import settings, valueparse
from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.expressions import expr
from pmapviz.core.pods import podtarget
from pmapviz.features.meshes.meshspecs import (
    AXIS_TYPES,
    DEFAULT_NAMES,
    DEFAULT_TYPE,
    MAX_MESH_RANK,
    parse_axis_names,
    parse_mesh,
    parse_spec,
    spec_text,
)

MAX_ARGS = 3  # arguments on the page


def default_mesh(n_devices: int) -> tuple[int, ...]:
    """2 x (n/2) when the devices split in two (2x4 for 8), else all on one axis."""
    return (2, n_devices // 2) if n_devices % 2 == 0 and n_devices >= 4 else (n_devices,)


def _check_names(texts) -> None:
    parse_axis_names(texts["names"], len(parse_mesh(texts["mesh"])))


def schema(n_devices: int) -> settings.Schema:
    """The Meshes page: mesh (axis sizes), names (one per axis), t0.. (each axis's type:
    explicit, as ``jax.make_mesh`` gives, auto or manual; a link without them, or with more
    than the mesh has axes, keeps the rest explicit), s0.. (global shapes) and
    p0.. (PartitionSpecs, as typed), your own f's fields, and pod (empty: this machine, else a
    TPU slice your global f is compiled for); an empty shape leaves that argument out."""
    s = settings
    sizes = default_mesh(n_devices)
    names = ", ".join(DEFAULT_NAMES[: len(sizes)])
    first = sizes[0] * 4
    shapes = (f"{first}, 16", f"16, {4 * sizes[-1]}", "")
    w_spec = f"P(None, '{DEFAULT_NAMES[1]}')" if len(sizes) > 1 else "P()"  # 1 axis: w whole
    specs = (f"P('{DEFAULT_NAMES[0]}', None)", w_spec, "P()")

    def shape_or_none(t: str, name: str):
        return valueparse.parse_shape(t, name) if t.strip() else None

    def shown(as_text):  # a typed value back to text; text (from the widgets) as it is
        return lambda v: v if isinstance(v, str) else as_text(v)

    fields = [
        s.text_field(
            "mesh",
            "Mesh",
            "x".join(map(str, sizes)),
            parse_mesh,
            typed=True,
            show=shown(lambda v: "x".join(map(str, v))),
        ),
        s.text_field("names", "Axis names", names),
        *type_fields(),
    ]
    for k in range(MAX_ARGS):
        fields += [
            s.text_field(
                f"s{k}",
                f"shape {k + 1}",
                shapes[k],
                shape_or_none,
                typed=True,
                show=shown(lambda v: "" if v is None else ", ".join(map(str, v))),
            ),
            s.text_field(
                f"p{k}", f"spec {k + 1}", specs[k], parse_spec, typed=True, show=shown(spec_text)
            ),
        ]
    fields += [*own_f_fields(len(sizes)), podtarget.pod_field(multislice=True)]
    return s.Schema(tuple(fields), (s.Joint(("mesh", "names"), _check_names),))


def type_fields() -> list:
    """t0, t1, ...: one axis type per mesh axis (a field per axis), explicit by default."""
    return [
        settings.choice_field(f"t{k}", f"axis type {k + 1}", AXIS_TYPES, DEFAULT_TYPE)
        for k in range(MAX_MESH_RANK)
    ]


def axis_types(values, rank: int) -> tuple[str, ...]:
    """The first ``rank`` axis types from parsed settings (t0..)."""
    return tuple(values.get(f"t{k}", DEFAULT_TYPE) for k in range(rank))


def argument_labels(names_text: str, count: int) -> list[str]:
    """What to call the page's arguments: f's argument names when they are valid and one per
    argument, else "argument 1", "argument 2", ..."""
    try:
        names = expr.parse_arg_names(names_text)
    except SettingError:
        names = ()
    return list(names) if len(names) == count else [f"argument {k + 1}" for k in range(count)]


def _arg_names(text: str, name: str) -> None:
    expr.parse_arg_names(text)


def own_f_defaults(rank: int) -> tuple[str, str, str, str]:
    """Your own f on the default mesh: argument names, the global body, the per-device body
    and out_specs. On two axes, x @ w with w's columns split over model: the per-device
    product is a (rows, columns) block, gathered over model. On one axis w is whole."""
    if rank >= 2:
        return (
            "x, w",
            "x @ w",
            f"lax.all_gather(x @ w, '{DEFAULT_NAMES[rank - 1]}', axis=1, tiled=True, "
            "to='invarying')",
            f"P('{DEFAULT_NAMES[0]}', None)",
        )
    return "x, w", "x @ w", "x @ w", f"P('{DEFAULT_NAMES[0]}', None)"


def own_f_fields(rank: int) -> list:
    """The Meshes page's "your own f": args (names), gf (global body), lf (per-device body) and
    out (out_specs, as typed). The bodies are checked by pmapviz.core.expressions.expr when f is
    built."""
    s = settings
    names, gf, lf, out = own_f_defaults(rank)
    return [
        s.text_field("args", "f's arguments", names, _arg_names),
        s.text_field("gf", "global f", gf, max_len=expr.MAX_TEXT),
        s.text_field("lf", "per-device f", lf, max_len=expr.MAX_TEXT),
        s.text_field(
            "out",
            "out_specs",
            out,
            parse_spec,
            typed=True,
            show=lambda v: v if isinstance(v, str) else spec_text(v),
        ),
    ]
