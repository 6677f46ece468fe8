"""A mesh placement as device-aligned grid rows: the device grid at mesh coordinates (each
device's block) and the array's distinct tiles with the devices holding each (any rank)."""

from __future__ import annotations

from pmapviz.core.drawing import gridhtml
from pmapviz.core.planning.pmapplacement import index_text
from pmapviz.features.meshes import meshplacement


def _slices(block: meshplacement.MeshBlock) -> str:
    return index_text(tuple(slice(a, b) for a, b in block.index))


def mesh_rows(placed: meshplacement.Placement) -> gridhtml.Rows:
    """One row per coordinate of the mesh's first axis; a cell per device: its id and block."""
    mesh, rows = placed.mesh, {}
    position = {b.device: k for k, b in enumerate(placed.blocks)}
    for b in placed.blocks:
        label = f"{mesh.names[0]}={b.coords[0]}"
        rest = ", ".join(f"{n}={c}" for n, c in zip(mesh.names[1:], b.coords[1:], strict=True))
        rows.setdefault(label, []).append(
            (
                gridhtml.titled(f"device {b.device}", _slices(b)),
                position[b.device],
                f"device {b.device} at {rest or mesh.names[0]}: holds {_slices(b)}",
            )
        )
    return list(rows.items())


def tile_rows(placed: meshplacement.Placement) -> gridhtml.Rows:
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
        cell = (
            f"<small>{_slices(meshplacement.MeshBlock(0, (), index))}</small><br>"
            + gridhtml.chips([position[d] for d in devs])
        )
        rows.setdefault(label, []).append((cell, None, f"held by devices {devs}"))
    return list(rows.items())
