"""The Multi-process page's settings: the launch's limits are the ones a launch checks."""

import pytest

from pmapviz.features.cluster import cluster, clustersettings


def test_the_schema_offers_exactly_the_processes_and_devices_a_launch_accepts():
    fields = {f.key: f for f in clustersettings.schema().fields}
    offered = fields["p"].parse("4", "p"), fields["d"].parse("1", "d")
    assert offered == ("4", "1")  # choices: the text the widget shows
    for bad in (clustersettings.MIN_PROCESSES - 1, clustersettings.MAX_PROCESSES + 1):
        with pytest.raises(Exception, match=str(bad)):
            fields["p"].parse(str(bad), "p")
        with pytest.raises(cluster.ClusterError):
            cluster.validate(bad, 1, 10.0)


def test_a_link_with_too_many_processes_falls_back_to_the_default():
    texts, notes = clustersettings.schema().from_query({"p": "9", "kind": "cpu"})
    assert texts["p"] == "2" and texts["kind"] == "cpu" and len(notes) == 1
