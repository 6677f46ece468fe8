"""The pod report's parts without a page: every generation's figures carry their sources."""

from pmapviz.core.pods import tpuchips
from pmapviz.core.ui import pod_report


def test_the_hardware_table_has_every_generation_with_its_sources():
    rows = pod_report.hardware_rows()
    assert [r["generation"] for r in rows] == [g.title for g in tpuchips.GENERATIONS.values()]
    for r, g in zip(rows, tpuchips.GENERATIONS.values(), strict=True):
        assert r["HBM a chip"] == f"{g.hbm_gib:g} GiB"
        assert r["source"].startswith("https://") and r["link source"].startswith("https://")
        assert r["ICI one-way GB/s a link"] == g.ici_link_gbs > 0
