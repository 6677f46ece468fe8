"""The Meshes page's settings: the mesh (axis sizes, names and each axis's type) and, per
argument, a global shape and a PartitionSpec as typed (widgets ``me_`` + the URL key, seeded
from the link and written back to it)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import valueparse
from pmapviz.core.ui import url_state
from pmapviz.features.meshes import meshsettings, meshspecs

P = "me_"
MAX_RANK = meshspecs.MAX_MESH_RANK
MESH_KEYS = ["mesh", "names", *(f"{c}{k}" for k in range(meshsettings.MAX_ARGS) for c in "sp")]
TYPE_HELP = (
    "Explicit: the sharding is part of each array's type (jax.typeof), jax.make_mesh's "
    "default. Auto: types carry no sharding and the compiler chooses, jax.sharding.Mesh(...)'s "
    "default. Manual: what jax.shard_map makes of the axis (each device's block)."
)


def show(n_devices: int) -> tuple[meshspecs.Mesh, list[tuple[str, tuple[int, ...], tuple]]]:
    """The boxes; returns the mesh and the arguments given (name, shape, spec). Text that is
    not a mesh, a name list, a shape or a spec stops the page with one message per box."""
    schema = meshsettings.schema(n_devices)
    url_state.load(P, schema)
    with st.container(border=True):
        c1, c2 = st.columns([1, 2])
        c1.text_input(
            "Mesh (axis sizes)",
            key=P + "mesh",
            max_chars=40,
            help=f"e.g. 2x4; this server has {n_devices} devices (a bigger mesh is "
            "planned from shapes alone)",
        )
        c2.text_input(
            "Axis names", key=P + "names", max_chars=120, help="one per mesh axis, e.g. data, model"
        )
        _type_boxes()
        for k in range(meshsettings.MAX_ARGS):
            a, b = st.columns([1, 2])
            a.text_input(
                f"Shape of argument {k + 1}",
                key=f"{P}s{k}",
                max_chars=80,
                help="its global shape, e.g. 8, 16 (empty: no such argument)",
            )
            b.text_input(
                f"PartitionSpec of argument {k + 1}",
                key=f"{P}p{k}",
                max_chars=200,
                help="as in code: P('data', None), P(('data', 'model')), P(), or "
                "the short form data, None",
            )
    url_state.save(P, schema)
    values = url_state.parsed(P, schema, MESH_KEYS + [f"t{k}" for k in range(MAX_RANK)])
    names = meshspecs.parse_axis_names(values["names"], len(values["mesh"]))  # checked by parsed
    types = meshsettings.axis_types(values, len(names))
    given = [
        (values[f"s{k}"], values[f"p{k}"])
        for k in range(meshsettings.MAX_ARGS)
        if values[f"s{k}"] is not None
    ]
    labels = meshsettings.argument_labels(st.session_state.get(P + "args", ""), len(given))
    return meshspecs.Mesh(values["mesh"], names, types), [
        (n, *a) for n, a in zip(labels, given, strict=True)
    ]


def _type_boxes() -> None:
    """One axis type per mesh axis, named after it, while the mesh and names read (else the
    page stops at them, below)."""
    try:
        rank = len(meshspecs.parse_mesh(st.session_state.get(P + "mesh")))
        names = meshspecs.parse_axis_names(st.session_state.get(P + "names"), rank)
    except valueparse.SettingError:
        return
    for k, (col, name) in enumerate(zip(st.columns(max(rank, 2)), names, strict=False)):
        col.selectbox(
            f"Axis type of {name}",
            meshspecs.AXIS_TYPES,
            key=f"{P}t{k}",
            format_func=str.capitalize,
            help=TYPE_HELP,
        )
