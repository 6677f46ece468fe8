"""A named mesh and where each argument's blocks go: the problems JAX would refuse (with
fixes), then, per argument, the device grid at mesh coordinates (each device's block) and the
array's tiles (which devices hold each one)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import fmt_shape, quote
from pmapviz.core.ui import grids, presenter
from pmapviz.features.meshes import meshgrids, meshplacement, meshspecs


def problems(mesh: meshspecs.Mesh, args: list) -> bool:
    """One error box per problem, with its fix; True when there were any."""
    found = [
        (name, p) for name, shape, spec in args for p in meshspecs.problems(mesh, shape, spec, name)
    ]
    for name, p in found:
        st.error(f"**{name}**: {p.message}\n\n**Fix:** {p.fix}", icon=":material/block:")
    return bool(found)


def show(placed: list[meshplacement.Placement], names: list[str], slot) -> None:
    """Per argument: the mesh grid and the tiles; the first argument's mesh grid goes in the
    presenter's slot."""
    for k, (p, name) in enumerate(zip(placed, names, strict=True)):
        rep = (
            f"; replicated over {', '.join(p.replicated_over)}"
            if p.replicated_over
            else "; every device holds a different block"
        )
        where = presenter.picture(slot) if k == 0 else st.container()
        with where:
            st.subheader(f"{name}: {fmt_shape(p.shape)} {meshspecs.spec_text(p.spec)}")
            st.markdown(
                f"Each device holds {fmt_shape(p.local_shape)}{rep}."
                + (
                    ""
                    if p.from_jax
                    else " Planned for a mesh bigger than this server "
                    "(index arithmetic, checked against JAX in tests)."
                )
            )
            grids.show(
                meshgrids.mesh_rows(p),
                f"{name} {fmt_shape(p.shape)} placed by "
                f"{meshspecs.spec_text(p.spec)} on the mesh {p.mesh.text()}: each device "
                f"holds {fmt_shape(p.local_shape)}{rep}",
            )
        if len(p.shape) >= 1:
            with st.expander(f"The tiles of {name}: which devices hold each block"):
                grids.show(
                    meshgrids.tile_rows(p), f"the distinct blocks of {name} and their devices"
                )


def mesh_note(mesh: meshspecs.Mesh, n_devices: int) -> None:
    """A note where the mesh needs more devices than this server: planned from shapes."""
    if mesh.devices > n_devices:
        st.info(
            f"The mesh {quote(mesh.text())} has {mesh.devices} devices and this server "
            f"{n_devices}: the placement below is planned from shapes alone.",
            icon=":material/info:",
        )
