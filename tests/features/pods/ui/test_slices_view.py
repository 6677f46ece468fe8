"""The Pods page's multislice parts in AppTest: a multislice link drawn and reported (slices,
hosts, DCN link, every collective's network, the all-reduce's phases, the DCN model and its
source), hostile links, the slice sweep's chart and sentences, and the lesson "one slice or
two", every figure equal to the engine's for the same compiles."""

import re

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.drawing import podview
from pmapviz.core.pods import dcnmodel, podcompile, podsweep, podtopology, tpuchips
from pmapviz.core.pods.podreport import fmt_gib, fmt_seconds
from pmapviz.features.pods import podsettings, slicelesson
from tests.pages.conftest import all_text

pytestmark = pytest.mark.skipif(
    not podtopology.availability().ok, reason="libtpu is the pods extra"
)
TARGET = "2 x v5e:4x4"


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_a_multislice_link_draws_the_slices_and_each_collectives_network(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"pod": TARGET, "prog": "train"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    want = podcompile.compile_for(podsettings.program("train"), TARGET, multislice=True)
    pod = podtopology.load(TARGET, multislice=True)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Collectives"] == str(len(want.collectives))
    assert metrics["Communication"] == fmt_seconds(want.comm_s)
    text = _markdown(at)
    # the picture: one frame per slice with its hosts, a DCN link between them
    for k in range(pod.n_slices):
        on = [c for c in pod.chips if c.slice == k]
        assert f"slice {k} ({len(on)} devices, {len({c.host for c in on})} hosts)" in text
    assert text.count(">DCN<div") == pod.n_slices - 1
    # every collective with its network, and the bytes each device sends on each
    tables = [t.value for t in at.dataframe]
    nets = next(t for t in tables if "network" in t.columns and "model" in t.columns)
    sent = want.network_bytes()
    assert list(nets["sent per device"]) == [fmt_gib(sent["ICI"]), fmt_gib(sent["DCN"])]
    colls = next(t for t in tables if "sent per device (model)" in t.columns)
    assert [n.split()[0] for n in colls["network"]] == [c.network for c in want.collectives]
    # the all-reduce across slices as its phases, and the DCN model with its source
    assert podview.phases_html(want) in text
    (phase,) = want.phases()
    assert all(f"{c.kind}</div>" in text or "send + recv" in text for c in phase)
    dcn = dcnmodel.dcn_words(tpuchips.GENERATIONS["v5e"])
    assert any(dcn in c.value and "**model**" in c.value for c in at.caption)
    assert at.query_params["pod"] in ([TARGET], TARGET)


@pytest.mark.parametrize(
    "link",
    ["99x v5e:16x16", "10000000 x v5e:4x4", "<b>2</b> x v5e:4x4", "2 x v9:4x4", "0 x v5e:4x4"],
)
def test_a_hostile_multislice_link_gets_one_line_and_the_default(run_app, link):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"pod": link, "prog": "psum"})
    assert not at.exception
    notes = [w.value for w in at.warning if tpuchips.DEFAULT in w.value]
    assert len(notes) == 1
    assert "<" not in re.sub(r"`[^`]*`", "", notes[0])  # markup only inside inline code
    assert f"{tpuchips.DEFAULT}: 8 chips on 2 hosts" in all_text(at)


def test_the_slice_sweep_draws_and_says_where_dcn_dominates(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"prog": "psum"})
    at.button(key="po_slices").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert (
        any(c.key == "po_slices_chart" for c in at.get("plotly_chart"))
        or len(at.get("plotly_chart")) == 2
    )
    one, counts = podsettings.SWEPT_SLICE, list(podsettings.SLICE_COUNTS)
    rows = podsweep.slice_rows(podsweep.slice_sweep(podsettings.program("train"), one, counts))
    text = _markdown(at)
    assert podsweep.dcn_dominates(rows) in text
    assert slicelesson.why_data_parallel(rows, "v5e") in text
    table = next(t.value for t in at.dataframe if "DCN share" in t.value.columns)
    assert list(table["target"]) == [r["topology"] for r in rows]
    assert list(table["DCN (model)"]) == [fmt_seconds(r["dcn_s"]) for r in rows]


def test_one_slice_or_two_says_what_changed_from_the_two_compiles(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"prog": "psum"})
    at.button(key="po_lesson").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    program = podsettings.program("train")
    one, two = (
        podcompile.compile_for(program, name, find_batch=False, multislice=True)
        for name in (slicelesson.ONE, slicelesson.TWO)
    )
    text = _markdown(at)
    assert all(line in text for line in slicelesson.what_changed(one, two))
    table = next(t.value for t in at.table if slicelesson.TWO in t.value.columns)
    assert list(table["what"]) == [r["what"] for r in slicelesson.compare_rows(one, two)]
