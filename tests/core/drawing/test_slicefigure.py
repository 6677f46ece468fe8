"""The slice sweep as a Plotly figure: three stacked terms per slice count, each bar's height
and the DCN share written above it from the same rows (real compiles through the engine)."""

import pytest

from pmapviz.core.drawing import slicefigure
from pmapviz.core.pods import dcnmodel, podsweep, podtopology, tpuchips
from pmapviz.features.pods import podsettings

pytestmark = pytest.mark.skipif(
    not podtopology.availability().ok, reason="libtpu is the pods extra"
)


@pytest.fixture(scope="module")
def rows():
    reports = podsweep.slice_sweep(podsettings.program("train"), "v5e:2x4", [1, 2, 4])
    return podsweep.slice_rows(reports)


def test_the_bars_are_the_rows_terms_and_the_share_is_written_from_them(rows):
    words = dcnmodel.dcn_words(tpuchips.GENERATIONS["v5e"])
    fig = slicefigure.slice_sweep_figure(rows, words)
    compute, ici, dcn = fig.data
    assert list(compute.y) == [r["compute_hbm_s"] * 1e3 for r in rows]
    assert list(ici.y) == [r["ici_s"] * 1e3 for r in rows]
    assert list(dcn.y) == [r["dcn_s"] * 1e3 for r in rows]
    assert dcn.name == "DCN (model)" and ici.name == "ICI (model)"
    froms = {r["compute_from"] for r in rows}
    assert ("roofline" in compute.name) == ("roofline" in froms)
    shares = [a.text for a in fig.layout.annotations]
    assert shares == [f"<b>DCN {r['dcn_share'] * 100:.0f} %</b>" for r in rows]
    assert rows[0]["dcn_s"] == 0 and rows[-1]["dcn_s"] > rows[1]["dcn_s"] > 0
    ticks = list(fig.layout.xaxis.ticktext)
    assert [t.split("<br>")[0] for t in ticks] == [r["topology"] for r in rows]
    assert fig.layout.title.text == "one step on 1 to 4 slices, batch 8,192 kept"
    assert words.split(" (model;")[0] in fig.layout.title.subtitle.text


def test_no_rows_is_refused():
    with pytest.raises(ValueError):
        slicefigure.slice_sweep_figure([], "")
