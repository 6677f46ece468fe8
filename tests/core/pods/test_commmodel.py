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


# ------------------------------------------------------------------ the links a sweep shows
def _report(topology, collectives):
    """A hand-built compile for ``topology`` (no libtpu): device k on the k-th chip, x fastest;
    ``collectives`` as (kind, bytes, groups of device ids, model seconds)."""
    from pmapviz.core.pods.podreport import PodCollective, PodReport
    from pmapviz.core.pods.podtopology import Chip

    topo = parse_topology(topology)
    shape = (list(topo.shape) + [1, 1])[:3]
    coords = [(x, y, z) for z in range(shape[2]) for y in range(shape[1]) for x in range(shape[0])]
    chips = tuple(Chip(k, c, 0, k // 4) for k, c in enumerate(coords))
    made = tuple(
        PodCollective(kind, f"c{k}", "f32[8]", size, groups, 0, None, k, seconds, "")
        for k, (kind, size, groups, seconds) in enumerate(collectives)
    )
    fields = dict(summary=topology, generation=topo.generation.name, chips=chips)
    fields |= dict(mesh_axes=(("chips", len(chips)),), program="p", label="p", code="")
    fields |= dict(batch=None, batch_words="", argument_bytes=0, output_bytes=0, temp_bytes=0)
    fields |= dict(alias_bytes=0, code_bytes=0, hbm_bytes=16 * 1024**3, flops=1.0)
    fields |= dict(bytes_accessed=1.0, optimal_s=1e-3, collectives=made, unparsed=())
    return PodReport(topology=topology, compile_s=0.1, **fields)


def _all_reduce_over_the_slice(topology, size=64 * MIB):
    """The report of one all-reduce of ``size`` bytes over every chip, timed by the model."""
    topo = parse_topology(topology)
    every = tuple(range(topo.chips))
    bare = _report(topology, [("all-reduce", size, (every,), 1.0)])
    where = [[c.coords for c in bare.chips]]
    seconds, _ = commmodel.collective_seconds("all-reduce", size, where, topo)
    return _report(topology, [("all-reduce", size, (every,), seconds)])


def test_the_slowest_span_is_the_one_collective_seconds_times():
    pod = parse_topology("v5e:16x16")
    groups = [row(0, 4), row(1, 16), [(0, 0, 0), (0, 1, 0)]]
    s = commmodel.slowest_span("all-gather", MIB, groups, pod)
    seconds, how = commmodel.collective_seconds("all-gather", MIB, groups, pod)
    assert how == s.words() == "16 chips along axis 0 (ring)"
    assert seconds == pytest.approx(commmodel.group_seconds("all-gather", MIB, s, V5E_LINK))
    assert commmodel.slowest_span("all-reduce", MIB, [], pod).words() == "one chip"
    assert s.axis_kinds(2) == ("ring", "-")
    every = commmodel.span(
        [(x, y, 0) for x in range(8) for y in range(16)], parse_topology("v5e:8x16")
    )
    assert every.axis_kinds(2) == ("line", "ring") and every.links == 3


@pytest.mark.parametrize(
    ("topology", "links", "axes"),
    [
        ("v5e:8x8", 2, ("line", "line")),
        ("v5e:8x16", 3, ("line", "ring")),
        ("v5e:16x16", 4, ("ring", "ring")),
        ("v6e:16x16", 4, ("ring", "ring")),
        ("v5p:2x2x1", 2, ("line", "line", "-")),
        ("v5p:2x2x4", 3, ("line", "line", "line")),  # below a full cube: a mesh
        ("v5p:2x4x4", 3, ("line", "line", "line")),
        ("v4:2x2x4", 3, ("line", "line", "line")),
        ("v4:4x4x4", 6, ("ring", "ring", "ring")),
        ("v5p:4x4x8", 6, ("ring", "ring", "ring")),
    ],
)
def test_links_used_reads_the_slowest_collectives_axes_from_the_report(topology, links, axes):
    r = _all_reduce_over_the_slice(topology)
    used = commmodel.links_used(r)
    assert used == {"collective": "all-reduce", "links": links, "link_axes": axes}
    assert commmodel.link_words(used) == f"{' x '.join(axes)} ({links} links)"
    assert commmodel.axes_words(r) == " x ".join(axes)


def test_links_used_says_none_without_a_collective_across_chips_or_for_a_permute():
    assert commmodel.links_used(_report("v5e:2x2", [])) == {
        "collective": "",
        "links": None,
        "link_axes": (),
    }
    permute = _report("v5e:2x2", [("collective-permute", MIB, ((0, 1), (1, 0)), 1e-4)])
    assert commmodel.links_used(permute)["links"] is None
    assert commmodel.links_used(permute)["collective"] == "collective-permute"
    idle = _report("v5e:2x2", [("all-reduce", MIB, ((0,), (1,)), 0.0)])
    assert commmodel.links_used(idle)["links"] is None
    assert commmodel.link_words(commmodel.links_used(idle)) == "" == commmodel.axes_words(idle)
    # the slowest of two collectives is the one read: a row's all-gather, not the pair's psum
    two = _report(
        "v5e:4x4",
        [("all-reduce", MIB, ((0, 4),), 1e-6), ("all-gather", MIB, ((0, 1, 2, 3),), 1e-3)],
    )
    assert commmodel.links_used(two) == {
        "collective": "all-gather",
        "links": 1,
        "link_axes": ("line", "-"),
    }


def _rows(topologies):
    reports = [_all_reduce_over_the_slice(t) for t in topologies]
    return [
        {"topology": r.topology, "communication_s": r.comm_s, **commmodel.links_used(r)}
        for r in reports
    ]


def test_the_switch_is_said_where_the_rows_change_with_their_own_numbers():
    rows = _rows(["v5e:4x8", "v5e:8x8", "v5e:8x16", "v5e:16x16"])
    said = commmodel.switches(rows)
    assert len(said) == 2  # 4x8 -> 8x8: lines both, nothing to say
    ms = [f"{r['communication_s'] * 1e3:,.3f} ms" for r in rows]
    assert said[0] == (
        "From v5e:8x8 to v5e:8x16, axis 1 closes into a ring (wraparound links): the model "
        f"gives each chip 3 links instead of 2, and communication falls from {ms[1]} to {ms[2]}."
    )
    assert said[1].startswith("From v5e:8x16 to v5e:16x16, axis 0 closes into a ring")
    assert "4 links instead of 3" in said[1] and f"from {ms[2]} to {ms[3]}" in said[1]
    # the 64 MiB all-reduce of the issue: 1.321 ms on 64 chips, 0.668 ms on 256
    assert (ms[1], ms[3]) == ("1.321 ms", "0.668 ms")
    # a generation whose offered sizes skip 8x16 closes both axes at once: links double, and
    # communication nearly halves (2 (g-1)/g grows a little from 64 to 256 chips)
    v6e = _rows(["v6e:8x8", "v6e:16x16"])
    t0, t1 = (r["communication_s"] for r in v6e)
    both = commmodel.switches(v6e, fmt=lambda s: f"{s:.6f} s")
    assert both == [
        "From v6e:8x8 to v6e:16x16, axes 0 and 1 close into rings (wraparound links): the model "
        f"gives each chip 4 links instead of 2, and communication falls from {t0:.6f} s to "
        f"{t1:.6f} s."
    ]
    assert t1 / t0 == pytest.approx((255 / 256) / (63 / 64) / 2)


def test_a_3d_sweep_says_which_axis_joins_and_where_the_full_cube_closes_every_ring():
    said = commmodel.switches(
        _rows(["v5p:2x2x1", "v5p:2x2x2", "v5p:2x2x4", "v5p:2x4x4", "v5p:4x4x4"])
    )
    assert len(said) == 2  # 2x2x2 -> 2x2x4 -> 2x4x4: meshes, three lines throughout
    assert said[0].startswith("From v5p:2x2x1 to v5p:2x2x2, axis 2 joins the group (a line): ")
    assert "3 links instead of 2" in said[0]
    assert said[1].startswith(
        "From v5p:2x4x4 to v5p:4x4x4, axes 0, 1 and 2 close into rings (wraparound links): "
        "the model gives each chip 6 links instead of 3"
    )


def test_no_switch_is_said_without_links_or_across_generations():
    rows = _rows(["v5e:8x8", "v5e:16x16"])
    assert commmodel.switches([rows[0] | {"links": None}, rows[1]]) == []
    assert commmodel.switches(_rows(["v5e:8x8", "v5p:4x4x4"])) == []  # 2-D then 3-D
    assert commmodel.switches(rows[:1]) == [] and commmodel.switches([]) == []
