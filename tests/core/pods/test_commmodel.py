"""The communication model: each collective's bytes over the links its group spans, with the
expected times worked out here from the formulas in the module's docstring and the published
link figures of :mod:`tpuchips`. Pure arithmetic: no JAX."""

import pytest

from pmapviz.core.pods import commmodel
from pmapviz.core.pods.tpuchips import GENERATIONS, parse_topology

MIB = 1024**2
V5E_LINK = GENERATIONS["v5e"].ici_link_gbs * 1e9  # bytes a second, one way, one link


def row(y, n):
    """The chips of row ``y`` of an n-wide 2-D slice, as 3-D coordinates."""
    return [(x, y, 0) for x in range(n)]


def test_a_row_of_a_full_v5e_pod_is_a_ring_and_a_row_of_4x4_a_line():
    pod = parse_topology("v5e:16x16")
    ring = commmodel.span(row(3, 16), pod)
    assert (ring.chips, ring.axes, ring.rings, ring.links) == (16, (0,), (True,), 2)
    assert ring.words() == "16 chips along axis 0 (ring)"
    small = parse_topology("v5e:4x4")
    line = commmodel.span(row(0, 4), small)
    assert (line.chips, line.axes, line.rings, line.links) == (4, (0,), (False,), 1)
    # half a row of the full pod does not close the ring
    half = commmodel.span(row(0, 8), pod)
    assert half.rings == (False,) and half.links == 1


def test_a_group_over_both_axes_gets_links_on_each_and_one_chip_spans_nothing():
    pod = parse_topology("v5e:4x4")
    every = [(x, y, 0) for x in range(4) for y in range(4)]
    s = commmodel.span(every, pod)
    assert (s.chips, s.axes, s.links) == (16, (0, 1), 2)
    alone = commmodel.span([(1, 2, 0), (1, 2, 0)], pod)  # two cores of one chip
    assert (alone.chips, alone.axes, alone.links) == (1, (), 0)
    assert alone.words() == "one chip"


@pytest.mark.parametrize("g", [2, 4, 16])
def test_bytes_each_chip_moves_by_kind(g):
    size = 1000
    assert commmodel.bytes_moved("all-reduce", size, g) == pytest.approx(2 * (g - 1) / g * size)
    assert commmodel.bytes_moved("all-gather", size, g) == pytest.approx((g - 1) * size)
    assert commmodel.bytes_moved("reduce-scatter", size, g) == pytest.approx((g - 1) / g * size)
    assert commmodel.bytes_moved("all-to-all", size, g) == pytest.approx((g - 1) / g * size)
    assert commmodel.bytes_moved("all-reduce", size, 1) == 0


def test_all_reduce_time_on_a_ring_and_on_a_line():
    size = 64 * MIB
    ring_s, how = commmodel.collective_seconds(
        "all-reduce", size, [row(0, 16)], parse_topology("v5e:16x16")
    )
    g = 16
    assert ring_s == pytest.approx(2 * (g - 1) / g * size / (2 * V5E_LINK))
    assert how == "16 chips along axis 0 (ring)"
    line_s, _ = commmodel.collective_seconds(
        "all-reduce", size, [row(0, 4)], parse_topology("v5e:4x4")
    )
    g = 4
    assert line_s == pytest.approx(2 * (g - 1) / g * size / (1 * V5E_LINK))


def test_the_slowest_group_sets_the_time():
    pod = parse_topology("v5e:4x4")
    size = 8 * MIB
    pair = [(0, 0, 0), (1, 0, 0)]
    whole_row = row(1, 4)
    seconds, how = commmodel.collective_seconds("all-gather", size, [pair, whole_row], pod)
    assert seconds == pytest.approx((4 - 1) * size / V5E_LINK)
    assert how.startswith("4 chips")


def test_all_to_all_pays_for_its_average_hops():
    pod = parse_topology("v5e:16x16")
    size = MIB
    g = 16
    seconds, _ = commmodel.collective_seconds("all-to-all", size, [row(0, 16)], pod)
    assert seconds == pytest.approx((g - 1) / g * size * (g / 4) / (2 * V5E_LINK))
    line, _ = commmodel.collective_seconds(
        "all-to-all", size, [row(0, 4)], parse_topology("v5e:4x4")
    )
    assert line == pytest.approx((4 - 1) / 4 * size * (4 / 3) / V5E_LINK)


def test_a_permute_costs_its_longest_hop_and_wraparound_shortens_it():
    size = 4 * MIB
    pod = parse_topology("v5e:16x16")
    ends = [((0, 0, 0), (15, 0, 0))]  # neighbours across the wraparound link
    seconds, how = commmodel.collective_seconds("collective-permute", size, [], pod, ends)
    assert seconds == pytest.approx(size * 1 / V5E_LINK) and how == "1 hop at most"
    line = parse_topology("v5e:4x4")
    far = [((0, 0, 0), (3, 2, 0)), ((0, 0, 0), (1, 0, 0))]
    seconds, how = commmodel.collective_seconds("collective-permute", size, [], line, far)
    assert seconds == pytest.approx(size * 5 / V5E_LINK) and how == "5 hops at most"
    same_chip = [((1, 1, 0), (1, 1, 0))]
    assert commmodel.collective_seconds("collective-permute", size, [], line, same_chip) == (
        0.0,
        "every pair on one chip",
    )


def test_a_v4_group_inside_one_chip_costs_nothing_and_a_v4_ring_uses_its_links():
    pod = parse_topology("v4:4x4x4")
    both_cores = [(2, 1, 3), (2, 1, 3)]
    assert commmodel.collective_seconds("all-reduce", MIB, [both_cores], pod) == (0.0, "one chip")
    ring = [(x, 0, 0) for x in range(4)]
    seconds, how = commmodel.collective_seconds("all-reduce", MIB, [ring], pod)
    link = GENERATIONS["v4"].ici_link_gbs * 1e9
    assert seconds == pytest.approx(2 * 3 / 4 * MIB / (2 * link))
    assert "(ring)" in how


def test_the_model_says_it_is_a_model():
    assert "model" in commmodel.MODEL_NAME and "no latency" in commmodel.MODEL_NAME
