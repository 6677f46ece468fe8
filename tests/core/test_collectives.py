"""Every collective run for real and checked against numpy; bad choices explained."""

import numpy as np
import pytest

from pmapviz import collectives as col
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


@pytest.mark.parametrize("key", [c.key for c in col.COLLECTIVES])
@pytest.mark.parametrize("n, m", [(N, N), (4, 8), (2, 2)])
def test_collective_matches_numpy(key, n, m):
    perm = col.ring(n, "right") if key == "ppermute" else None
    out = col.run(key, n, m, perm=perm)
    x = col.make_input(n, m)
    expected = col.numpy_reference(key, x, perm=perm)
    assert len(out.after) == n
    for d in range(n):
        np.testing.assert_allclose(out.after[d], expected[d], rtol=1e-6)
        np.testing.assert_array_equal(out.before[d], x[d])


@pytest.mark.parametrize("key", ["psum", "pmean", "pmax", "pmin"])
def test_axis_index_groups(key):
    groups = col.even_groups(N, 2)
    out = col.run(key, N, 3, kind="random", groups=groups)
    expected = col.numpy_reference(key, col.make_input(N, 3, "random"), groups=groups)
    for d in range(N):
        np.testing.assert_allclose(out.after[d], expected[d], rtol=1e-6)
    assert "axis_index_groups=[[0, 1]" in out.code


def test_ppermute_non_receivers_get_zeros_and_sources_are_traced():
    perm = [(0, 1), (1, 2)]
    out = col.run("ppermute", N, 2, perm=perm)
    assert out.sources[1] == [0] and out.sources[2] == [1]
    np.testing.assert_array_equal(out.after[0], np.zeros(2))
    assert out.sources[0] == [None]  # device 0 received nothing


def test_a_device_receiving_zeros_is_not_said_to_come_from_device_0():
    # issue 16: with arange inputs device 0's block used to be [0.], so zeros "came from 0"
    out = col.run("ppermute", N, 1, perm=[(1, 5)])
    assert out.sources[5] == [1]
    assert all(out.sources[d] == [None] for d in range(N) if d != 5)
    assert not out.warnings


@pytest.mark.parametrize("kind", col.VALUE_KINDS)
def test_inputs_are_non_zero_and_distinct(kind):
    x = col.make_input(N, 64, kind)
    assert (x != 0).all() and len(np.unique(x)) == x.size


def test_sources_are_checked_against_the_values():
    c = col.BY_KEY["ppermute"]
    before = [np.array([1.0]), np.array([2.0])]
    sources, warnings = col.checked_sources(c, 2, 1, [(0, 1)], before, [np.zeros(1), [9.0]])
    assert sources == [[None], [None]] and "differ" in warnings[0]


def test_unequal_groups_run_and_pmean_is_shown_beside_the_correct_mean():
    groups = [[4, 6], [0, 1, 2, 3, 5, 7]]
    s = col.run("psum", N, 2, groups=groups)
    for d in range(N):
        np.testing.assert_allclose(s.after[d], s.expected[d], rtol=1e-6)  # psum is right
    assert "unequal sizes" in s.warnings[0] and "pmean is wrong" not in s.warnings[0]
    m = col.run("pmean", N, 2, groups=groups)
    assert "first group (2)" in m.warnings[0]
    x = col.make_input(N, 2)
    np.testing.assert_allclose(m.after[0], x[[0, 1, 2, 3, 5, 7]].sum(axis=0) / 2, rtol=1e-6)
    np.testing.assert_allclose(m.expected[0], x[[0, 1, 2, 3, 5, 7]].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(m.after[4], m.expected[4], rtol=1e-6)  # the first group is right


def test_equal_groups_give_no_warning():
    assert not col.run("pmean", N, 2, groups=col.even_groups(N, 4)).warnings


def test_all_gather_and_all_to_all_sources_come_from_values():
    g = col.run("all_gather", 4, 2)
    assert all(src == [0, 1, 2, 3] for src in g.sources)
    a = col.run("all_to_all", 4, 4)
    assert a.sources[2] == [0, 1, 2, 3]  # piece j of device 2 came from device j


@pytest.mark.parametrize(
    "text, n, words",
    [("0->1, 0->2", 4, "source of two pairs"), ("0->1, 2->1", 4, "destination of two pairs"),
     ("0->9", 4, "outside 0 to 3"), ("zero to one", 4, "not a pair"), ("", 4, "empty")],
)  # fmt: skip
def test_bad_permutations_are_explained(text, n, words):
    with pytest.raises(col.CollectiveError, match=words):
        col.parse_pairs(text, n)


def test_pairs_parse_in_several_spellings():
    assert col.parse_pairs("0->1, 1->2", 4) == [(0, 1), (1, 2)]
    assert col.parse_pairs("0 1; 1 2", 4) == [(0, 1), (1, 2)]
    assert col.parse_pairs("3→0", 4) == [(3, 0)]


@pytest.mark.parametrize(
    "text, words",
    [("0 1 | 2", "missing"), ("0 1 | 1 2 3", "twice"),
     ("[[0,1],[2,9]]", "outside"), ("a b | c d", "not a list")],
)  # fmt: skip
def test_bad_groups_are_explained(text, words):
    with pytest.raises(col.CollectiveError, match=words):
        col.parse_groups(text, 4)


def test_groups_parse():
    assert col.parse_groups("0 1 | 2 3", 4) == [[0, 1], [2, 3]]
    assert col.parse_groups("[[0,2],[1,3]]", 4) == [[0, 2], [1, 3]]
    assert col.parse_groups("", 4) is None


def test_scatter_needs_divisible_blocks():
    with pytest.raises(col.CollectiveError, match="multiple of 4"):
        col.run("all_to_all", 4, 6)
    with pytest.raises(col.CollectiveError, match="reductions"):
        col.run("all_gather", 4, 4, groups=[[0, 1], [2, 3]])


def test_comm_cost_models():
    c = col.BY_KEY
    cost, model = col.comm_cost(c["psum"], 8, 1000, 4, None, None)
    assert cost["sent"] == pytest.approx(2 * 7 / 8 * 4000) and "ring" in model
    cost, _ = col.comm_cost(c["all_gather"], 8, 1000, 4, None, None)
    assert cost["received"] == 7 * 4000
    cost, _ = col.comm_cost(c["ppermute"], 4, 10, 4, None, [(0, 1)])
    assert cost["sent"] == 10 and cost["received"] == 10  # 40 bytes / 4 devices
    cost, _ = col.comm_cost(c["psum"], 4, 10, 4, [[0, 1], [2, 3]], None)
    assert cost["sent"] == pytest.approx(2 * 1 / 2 * 40)
    cost, model = col.comm_cost(c["psum"], 4, 10, 4, [[0], [1, 2, 3]], None)
    assert cost["sent"] == pytest.approx(3 / 4 * 2 * 2 / 3 * 40) and "g=1/3" in model
    assert col.comm_cost(c["axis_index"], 8, 10, 4, None, None)[0]["sent"] == 0
