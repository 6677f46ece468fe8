"""What XLA compiled: the collectives beside the model, their groups or pairs on the devices,
the program at three levels, four variants; and the hidden communication on request."""

from pmapviz.features.collectives import collectiveanalysis
from tests.core.ui.conftest import render


def _analysis(a):
    from pmapviz.core.ui import compiled_analysis
    from pmapviz.core.ui.shell import device_report

    compiled_analysis.show(a, device_report().labels)


def test_psum_over_groups_shows_its_replica_groups_as_a_picture():
    a = collectiveanalysis.analyse_collective("psum", 4, 4, [[0, 1], [2, 3]])
    at = render(_analysis, a)
    assert not at.exception
    assert "on 4 device(s)" in at.caption[0].value
    grid = next(m.value for m in at.markdown if "role='img'" in m.value)
    assert "replica groups: 0 1; 2 3" in grid
    assert len(at.expander) == 3  # jaxpr, StableHLO, HLO
    assert len(at.dataframe) == 2  # the collectives, and the four variants


def test_ppermute_shows_its_pairs_as_a_chart():
    at = render(
        _analysis, collectiveanalysis.analyse_collective("ppermute", 4, 2, perm=[(0, 1), (1, 0)])
    )
    assert not at.exception and len(at.get("plotly_chart")) == 1
