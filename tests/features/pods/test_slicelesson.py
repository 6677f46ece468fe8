"""One slice or two, in words written from the two compiles: every figure said equals the
engine's reports for v5e:16x16 and 2 x v5e:8x16, and why data parallelism goes across slices
from a slice sweep's rows."""

import pytest

from pmapviz.core.pods import podcompile, podsweep, podtopology, tpuchips
from pmapviz.core.pods.podreport import fmt_gib, fmt_seconds
from pmapviz.features.pods import podsettings, slicelesson

pytestmark = pytest.mark.skipif(
    not podtopology.availability().ok, reason="libtpu is the pods extra"
)


@pytest.fixture(scope="module")
def pair():
    program = podsettings.program("train")
    return [
        podcompile.compile_for(program, name, find_batch=False, multislice=True)
        for name in (slicelesson.ONE, slicelesson.TWO)
    ]


def test_the_table_holds_both_compiles_figures(pair):
    one, two = pair
    rows = {r["what"]: r for r in slicelesson.compare_rows(one, two)}
    dcn = rows["each device sends over DCN"]
    assert dcn[one.topology] == fmt_gib(0) and dcn[two.topology] == fmt_gib(
        two.network_bytes()["DCN"]
    )
    assert rows["one step, every term added"][two.topology] == fmt_seconds(two.step_s)
    assert rows["DCN time (model)"][two.topology] == fmt_seconds(two.dcn_s)
    assert "[DCN]" in rows["collectives as compiled"][two.topology]
    assert "[DCN]" not in rows["collectives as compiled"][one.topology]
    assert len(one.chips) == len(two.chips) == 256


def test_what_changed_names_the_phases_as_compiled(pair):
    one, two = pair
    said = slicelesson.what_changed(one, two)
    (phase,) = two.phases()
    send = next(c for c in phase if c.kind == "send")
    assert f"into {len([c for c in phase if c.kind != 'recv'])} phases" in said[1]
    assert all(f"{c.kind} {c.shape}" in said[1] for c in phase if c.kind != "recv")
    assert f"1/{phase[0].bytes / send.bytes:,.0f} of the gradient" in said[2]
    assert fmt_gib(send.bytes) in said[2]
    assert fmt_seconds(two.dcn_s) in said[-1] and fmt_seconds(one.step_s) in said[-1]


def test_why_data_parallel_is_written_from_the_rows_and_the_published_links():
    rows = podsweep.slice_rows(
        podsweep.slice_sweep(podsettings.program("train"), "v5e:2x4", [1, 2])
    )
    said = slicelesson.why_data_parallel(rows, "v5e")
    gen = tpuchips.GENERATIONS["v5e"]
    assert fmt_gib(rows[-1]["dcn_bytes"]) in said and rows[-1]["topology"] in said
    assert f"{gen.dcn_chip_bytes_s / 1e9:.3g} GB/s" in said
    assert slicelesson.why_data_parallel(rows, "v4") == ""  # no published DCN figure
