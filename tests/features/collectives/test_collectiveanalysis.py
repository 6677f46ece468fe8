"""Every collective of the playground compiled for real: the collective XLA emitted, over the
groups or pairs asked, on the same row as the ring model's bytes."""

import pytest

from pmapviz.core.expressions import collectivedefs as defs
from pmapviz.core.running import programanalysis
from pmapviz.features.collectives import collectiveanalysis
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
ALL = tuple(range(N))
HALVES = [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize(
    "key, groups, perm, kind, shape, expect",
    [
        ("psum", None, None, "all-reduce", (8,), [ALL]),
        ("pmean", HALVES, None, "all-reduce", (8,), [tuple(g) for g in HALVES]),
        (
            "pmax",
            [[0, 2, 4, 6], [1, 3, 5, 7]],
            None,
            "all-reduce",
            (8,),
            [(0, 2, 4, 6), (1, 3, 5, 7)],
        ),
        (
            "pmin",
            [[3], [0, 1, 2, 4, 5, 6, 7]],
            None,
            "all-reduce",
            (8,),
            [(3,), (0, 1, 2, 4, 5, 6, 7)],
        ),
        ("all_gather", None, None, "all-gather", (1, 8), [ALL]),  # XLA adds the gathered axis
        ("all_gather_tiled", None, None, "all-gather", (8,), [ALL]),
        (
            "ppermute",
            None,
            defs.ring(N, "right"),
            "collective-permute",
            (8,),
            defs.ring(N, "right"),
        ),
        ("ppermute", None, defs.ring(N, "left"), "collective-permute", (8,), defs.ring(N, "left")),
        ("ppermute", None, [(1, 5), (5, 1)], "collective-permute", (8,), [(1, 5), (5, 1)]),
        ("psum_scatter", None, None, "reduce-scatter", (8,), [ALL]),
        ("all_to_all", None, None, "all-to-all", (1,), [ALL]),
        ("normalise", None, None, "all-reduce", (), [ALL]),
    ],
)
def test_every_collective_compiles_to_what_was_asked(key, groups, perm, kind, shape, expect):
    a = programanalysis.analyse(
        collectiveanalysis.collective_target(key, N, 8, groups, perm), variants=False
    )
    (row,) = a.rows
    c = row.hlo
    assert c.kind == kind and c.shapes[0] == shape and c.dtype == "f32" and not a.unparsed
    got = c.source_target_pairs if kind == "collective-permute" else c.replica_groups
    assert sorted(map(tuple, got)) == sorted(map(tuple, expect))
    assert "pmapviz/core/expressions/collectivedefs.py:" in c.source_line
    # the model and the compiler meet on one row: the same bytes as the playground's model
    cost, _ = defs.BY_KEY[key].comm_bytes(N, 8, 4, groups, perm)
    assert row.model_sent == pytest.approx(cost["sent"]) and row.model_received == pytest.approx(
        cost["received"]
    )
    assert c.line in a.levels.hlo_lines and a.levels.jaxpr_lines and a.levels.stablehlo_lines


def test_axis_index_emits_no_collective():
    a = programanalysis.analyse(
        collectiveanalysis.collective_target("axis_index", N, 8), variants=False
    )
    assert a.rows == () and a.levels.hlo_lines == () and a.levels.jaxpr_lines == ()


def test_a_setting_is_compiled_once_and_a_bad_one_is_refused_before_compiling():
    a = collectiveanalysis.analyse_collective("psum", N, 4, [[0, 1], [2, 3, 4, 5, 6, 7]])
    assert collectiveanalysis.analyse_collective("psum", N, 4, [[0, 1], [2, 3, 4, 5, 6, 7]]) is a
    with pytest.raises(Exception, match="multiple of"):
        collectiveanalysis.collective_target("all_to_all", N, 3)
