"""A named mesh and where each argument's blocks go: the problems JAX would refuse (with
fixes), then, per argument, the device grid at mesh coordinates (each device's block) and the
array's tiles (which devices hold each one)."""

from __future__ import annotations

import streamlit as st

from pmapviz import meshplacement, meshspecs
from pmapviz.placement import index_text
from pmapviz.ui import grids, presenter
from pmapviz.valuetext import fmt_shape, quote


def problems(mesh: meshspecs.Mesh, args: list) -> bool:
    """One error box per problem, with its fix; True when there were any."""
    found = [
        (name, p) for name, shape, spec in args for p in meshspecs.problems(mesh, shape, spec, name)
    ]
    for name, p in found:
        st.error(f"**{name}**: {p.message}\n\n**Fix:** {p.fix}", icon=":material/block:")
    return bool(found)


def _slices(block: meshplacement.Block) -> str:
    return index_text(tuple(slice(a, b) for a, b in block.index))


def mesh_rows(placed: meshplacement.Placement) -> grids.Rows:
    """One row per coordinate of the mesh's first axis; a cell per device: its id and block."""
    mesh, rows = placed.mesh, {}
    position = {b.device: k for k, b in enumerate(placed.blocks)}
    for b in placed.blocks:
        label = f"{mesh.names[0]}={b.coords[0]}"
        rest = ", ".join(f"{n}={c}" for n, c in zip(mesh.names[1:], b.coords[1:], strict=True))
        rows.setdefault(label, []).append(
            (
                grids.titled(f"device {b.device}", _slices(b)),
                position[b.device],
                f"device {b.device} at {rest or mesh.names[0]}: holds {_slices(b)}",
            )
        )
    return list(rows.items())


def tile_rows(placed: meshplacement.Placement) -> grids.Rows:
    """The array's distinct blocks, a row per range of its first split dimension (any rank),
    each with the devices that hold it: more than one device means the block is replicated."""
    position = {b.device: k for k, b in enumerate(placed.blocks)}
    holders: dict[tuple, list[int]] = {}
    for b in placed.blocks:
        holders.setdefault(b.index, []).append(b.device)
    split = [d for d in range(len(placed.shape)) if len({i[d] for i in holders}) > 1]
    rows: dict[str, list] = {}
    for index, devs in sorted(holders.items()):
        if split:
            a, b = index[split[0]]
            label = f"rows {a}:{b}" if split[0] == 0 else f"dim {split[0]} {a}:{b}"
        else:
            label = "all"
        cell = f"<small>{_slices(meshplacement.Block(0, (), index))}</small><br>" + grids.chips(
            [position[d] for d in devs]
        )
        rows.setdefault(label, []).append((cell, None, f"held by devices {devs}"))
    return list(rows.items())


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
                mesh_rows(p),
                f"{name} {fmt_shape(p.shape)} placed by "
                f"{meshspecs.spec_text(p.spec)} on the mesh {p.mesh.text()}: each device "
                f"holds {fmt_shape(p.local_shape)}{rep}",
            )
        if len(p.shape) >= 1:
            with st.expander(f"The tiles of {name}: which devices hold each block"):
                grids.show(tile_rows(p), f"the distinct blocks of {name} and their devices")


def mesh_note(mesh: meshspecs.Mesh, n_devices: int) -> None:
    """A note where the mesh needs more devices than this server: planned from shapes."""
    if mesh.devices > n_devices:
        st.info(
            f"The mesh {quote(mesh.text())} has {mesh.devices} devices and this server "
            f"{n_devices}: the placement below is planned from shapes alone.",
            icon=":material/info:",
        )
