"""A pod compile and a sweep as notebook views, on reports built by hand (no JAX): whatever a
caller typed is escaped, the text is the report's lines, the data carries every figure and the
rows, each host is a box of its chips, and a sweep has a row per slice with its speed-up."""

from dataclasses import replace

from pmapviz.core.drawing import podview
from pmapviz.core.pods.commmodel import MODEL_NAME
from pmapviz.core.pods.podreport import PodCollective, PodReport, fmt_seconds
from pmapviz.core.pods.podtopology import Chip

GIB = 1024**3
SCRIPT = "<script>alert('x')</script>"


def report(topology="v5e:2x4", hosts=2, optimal_s=1e-3, comm_s=2e-4, label="my step"):
    """Eight chips in a 2x4 grid, hosts of four; one all-reduce over every chip and one
    all-gather in pairs."""
    chips = tuple(Chip(i, (i % 2, i // 2, 0), 0, i * hosts // 8) for i in range(8))
    every = PodCollective(
        "all-reduce", "ar.1", "f32[256]", 1024, (tuple(range(8)),), 1, "f.py:2", 9, comm_s, "8"
    )
    pairs = PodCollective(
        "all-gather", "ag.1", "f32[4]", 16, ((0, 1), (2, 3), (4, 5), (6, 7)), 0, None, 12, 0.0, ""
    )
    return PodReport(
        topology=topology,
        summary=f"{topology}: 8 chips on {hosts} hosts",
        generation="v5e",
        chips=chips,
        mesh_axes=(("chips", 8),),
        program="mine",
        label=label,
        code=f"f(x)  # {SCRIPT}",
        batch=None,
        batch_words="",
        argument_bytes=GIB,
        output_bytes=0,
        temp_bytes=0,
        alias_bytes=0,
        code_bytes=0,
        hbm_bytes=16 * GIB,
        flops=1e9,
        bytes_accessed=2e6,
        optimal_s=optimal_s,
        collectives=(every, pairs),
        unparsed=(),
        compile_s=0.25,
        hlo="HloModule big",
    )


def test_a_label_or_code_with_a_script_tag_is_escaped():
    r = report(label=f"evil {SCRIPT}")
    view = podview.report_view(r)
    html = view.html()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;" in html
    assert view.title == f"evil {SCRIPT} on v5e:2x4"  # the title is text, escaped when drawn


def test_the_text_is_the_reports_lines_and_the_data_every_figure_and_row():
    r = report()
    view = podview.report_view(r)
    assert view.text == "\n".join(r.lines())
    data = view.to_dict()
    assert {"peak_bytes", "fits", "comm_s", "total_s", "n_devices", "n_hosts", "rows"} <= set(data)
    assert "hlo" not in data
    assert data["n_devices"] == 8 and data["n_hosts"] == 2
    assert [row["kind"] for row in data["rows"]] == ["all-reduce", "all-gather"]
    assert data["rows"][0]["groups"] == "1 of 8" and data["rows"][1]["groups"] == "4 of 2"
    assert data["rows"][0]["crossing hosts"] == 1 and data["rows"][1]["source"] == ""
    assert view.source is r and view.fits  # attributes of the report, through the view


def test_figures_say_where_each_comes_from():
    r = report()
    rows = {row["what"]: row for row in podview.figures(r)}
    assert rows["memory per device"]["value"] == r.fit_words()
    assert rows["communication time"]["value"] == fmt_seconds(r.comm_s)
    assert rows["communication time"]["from"] == MODEL_NAME
    assert rows["FLOPs per device"]["value"] == "1,000,000,000"
    none = {row["what"]: row for row in podview.figures(replace(r, optimal_s=None))}
    assert "no cost model" in none["compute + HBM time"]["value"]


def test_each_host_is_a_box_and_chips_take_the_colour_of_their_group():
    html = podview.chip_html(report(hosts=2))
    assert html.count(">host ") == 2
    assert html.count("title='device ") == 8
    # the first collective with several groups is the pairs: four colours, two chips each
    colours = [c for c in ("#4C78A8", "#F58518", "#54A24B", "#E45756") if html.count(c) == 2]
    assert len(colours) == 4
    one_host = podview.chip_html(report(hosts=1))
    assert one_host.count(">host ") == 1


def test_a_report_without_collectives_says_none():
    view = podview.report_view(replace(report(), collectives=()))
    assert "None: every chip works on its own block." in view.html()
    assert view.to_dict()["rows"] == []


def test_a_sweep_has_a_row_per_slice_with_its_speed_up():
    small = report("v5e:2x2", optimal_s=4e-3, comm_s=0.0)
    big = report("v5e:2x4", optimal_s=1e-3, comm_s=1e-3, label=f"my {SCRIPT}")
    view = podview.sweep_view([small, big])
    rows = view.to_dict()["rows"]
    assert [r["topology"] for r in rows] == ["v5e:2x2", "v5e:2x4"]
    assert [r["speed-up"] for r in rows] == ["1.00x", f"{4e-3 / 2e-3:.2f}x"]
    assert rows[1]["total"] == fmt_seconds(2e-3)
    assert len(view.to_dict()["reports"]) == 2
    assert view.text.count("\n") == 1 and "topology: v5e:2x4" in view.text
    assert view.title == "my step: one step from 8 to 8 chips"  # both hand-built with 8 chips
    assert "<script" not in podview.sweep_view([big]).html().lower()


def test_a_sweep_without_estimates_or_reports_still_draws():
    rows = podview.sweep_rows([report(optimal_s=None), report(optimal_s=None)])
    assert [r["speed-up"] for r in rows] == ["n/a", "n/a"]
    empty = podview.sweep_view([])
    assert empty.title == "nothing" and empty.to_dict()["rows"] == []


def _whole_slice(topology, comm_s):
    """A hand-built compile for a 2-D v5e slice: one all-reduce over every chip, ``comm_s``."""
    nx, ny = (int(n) for n in topology.split(":")[1].split("x"))
    chips = tuple(Chip(i, (i % nx, i // nx, 0), 0, i // 4) for i in range(nx * ny))
    every = PodCollective(
        "all-reduce", "ar.1", "f32[16]", 64, (tuple(range(nx * ny)),), 0, None, 3, comm_s, ""
    )
    return replace(report(topology), chips=chips, collectives=(every,))


def test_a_sweep_names_each_slices_links_and_says_where_the_axes_close_into_rings():
    reports = [
        _whole_slice("v5e:8x8", 1.321e-3),
        _whole_slice("v5e:8x16", 0.888e-3),
        _whole_slice("v5e:16x16", 0.668e-3),
    ]
    rows = podview.sweep_rows(reports)
    assert [r["links (model)"] for r in rows] == [
        "line x line (2 links)",
        "line x ring (3 links)",
        "ring x ring (4 links)",
    ]
    said = podview.sweep_switches(reports)
    assert said == [
        "From v5e:8x8 to v5e:8x16, axis 1 closes into a ring (wraparound links): the model gives "
        f"each chip 3 links instead of 2, and communication falls from {fmt_seconds(1.321e-3)} "
        f"to {fmt_seconds(0.888e-3)}.",
        "From v5e:8x16 to v5e:16x16, axis 0 closes into a ring (wraparound links): the model "
        f"gives each chip 4 links instead of 3, and communication falls from "
        f"{fmt_seconds(0.888e-3)} to {fmt_seconds(0.668e-3)}.",
    ]
    view = podview.sweep_view(reports)
    assert view.to_dict()["switches"] == said
    assert all(line in view.text for line in said)
    assert all(line in view.html() for line in said)  # no markup in them to escape
    # the hand-built reports of the test above (8 chips each): lines both ways, no switch
    small = podview.sweep_view([report("v5e:2x2"), report("v5e:2x4")])
    assert small.to_dict()["switches"] == []
    assert {r["links (model)"] for r in small.to_dict()["rows"]} == {"line x line (2 links)"}
    quiet = podview.sweep_rows([report(comm_s=0.0)])  # no collective costs anything: no links
    assert quiet[0]["links (model)"] == "n/a"


def test_a_sweep_row_names_the_batch_compiled_and_the_batch_asked():
    """dot products at 10,000,000 on 8 chips divide; the same on a slice that does not divide
    them is rounded up, and the row says both; a refused batch says it was clipped."""
    even = replace(report(), batch=10_000_000, asked_batch=10_000_000)
    rounded = replace(report(topology="v5e:16x16"), batch=10_000_128, asked_batch=10_000_000)
    rounded = replace(rounded, mesh_axes=(("chips", 256),))
    clipped = replace(report(), batch=4_000, asked_batch=9_000, refusal="too big")
    rows = podview.sweep_rows([even, rounded, clipped])
    assert [r["batch compiled"] for r in rows] == [
        "10,000,000",
        "10,000,128 (10,000,000 asked, rounded up to divide 256)",
        "4,000 (9,000 asked, the largest that fits)",
    ]
    assert "batch compiled" not in podview.sweep_rows([report()])[0]  # no batch: no column


def test_a_change_and_a_note_come_before_the_first_figure():
    from pmapviz.core.pods.compiledinputs import batch_rounded

    r = replace(
        report(),
        changes=(batch_rounded(1000, 1008, 16, "chips"),),
        notes=(f"nothing is split {SCRIPT}",),
    )
    html = podview.report_view(r).html()
    first_figure = html.index("role='img'")
    assert html.index("Batch 1,000 rounded up to 1,008") < first_figure
    assert html.index("nothing is split &lt;script&gt;") < first_figure  # escaped


def test_several_slices_each_network_and_the_all_reduces_phases_from_one_compile():
    import pytest

    from pmapviz.core.pods import podcompile, podtopology
    from pmapviz.features.pods import podsettings

    if not podtopology.availability().ok:
        pytest.skip("libtpu is the pods extra")
    r = podcompile.compile_for(podsettings.program("train"), "2 x v5e:2x4", multislice=True)
    nets = podview.network_rows(r)
    assert [n["network"].split()[0] for n in nets] == ["ICI", "DCN"]
    assert nets[1]["time (model)"] == fmt_seconds(r.dcn_s)
    rows = podview.collective_rows(r)
    assert [row["network"].split()[0] for row in rows] == [c.network for c in r.collectives]
    (phase,) = r.phases()
    steps = podview.phase_steps(phase)
    assert [s["what"] for s in steps] == ["reduce-scatter", "send + recv", "all-gather"]
    assert [s["network"] for s in steps] == ["ICI", "DCN", "ICI"]
    html = podview.phases_html(r)
    assert html.count("border:3px solid") == 3 and "DCN: between slices" in html
    picture = podview.chip_html(r)  # a frame per slice, its hosts, one DCN link, every id
    assert picture.count("slice 0 (8 devices") == 1 and picture.count("slice 1 (8 devices") == 1
    assert picture.count(">DCN<div") == 1
    assert all(f"title='device {c.id} at" in picture for c in r.chips)
    assert picture.count("host ") - picture.count(", host ") == len({c.host for c in r.chips})


def test_the_html_picture_of_many_slices_draws_the_first_and_says_so():
    """64 slices of 8 chips: the one-row picture draws 8 slices (MOST_SLICES) and its line says
    which; 2 slices are drawn whole, with nothing said."""
    from pmapviz.core.pods.podtopology import Chip

    def chips(slices):
        return [
            Chip(100 * s + k, (k % 4, k // 4, 0), 0, 2 * s + k // 4, s)
            for s in range(slices)
            for k in range(8)
        ]

    many = podview.slice_html(chips(64), "64 x v5e:2x4")
    assert many.count("slice 7 (") == 1 and "slice 8 (" not in many
    assert "drawn: slices 0 to 7 of 64, each laid out the same" in many
    two = podview.slice_html(chips(2), "2 x v5e:2x4")
    assert "slice 1 (" in two and "drawn:" not in two
