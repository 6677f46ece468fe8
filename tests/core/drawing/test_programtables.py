"""A compiled program's analysis as tables and terminal text, read back against the analysis
they come from."""

from pmapviz.core.drawing import programtables
from pmapviz.features.collectives import collectiveanalysis
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_collective_rows_and_summary_say_what_the_hlo_holds():
    a = collectiveanalysis.analyse_collective("psum", N, 8)
    rows = programtables.table_rows(a.rows)
    assert [r["collective"] for r in rows] == [r.hlo.kind for r in a.rows] == ["all-reduce"]
    assert rows[0]["bytes per device"] == 32 and rows[0]["groups / pairs"]
    assert rows[0]["ring model: sends (B)"] == round(a.rows[0].model_sent)
    lines = programtables.summary_lines(a)
    assert lines[0].startswith(f"{a.target.label} on {N} device(s)")
    assert f"{len(a.rows)} collective(s) in the HLO" in lines[1]
    assert any(line.lstrip().startswith("all-reduce") for line in lines)
    assert sum(line.lstrip().split(" ")[0] in a.variants for line in lines) == len(a.variants)


def test_variant_table_has_a_row_per_variant_and_notes_where_xla_chose_otherwise():
    a = collectiveanalysis.analyse_collective("all_gather", N, 8)
    rows, notes = programtables.variant_table(a)
    assert len(rows) == len(a.variants)
    pmap_row = rows[0]
    assert pmap_row["variant"] == a.variants["pmap"].label
    assert pmap_row["collectives"] == "all-gather"
    assert pmap_row["peak (B)"] == a.variants["pmap"].cost.peak_bytes
    for key, v in a.variants.items():
        kinds = sorted(r.hlo.kind for r in v.rows)
        differs = key != "pmap" and not v.error and kinds != ["all-gather"]
        assert differs == any(n.startswith(v.label + " compiles to") for n in notes)


def test_an_operand_is_written_once_as_the_hlo_writes_it():
    a = collectiveanalysis.analyse_collective("psum", 4, 3)
    (row,) = programtables.table_rows(a.rows)
    assert row["operand"] == a.rows[0].hlo.shape_text == "f32[3]"
