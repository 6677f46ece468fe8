"""What the Multi-process page shows of a local cluster before it starts."""

from pmapviz.features.cluster import clusterview


def test_the_plan_picture_has_each_process_and_its_local_devices():
    rows, label = clusterview.plan_grid(3, 2)
    assert [r[0] for r in rows] == ["process 0", "process 1", "process 2"]
    assert all([c[0] for c in cells] == ["local device 0", "local device 1"] for _, cells in rows)
    assert label == "The cluster to launch: 3 processes x 2 local devices = 6 global devices"
