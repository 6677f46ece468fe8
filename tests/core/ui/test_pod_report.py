"""The pod report's parts without a page: every generation's figures carry their sources."""

from pmapviz.core.pods import tpuchips
from pmapviz.core.ui import pod_report


def test_the_hardware_table_has_every_generation_with_its_sources():
    rows = pod_report.hardware_rows()
    assert [r["generation"] for r in rows] == [g.title for g in tpuchips.GENERATIONS.values()]
    for r, g in zip(rows, tpuchips.GENERATIONS.values(), strict=True):
        assert r["HBM a chip"] == f"{g.hbm_gib:g} GiB"
        assert r["the compiler allows a device"] == f"{g.compiler_hbm.stated_gib:g} GiB"
        assert r["source"].startswith("https://") and r["link source"].startswith("https://")
        assert r["ICI one-way GB/s a link"] == g.ici_link_gbs > 0


def _walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


def _psum_report():
    from pmapviz.core.pods import podprograms
    from pmapviz.core.ui import pod_report

    pod_report.program_and_report(podprograms.BUILTIN["psum"](), "v5e:2x2", "t")


def test_the_slice_is_drawn_before_the_rest_of_the_report():
    from tests.core.ui.conftest import render

    at = render(_psum_report)
    assert not at.exception, [e.value for e in at.exception]
    kinds = [
        "picture" if c.type == "markdown" and "role='img'" in c.value else c.type
        for c in _walk(at.main)
    ]
    assert kinds.count("picture") == 1
    assert kinds.index("picture") < kinds.index("metric") < kinds.index("plotly_chart")
    (picture,) = [
        c.value for c in _walk(at.main) if c.type == "markdown" and "role='img'" in c.value
    ]
    assert "v5e:2x2" in picture and "aria-label=" in picture
