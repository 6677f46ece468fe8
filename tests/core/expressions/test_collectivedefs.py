"""The collectives' records: the ring model's bytes by hand and in literal numbers, every
record's cost, numpy's answers, where pieces come from, and the names traces use."""

import numpy as np
import pytest

from pmapviz.core.expressions import collectivedefs as defs
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_comm_cost_models():
    c = defs.BY_KEY
    cost, model = c["psum"].comm_bytes(8, 1000, 4, None, None)
    assert cost["sent"] == pytest.approx(2 * 7 / 8 * 4000) and "ring" in model
    cost, _ = c["all_gather"].comm_bytes(8, 1000, 4, None, None)
    assert cost["received"] == 7 * 4000
    cost, _ = c["ppermute"].comm_bytes(4, 10, 4, None, [(0, 1)])
    assert cost["sent"] == 10 and cost["received"] == 10  # 40 bytes / 4 devices
    cost, _ = c["psum"].comm_bytes(4, 10, 4, [[0, 1], [2, 3]], None)
    assert cost["sent"] == pytest.approx(2 * 1 / 2 * 40)
    cost, model = c["psum"].comm_bytes(4, 10, 4, [[0], [1, 2, 3]], None)
    assert cost["sent"] == pytest.approx(3 / 4 * 2 * 2 / 3 * 40) and "g=1/3" in model
    assert c["axis_index"].comm_bytes(8, 10, 4, None, None)[0]["sent"] == 0


# ------------------------------------------------------------------ the cost model, by hand
# ring_model's claim, per device, for a group of g devices and a block of B bytes:
# all-reduce 2(g-1)/g B, all-gather (g-1) B, reduce-scatter and all-to-all (g-1)/g B;
# with several groups it is the average over all devices (each device counts for its group).
# collective-permute: B per sender and per receiver, averaged over the n devices.
def hand_avg(per_group, groups):
    return sum(len(g) * per_group(len(g)) for g in groups) / sum(len(g) for g in groups)


HAND = {
    "all-reduce": lambda g, b: 2 * (g - 1) / g * b,
    "all-gather": lambda g, b: (g - 1) * b,
    "reduce-scatter": lambda g, b: (g - 1) / g * b,
    "all-to-all": lambda g, b: (g - 1) / g * b,
}
GROUPINGS = [
    None,
    [[0, 1], [2, 3], [4, 5], [6, 7]],
    [[0, 1, 2, 3], [4, 5, 6, 7]],
    [[0], [1, 2, 3, 4, 5, 6, 7]],
    [[4, 6], [0, 1, 2, 3, 5, 7]],
]


@pytest.mark.parametrize("kind", sorted(HAND))
@pytest.mark.parametrize("groups", GROUPINGS, ids=["all", "pairs", "fours", "1+7", "2+6"])
def test_ring_model_matches_the_hand_formula_for_every_kind_and_grouping(kind, groups):
    b = 4000.0
    cost, model = defs.ring_model(kind, b, groups or [list(range(N))], N)
    want = hand_avg(lambda g: HAND[kind](g, b), groups or [list(range(N))])
    assert cost == {"sent": pytest.approx(want), "received": pytest.approx(want)}
    if kind != "all-reduce":
        assert model == MODEL_WORDS[kind]


MODEL_WORDS = {
    "all-reduce": "ring all-reduce: reduce-scatter then all-gather, 2(g-1)/g x block",
    "all-gather": "ring all-gather: each block travels to the g-1 other devices",
    "reduce-scatter": "each device keeps 1/g of its block, sends the rest",
    "all-to-all": "each device keeps 1/g of its block, sends the rest",
}


