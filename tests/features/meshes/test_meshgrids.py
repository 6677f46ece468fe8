"""The mesh grid and the tiles are drawn from a placement (any rank), read from JAX."""

from pmapviz.features.meshes import meshgrids, meshplacement, meshspecs

MESH = meshspecs.Mesh((2, 4), ("data", "model"))


def test_mesh_rows_put_each_device_at_its_coordinates():
    placed = meshplacement.place(MESH, (8, 16), ("data", None))
    rows = meshgrids.mesh_rows(placed)
    assert [label for label, _ in rows] == ["data=0", "data=1"]
    assert all(len(cells) == 4 for _, cells in rows)
    text, position, tip = rows[1][1][2]
    assert "device 6" in text and "[4:8, 0:16]" in text and position == 6
    assert tip == "device 6 at model=2: holds [4:8, 0:16]"


def test_tiles_list_each_block_once_with_every_device_that_holds_it():
    placed = meshplacement.place(MESH, (8, 16), ("data", None))
    rows = meshgrids.tile_rows(placed)
    assert [label for label, _ in rows] == ["rows 0:4", "rows 4:8"]
    ((cell, _, tip),) = rows[0][1]
    assert tip == "held by devices [0, 1, 2, 3]" and cell.count("<span") == 4


def test_an_n_d_array_gets_a_row_per_range_of_its_first_split_dimension():
    placed = meshplacement.place(MESH, (3, 8, 16), (None, "data", "model"))
    rows = meshgrids.tile_rows(placed)
    assert [label for label, _ in rows] == ["dim 1 0:4", "dim 1 4:8"]
    assert all(len(cells) == 4 for _, cells in rows)  # one tile per model block
    truth = {b.index for b in placed.blocks}  # the placement, read from JAX
    assert len(truth) == 8 and "[0:3, 4:8, 12:16]" in rows[1][1][3][0]
