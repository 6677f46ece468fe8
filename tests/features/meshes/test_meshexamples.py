"""The ready examples timed over every mesh shape of the devices: both views on each shape,
the collectives named; a shape the arrays do not divide is listed, not run."""

from pmapviz.features.meshes import meshexamples


def test_the_mesh_sweep_runs_both_views_on_every_shape_and_names_the_collectives():
    assert meshexamples.sweep_shapes(8) == [(1, 8), (2, 4), (4, 2), (8, 1)]
    rows = meshexamples.mesh_sweep(meshexamples.EXAMPLE["matmul_psum"], repeat=2)
    assert [(r["mesh"], r["view"]) for r in rows] == [
        (m, v) for m in ("1 x 8", "2 x 4", "4 x 2", "8 x 1") for v in ("global", "per-device")
    ]
    assert all(r["agrees"] and r["median ms"] > 0 for r in rows)
    by_mesh = {r["mesh"]: r["collectives"] for r in rows if r["view"] == "per-device"}
    assert by_mesh["2 x 4"].startswith("all-reduce over model: 2 groups of 4")
    # model has one device: XLA still emits the all-reduce, over groups of one (a no-op)
    assert by_mesh["8 x 1"].startswith("all-reduce within each device alone (8 groups of 1)")


def test_a_mesh_shape_the_arrays_do_not_divide_is_listed_not_run():
    ex = meshexamples.EXAMPLE["column_sums"]  # x (16, 8) as P('data', 'model')
    (row,) = meshexamples.mesh_sweep(ex, shapes=[(1, 16)], repeat=1)  # model=16 splits 8 columns
    assert row["view"] == "-" and row["median ms"] is None
    assert "16 does not divide 8" in row["collectives"]