@pytest.mark.parametrize(
    "kind, groups, want",
    [
        ("all-reduce", None, 7000.0),  # 2 * 7/8 * 4000
        ("all-reduce", [[0, 1], [2, 3], [4, 5], [6, 7]], 4000.0),  # 2 * 1/2 * 4000
        ("all-reduce", [[0, 1, 2, 3], [4, 5, 6, 7]], 6000.0),  # 2 * 3/4 * 4000
        ("all-reduce", [[4, 6], [0, 1, 2, 3, 5, 7]], 6000.0),  # (2*4000 + 6*(2*5/6*4000)) / 8
        ("all-reduce", [[0], [1, 2, 3, 4, 5, 6, 7]], 6000.0),  # (1*0 + 7*(2*6/7*4000)) / 8
        ("all-gather", None, 28000.0),  # 7 * 4000
        ("all-gather", [[0, 1], [2, 3], [4, 5], [6, 7]], 4000.0),
        ("all-gather", [[4, 6], [0, 1, 2, 3, 5, 7]], 16000.0),  # (2*4000 + 6*5*4000) / 8
        ("reduce-scatter", None, 3500.0),  # 7/8 * 4000
        ("reduce-scatter", [[0, 1, 2, 3], [4, 5, 6, 7]], 3000.0),
        ("reduce-scatter", [[0], [1, 2, 3, 4, 5, 6, 7]], 3000.0),  # (0 + 7 * 6/7 * 4000) / 8
        ("all-to-all", None, 3500.0),
        ("all-to-all", [[0, 1], [2, 3], [4, 5], [6, 7]], 2000.0),
    ],
)
def test_ring_model_literal_numbers(kind, groups, want):
    cost, _ = defs.ring_model(kind, 4000, groups or [list(range(8))], 8)
    assert cost["sent"] == pytest.approx(want) and cost["received"] == pytest.approx(want)


def test_ring_model_without_groups_uses_all_devices():
    assert defs.ring_model("all-reduce", 80, [], 8)[0]["sent"] == pytest.approx(140)  # 2*7/8*80
    assert defs.ring_model("all-gather", 80, [], 4)[0]["sent"] == pytest.approx(240)


def test_ring_model_permute_counts_senders_and_receivers_over_all_devices():
    cost, model = defs.ring_model(
        "collective-permute", 80, [list(range(8))], 8, [(0, 1), (1, 2), (2, 0)]
    )
    assert cost == {"sent": 30.0, "received": 30.0}  # 3 devices * 80 bytes / 8 devices
    cost, _ = defs.ring_model("collective-permute", 80, [list(range(8))], 8, defs.ring(8, "left"))
    assert cost == {"sent": 80.0, "received": 80.0}  # everyone sends and receives one block
    cost, _ = defs.ring_model("collective-permute", 80, [list(range(8))], 8, [(0, 5), (3, 5)])
    assert cost == {"sent": 20.0, "received": 10.0}  # two senders, one receiver
    assert defs.ring_model("collective-permute", 80, [list(range(8))], 8, None)[0] == {
        "sent": 0.0,
        "received": 0.0,
    }
    assert model == "point to point: each pair moves one block (average over devices)"


def test_ring_model_names_its_group_size_and_refuses_unknown_kinds():
    words = "ring all-reduce: reduce-scatter then all-gather, 2(g-1)/g x block, g="
    assert defs.ring_model("all-reduce", 8, [[0, 1, 2, 3], [4, 5, 6, 7]], 8)[1] == words + "4"
    assert defs.ring_model("all-reduce", 8, [[0], [1, 2, 3, 4, 5, 6, 7]], 8)[1] == words + "1/7"
    assert defs.ring_model("all-reduce", 8, [[0, 1], [2, 3, 4]], 5)[1] == words + "2/3"
    assert defs.ring_model("all-reduce", 8, [], 8)[1] == words + "8"
    with pytest.raises(ValueError, match="no ring model"):
        defs.ring_model("broadcast", 8, [[0, 1]], 2)


