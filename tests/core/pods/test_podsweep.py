"""One program over growing slices: which sizes a sweep takes, the speed-ups worked out from
the reports (built by hand), and one real sweep of the psum from 4 to 16 v5e chips, whose
per-chip work stays put while the modelled communication grows with the group."""

import pytest

from pmapviz.core.pods import podprograms, podsweep, tpuchips
from pmapviz.core.pods.podreport import PodCollective, PodReport
from pmapviz.core.pods.podtopology import Chip

GIB = 1024**3


def report(topology, optimal_s, comm_s, per_chip=1, fits=True):
    """A hand-built report for ``topology``: ``comm_s`` in one collective."""
    chips_n = tpuchips.parse_topology(topology).chips
    chips = tuple(
        Chip(i * per_chip + core, (i, 0, 0), core, i // 8)
        for i in range(chips_n)
        for core in range(per_chip)
    )
    c = PodCollective("all-reduce", "ar", "f32[8]", 32, ((0, 1),), 0, None, 1, comm_s, "")
    return PodReport(
        topology=topology,
        summary=topology,
        generation=topology.split(":")[0],
        chips=chips,
        mesh_axes=(("chips", len(chips)),),
        program="p",
        label="p",
        code="",
        batch=None,
        batch_words="",
        argument_bytes=GIB,
        output_bytes=0,
        temp_bytes=0,
        alias_bytes=0,
        code_bytes=0,
        hbm_bytes=16 * GIB if fits else GIB // 2,
        flops=1.0,
        bytes_accessed=1.0,
        optimal_s=optimal_s,
        collectives=(c,),
        unparsed=(),
        compile_s=0.1,
    )


def test_sizes_are_every_offered_v5e_slice_from_4_to_256_chips_ascending():
    names = podsweep.sizes("v5e")
    assert set(names) == set(tpuchips.offered_for("v5e"))
    chips = [tpuchips.parse_topology(n).chips for n in names]
    assert chips == sorted(chips) and chips[0] == 4 and chips[-1] == 256
    assert podsweep.sizes("v5e", 8, 16) == ("v5e:2x4", "v5e:4x4")
    assert [tpuchips.parse_topology(n).chips for n in podsweep.sizes("v4", 5, 64)] == [
        8,
        16,
        32,
        64,
    ]


def test_a_range_with_no_slice_is_refused_with_the_offered_ones():
    assert podsweep.sizes("v5e", 5, 7) == ()
    with pytest.raises(ValueError) as err:
        podsweep.sweep(podprograms.psum(), "v5e", 5, 7)
    message = str(err.value)
    assert "between 5 and 7 chips" in message
    assert all(name in message for name in tpuchips.offered_for("v5e"))


def test_speedups_divide_the_first_total_by_each():
    reports = [
        report("v5e:2x2", 8e-3, 2e-3),
        report("v5e:2x4", 4e-3, 1e-3),
        report("v5e:4x4", 1e-3, 4e-3, fits=False),
    ]
    rows = podsweep.speedups(reports)
    assert [r["topology"] for r in rows] == ["v5e:2x2", "v5e:2x4", "v5e:4x4"]
    assert [r["chips"] for r in rows] == [4, 8, 16]
    first = 8e-3 + 2e-3
    assert [r["speedup"] for r in rows] == pytest.approx([1.0, first / 5e-3, first / 5e-3])
    assert rows[1]["compute_hbm_s"] == 4e-3 and rows[1]["communication_s"] == 1e-3
    assert rows[2]["total_s"] == pytest.approx(5e-3)
    assert [r["fits"] for r in rows] == [True, True, False]


def test_speedups_count_chips_not_devices_and_say_none_without_an_estimate():
    v4 = report("v4:2x2x2", 2e-3, 0.0, per_chip=2)
    assert podsweep.speedups([v4])[0]["chips"] == 8  # 16 devices on 8 chips
    rows = podsweep.speedups([report("v6e:2x2", None, 1e-3), report("v6e:2x4", None, 1e-3)])
    assert [r["speedup"] for r in rows] == [None, None]
    later = podsweep.speedups([report("v5e:2x2", None, 1e-3), report("v5e:2x4", 1e-3, 0.0)])
    assert later[1]["speedup"] is None  # no first total to compare with
    assert podsweep.speedups([]) == []


def test_a_psum_sweep_keeps_the_work_a_chip_and_grows_the_communication():
    steps = []
    reports = podsweep.sweep(
        podprograms.psum(), "v5e", lo=4, hi=16, on_step=lambda *a: steps.append(a)
    )
    assert steps == [(0, 3, "v5e:2x2"), (1, 3, "v5e:2x4"), (2, 3, "v5e:4x4")]
    assert [r.topology for r in reports] == ["v5e:2x2", "v5e:2x4", "v5e:4x4"]
    block = podprograms.PSUM_ROWS * podprograms.PSUM_COLS * 4  # bytes of f32 a chip
    link = tpuchips.GENERATIONS["v5e"].ici_link_gbs * 1e9
    for r in reports:
        assert r.argument_bytes == block
        assert r.optimal_s == pytest.approx(reports[0].optimal_s, rel=1e-6)
        g = len(r.chips)
        # all chips in one all-reduce over both axes of a mesh (no v5e wraparound below 16x16)
        assert r.comm_s == pytest.approx(2 * (g - 1) / g * block / (2 * link), rel=1e-6)
    assert reports[0].comm_s < reports[1].comm_s < reports[2].comm_s
    rows = podsweep.speedups(reports)
    assert rows[0]["speedup"] == 1.0 and rows[2]["speedup"] < 1.0  # more chips, slower step


def test_each_row_names_the_links_the_model_gave_its_slowest_collective():
    rows = podsweep.speedups([report("v5e:2x2", 1e-3, 2e-3), report("v5e:2x4", 1e-3, 0.0)])
    # the pair (0, 1) sits on chips (0, 0) and (1, 0): a line along axis 0 of a mesh
    used = {k: rows[0][k] for k in ("collective", "links", "link_axes")}
    assert used == {"collective": "all-reduce", "links": 1, "link_axes": ("line", "-")}
    assert rows[1]["links"] is None  # its collective costs nothing: no link to name
    assert podsweep.switches(rows) == []


def test_a_real_sweep_over_the_switch_says_axis_0_closes_into_a_ring():
    """The psum's 64 MiB all-reduce over every chip of v5e:8x16 and v5e:16x16 (two compiles):
    axis 1 (16) is a ring on both, axis 0 closes at 16x16, and the sentence says so with the
    rows' own times."""
    reports = podsweep.sweep(podprograms.psum(), "v5e", lo=128, hi=256)
    rows = podsweep.speedups(reports)
    assert [r["topology"] for r in rows] == ["v5e:8x16", "v5e:16x16"]
    assert [(r["links"], r["link_axes"]) for r in rows] == [
        (3, ("line", "ring")),
        (4, ("ring", "ring")),
    ]
    t0, t1 = (f"{r['communication_s'] * 1e3:,.3f} ms" for r in rows)
    assert podsweep.switches(rows) == [
        "From v5e:8x16 to v5e:16x16, axis 0 closes into a ring (wraparound links): the model "
        f"gives each chip 4 links instead of 3, and communication falls from {t0} to {t1}."
    ]
    # links 3 -> 4 with the group 128 -> 256: time x (3/4) x (255/256) / (127/128)
    ratio = rows[1]["communication_s"] / rows[0]["communication_s"]
    assert ratio == pytest.approx(3 / 4 * (255 / 256) / (127 / 128), rel=1e-6)


def test_dcn_dominates_names_the_first_row_where_dcn_is_largest_and_where_it_is_most():
    def row(name, compute, ici, dcn):
        return {"topology": name, "compute_hbm_s": compute, "ici_s": ici, "dcn_s": dcn}

    rows = [row("a", 1e-3, 1e-3, 0), row("b", 1e-3, 1e-3, 1.5e-3), row("c", 1e-3, 1e-3, 3e-3)]
    for r in rows:
        r |= {"step_s": r["compute_hbm_s"] + r["ici_s"] + r["dcn_s"], "dcn_bytes": 2**20}
    said = podsweep.dcn_dominates(rows)
    assert said.startswith("From b on, DCN is the step's largest term (model): 1.500 ms")
    assert "From c on, DCN takes more than everything else together (model): 3.000 ms" in said
    assert podsweep.dcn_dominates(rows[:1]) == "DCN is never the step's largest term here (model)."
    assert podsweep.dcn_dominates([]) == ""


def test_a_slice_sweep_compiles_each_count_and_its_rows_come_from_the_reports():
    reports = podsweep.slice_sweep(podprograms.train(), "v5e:2x4", [1, 2])
    assert [r.topology for r in reports] == ["v5e:2x4", "2 x v5e:2x4"]
    rows = podsweep.slice_rows(reports)
    one, two = rows
    assert (one["slices"], one["chips"], one["hosts"]) == (1, 8, 2)
    assert (two["slices"], two["chips"], two["hosts"]) == (2, 16, 4)
    assert one["dcn_s"] == 0 and one["dcn_bytes"] == 0 and one["compute_from"] == "compiler"
    assert two["dcn_bytes"] == reports[1].network_bytes()["DCN"] > 0
    assert two["step_s"] == pytest.approx(two["compute_hbm_s"] + two["ici_s"] + two["dcn_s"])
    # libtpu gives no estimate for the step on two slices: the roofline stands in, labelled
    assert reports[1].optimal_s is None and two["compute_from"] == "roofline"
