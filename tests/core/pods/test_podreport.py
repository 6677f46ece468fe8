"""What a compile for a pod says, on reports built by hand (no JAX): the peak a device holds
against its HBM share, the words for a fit and a miss, the times added up, the dict every
figure travels in, and the units the figures are written in."""

import json
from dataclasses import replace

import pytest

from pmapviz.core.pods.podreport import PodCollective, PodReport, fmt_gib, fmt_seconds
from pmapviz.core.pods.podtopology import Chip

KIB, MIB, GIB = 1024, 1024**2, 1024**3


def collective(kind="all-reduce", groups=((0, 1, 2, 3),), model_s=2e-4, crossing=0):
    """One collective with made-up figures."""
    return PodCollective(
        kind=kind,
        name="all-reduce.1",
        shape="f32[1024,1024]",
        bytes=4 * MIB,
        groups=tuple(tuple(g) for g in groups),
        crossing=crossing,
        source_line="step.py:3",
        hlo_line=7,
        model_s=model_s,
        model_how="4 chips along axis 0 (line)",
    )


def report(**change):
    """A v5e:2x2 report: 1 GiB of arguments, 256 MiB out, 512 MiB temporaries, 64 MiB
    aliased, 1 MiB of code, two collectives; ``change`` replaces any field."""
    chips = tuple(Chip(i, (i % 2, i // 2, 0), 0, i // 2) for i in range(4))
    base = PodReport(
        topology="v5e:2x2",
        summary="v5e:2x2: 4 chips on 2 hosts",
        generation="v5e",
        chips=chips,
        mesh_axes=(("chips", 4),),
        program="train",
        label="a training step",
        code="step(w, x)",
        batch=4096,
        batch_words="examples in the global batch",
        argument_bytes=GIB,
        output_bytes=256 * MIB,
        temp_bytes=512 * MIB,
        alias_bytes=64 * MIB,
        code_bytes=MIB,
        hbm_bytes=16 * GIB,
        flops=2e12,
        bytes_accessed=3e9,
        optimal_s=1e-2,
        collectives=(collective(model_s=2e-4), collective("all-gather", ((0, 1), (2, 3)), 3e-4)),
        unparsed=(),
        compile_s=1.5,
        hlo="HloModule m",
    )
    return replace(base, **change)


def test_peak_is_arguments_output_temporaries_less_aliased_plus_code():
    r = report()
    assert r.peak_bytes == GIB + 256 * MIB + 512 * MIB - 64 * MIB + MIB


def test_fits_up_to_exactly_the_hbm_share():
    r = report()
    assert replace(r, hbm_bytes=r.peak_bytes).fits
    assert not replace(r, hbm_bytes=r.peak_bytes - 1).fits


def test_fit_words_say_how_much_of_how_much():
    r = report()
    assert r.fit_words() == f"fits: {fmt_gib(r.peak_bytes)} of 16.00 GiB a device"
    # the compiler's allowance, the published figure beside it (tpuchips.COMPILER_HBM)
    allowed = replace(r, hbm_bytes=round(15.75 * GIB), published_hbm_bytes=16 * GIB)
    assert allowed.fit_words() == (
        f"fits: {fmt_gib(r.peak_bytes)} of 15.75 GiB the compiler allows a device "
        "(16.00 GiB published)"
    )


def test_a_miss_says_by_how_much_and_the_largest_batch_or_the_note():
    r = report(hbm_bytes=GIB)
    over = r.peak_bytes - GIB
    words = r.fit_words()
    assert words.startswith(f"does not fit, by {fmt_gib(over)}: {fmt_gib(r.peak_bytes)} of ")
    assert "largest" not in words
    with_batch = replace(r, largest_batch=123456).fit_words()
    assert with_batch.endswith(
        "the largest batch that fits is 123,456 examples in the global batch"
    )
    noted = replace(r, largest_note="shrink the model").fit_words()
    assert noted.endswith("; shrink the model")


def test_times_add_the_model_to_the_estimate():
    r = report()
    assert r.comm_s == pytest.approx(5e-4)
    assert r.total_s == pytest.approx(1e-2 + 5e-4)
    assert report(optimal_s=None).total_s is None
    assert report(collectives=()).comm_s == 0


def test_group_size_is_the_largest_group():
    assert collective(groups=((0, 1), (2, 3, 4))).group_size == 3
    assert collective(groups=()).group_size == 0


def test_to_dict_carries_every_figure_as_json_and_leaves_the_hlo_out():
    r = report()
    d = r.to_dict()
    assert "hlo" not in d
    assert d["peak_bytes"] == r.peak_bytes and d["fits"] is True
    assert d["comm_s"] == r.comm_s and d["total_s"] == r.total_s
    assert d["n_devices"] == 4 and d["n_hosts"] == 2  # hosts 0 and 1 in the chips above
    assert d["chips"][3] == {"id": 3, "coords": (1, 1, 0), "core": 0, "host": 1, "slice": 0}
    assert d["collectives"][1]["kind"] == "all-gather"
    back = json.loads(json.dumps(d))
    assert back["argument_bytes"] == GIB and back["topology"] == "v5e:2x2"


def test_lines_give_the_summary_the_program_and_a_line_per_collective():
    r = report()
    lines = r.lines()
    assert lines[0] == r.summary
    assert lines[1] == "program: a training step"
    assert any(r.fit_words() in line for line in lines)
    per = [line for line in lines if line.startswith("  ")]
    assert len(per) == 2
    assert per[1].startswith("  all-gather f32[1024,1024] (4.0 MiB): 2 group(s) of 2")
    no_estimate = report(optimal_s=None, collectives=()).lines()
    assert any("no cost model" in line for line in no_estimate)
    assert any("over 0 collective(s)" in line for line in no_estimate)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (16 * GIB, "16.00 GiB"),
        (GIB + GIB // 2, "1.50 GiB"),
        (GIB / 10, "0.10 GiB"),  # GiB from a tenth of one
        (GIB // 10, "102.4 MiB"),  # a byte less: MiB
        (512 * MIB, "0.50 GiB"),
        (100 * MIB, "100.0 MiB"),
        (MIB, "1.0 MiB"),
        (4 * KIB, "4.0 KiB"),
        (0, "0.0 KiB"),
        (2048 * GIB, "2,048.00 GiB"),
    ],
)
def test_fmt_gib(n, text):
    assert fmt_gib(n) == text


@pytest.mark.parametrize(
    ("s", "text"),
    [
        (None, "none"),
        (0, "0"),
        (0.0015, "1.500 ms"),
        (1.0, "1,000.000 ms"),
        (4.56e-5, "45.6 µs"),
        (1e-7, "0.1 µs"),
        (5e-8, "< 0.1 µs"),
    ],
)
def test_fmt_seconds(s, text):
    assert fmt_seconds(s) == text


def test_mesh_label_says_where_a_device_sits_on_the_mesh():
    """Row-major over the mesh's axes, as Mesh(devices.reshape(sizes)) places them."""
    from dataclasses import replace

    r = replace(
        report(), mesh_axes=(("data", 2), ("model", 4)), mesh_order=(7, 6, 5, 4, 3, 2, 1, 0)
    )
    assert r.mesh_label(7) == "data 0 · model 0"
    assert r.mesh_label(4) == "data 0 · model 3" and r.mesh_label(3) == "data 1 · model 0"
    assert r.mesh_label(99) == ""


def test_a_refused_batch_names_both_batches_and_whose_figures_are_shown():
    """The issue's Pods page: batch 9,000,000 refused, the figures at 8,156,240: every figure
    says the batch it holds for, in one unit (GiB)."""
    r = report(
        batch=8_156_240,
        asked_batch=9_000_000,
        largest_batch=8_156_240,
        refusal="HLO temporaries need 17.29 GiB; the compiler allows 15.75 GiB of HBM a device",
    )
    words = r.fit_words()
    assert words.startswith("does not fit at batch 9,000,000: HLO temporaries need 17.29 GiB")
    assert "Shown instead: batch 8,156,240, the largest that fits" in words
    assert f"{fmt_gib(r.peak_bytes)} a device at peak, of the 16.00 GiB a device" in words
    assert "G of" not in words and "G)" not in words  # the compiler's 'G' is written as GiB
    assert r.at_batch() == " at batch 8,156,240"
    assert "memory per device at batch 8,156,240: does not fit at batch 9,000,000" in "\n".join(
        r.lines()
    )
    assert report(batch=None).at_batch() == ""


def sliced_report():
    """2 slices of 2 chips: a reduce-scatter inside each, a send/recv between, an all-gather
    inside each (the hierarchical all-reduce's phases as libtpu writes them), no estimate."""
    chips = tuple(Chip(i, (i % 2, 0, 0), 0, i // 2, i // 2) for i in range(4))

    def c(kind, name, bytes_, groups, network, moved, model_s, transfer=""):
        return PodCollective(
            kind,
            name,
            "f32[8]",
            bytes_,
            groups,
            0,
            None,
            1,
            model_s,
            "",
            "",
            network,
            moved,
            transfer,
        )

    inside = ((0, 1), (2, 3))
    between = ((0, 2), (1, 3))
    return report(
        chips=chips,
        slices=2,
        hosts=2,
        optimal_s=None,
        roofline_s=2e-3,
        roofline_how="roofline estimate (a test)",
        dcn_how="a DCN model",
        phase_names=(("rs", "send", "recv", "ag"),),  # as slicephases reads them
        collectives=(
            c("reduce-scatter", "rs", 8 * MIB, inside, "ICI", 4 * MIB, 1e-4),
            c("send", "send", 4 * MIB, between, "DCN", 4 * MIB, 3e-3, "ALL_REDUCE"),
            c("recv", "recv", 4 * MIB, between, "DCN", 0.0, 0.0, "ALL_REDUCE"),
            c("all-gather", "ag", 4 * MIB, inside, "ICI", 4 * MIB, 2e-4),
        ),
    )


def test_a_multislice_report_adds_each_networks_bytes_and_times():
    r = sliced_report()
    assert r.network_bytes() == {"ICI": 8 * MIB, "DCN": 4 * MIB}
    assert r.ici_s == pytest.approx(3e-4) and r.dcn_s == pytest.approx(3e-3)
    assert r.total_s is None  # the compiler gave no estimate
    assert r.compute_s == 2e-3 and r.step_s == pytest.approx(2e-3 + 3.3e-3)
    assert [[c.name for c in p] for p in r.phases()] == [["rs", "send", "recv", "ag"]]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["phases"] == [["rs", "send", "recv", "ag"]] and d["dcn_s"] == r.dcn_s


def test_a_multislice_reports_lines_name_the_slices_networks_and_phases_from_its_figures():
    r = sliced_report()
    text = "\n".join(r.lines())
    assert "slices: 2 over the data-center network (DCN), 2 hosts" in text
    assert f"{fmt_gib(8 * MIB)} over ICI ({fmt_seconds(r.ici_s)}, model)" in text
    assert f"{fmt_gib(4 * MIB)} over DCN ({fmt_seconds(r.dcn_s)}, a DCN model)" in text
    assert "none from libtpu; 2.000 ms by the roofline estimate (a test)" in text
    assert (
        "1. reduce-scatter f32[8], 4.0 MiB a device, inside each slice (ICI); 2. send + recv "
        "f32[8], 4.0 MiB a device, between slices (DCN); 3. all-gather f32[8]"
    ) in text
    assert "  send [DCN] f32[8]" in text
    # one slice: none of it
    assert "[ICI]" not in "\n".join(report().lines()) and "slices:" not in "\n".join(
        report().lines()
    )