@pytest.mark.parametrize("groups", GROUPINGS, ids=["all", "pairs", "fours", "1+7", "2+6"])
@pytest.mark.parametrize("key", [c.key for c in defs.COLLECTIVES])
def test_comm_cost_of_every_collective_by_hand(key, groups):
    """comm_cost maps each collective to its HLO kind and payload: B = m * itemsize bytes
    (normalise sends one scalar), groups only where the collective takes them."""
    c, m, itemsize = defs.BY_KEY[key], 16, 4
    b = m * itemsize
    g = groups if c.uses_groups else None
    every = g or [list(range(N))]
    perm = defs.ring(N, "right")[:5] if c.takes_pairs else None
    cost, model = c.comm_bytes(N, m, itemsize, g, perm)
    if c.kind == "reduce":
        want = hand_avg(lambda s: 2 * (s - 1) / s * b, every)
    elif c.kind == "normalise":
        want = 2 * (N - 1) / N * itemsize  # one scalar all-reduced over all 8
    elif c.kind == "gather":
        want = (N - 1) * b
    elif c.kind == "scatter":
        want = (N - 1) / N * b
    elif c.kind == "permute":
        want = 5 * b / N  # 5 senders, 5 receivers
    else:
        want = 0.0
        assert model == "no communication: each device knows its own index"
    assert cost["sent"] == pytest.approx(want) and cost["received"] == pytest.approx(want)


def test_comm_cost_literal_numbers():
    c = defs.BY_KEY
    assert c["psum_scatter"].comm_bytes(8, 8, 4, None, None)[0]["sent"] == 28.0  # 7/8*32
    assert c["all_to_all"].comm_bytes(4, 8, 2, None, None)[0]["sent"] == 12.0  # 3/4*16
    assert c["all_gather_tiled"].comm_bytes(4, 8, 2, None, None)[0]["sent"] == 48.0  # 3*16
    assert c["normalise"].comm_bytes(8, 1000, 4, None, None)[0]["sent"] == 7.0  # 2*7/8*4
    assert c["pmax"].comm_bytes(8, 2, 4, [[0, 1, 2, 3], [4, 5, 6, 7]], None)[0] == {
        "sent": 12.0,
        "received": 12.0,
    }  # 2 * 3/4 * 8


# ------------------------------------------------------------------ the records themselves
def test_names_in_traces_map_to_the_xla_op_each_collective_compiles_to():
    # one pair per name: it reads as the table it is
    assert defs.HLO_BY_PRIMITIVE == {
        "psum": "all-reduce",
        "pmean": "all-reduce",
        "pmax": "all-reduce",
        "pmin": "all-reduce",
        "all_gather": "all-gather",
        "ppermute": "collective-permute",
        "psum_scatter": "reduce-scatter",
        "reduce_scatter": "reduce-scatter",
        "all_to_all": "all-to-all",
    }


@pytest.mark.parametrize("c", defs.COLLECTIVES, ids=lambda c: c.key)
def test_every_record_is_whole_and_its_sources_match_its_numpy_answer(c):
    """Each record explains itself, and where it says a piece is a copy, numpy's answer holds
    exactly that copy (so the playground's arrows and numpy agree)."""
    n, m = 4, 8
    pairs = defs.ring(n, "left") if c.takes_pairs else None
    x = np.arange(1, n * m + 1, dtype=np.float32).reshape(n, m)
    want = c.reference(x, None, pairs)
    assert len(want) == n and c.explain
    piece = m // n if c.needs_divisible else m
    for d, row in enumerate(c.sources(n, pairs)):
        flat = np.asarray(want[d]).reshape(-1)
        for k, where in enumerate(row):
            if where is not None:
                src, j = where
                got = flat[k * piece : (k + 1) * piece]
                np.testing.assert_array_equal(got, x[src][j * piece : (j + 1) * piece])
    assert (c.picture == "arrows") == c.takes_pairs


def test_code_is_shown_with_its_groups_and_pairs():
    assert defs.code_for(defs.BY_KEY["psum"], [[0, 1], [2, 3]], None) == (
        "lax.psum(x, 'i', axis_index_groups=[[0, 1], [2, 3]])"
    )
    assert defs.code_for(defs.BY_KEY["ppermute"], None, defs.ring(3, "right")) == (
        "lax.ppermute(x, 'i', perm=[(0, 1), (1, 2), (2, 0)])"
    )
    assert defs.ring(3, "left") == [(0, 2), (1, 0), (2, 1)]
