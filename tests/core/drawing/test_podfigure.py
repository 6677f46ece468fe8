"""A TPU slice as a Plotly figure: chips where their coordinates say, hosts around them, a
collective's groups (or a permute's pairs) on them, and a sweep of slice sizes. The reports are
built by hand: no JAX, no libtpu."""

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from pmapviz.core.base.palette import device_colour
from pmapviz.core.drawing import podfigure, podshapes
from pmapviz.core.pods.podreport import PodCollective, PodReport
from pmapviz.core.pods.podtopology import Chip

GIB = 1024**3


def _chips(shape, host, per_chip=1):
    """Devices numbered x fastest, then y, then z; ``host(x, y, z)`` says each chip's host."""
    nx, ny, nz = (list(shape) + [1, 1])[:3]
    coords = [(x, y, z) for z in range(nz) for y in range(ny) for x in range(nx)]
    return tuple(
        Chip(i * per_chip + core, c, core, host(*c))
        for i, c in enumerate(coords)
        for core in range(per_chip)
    )


def _collective(kind, groups, model_s=1e-4, shape="f32[1024,1024]"):
    groups = tuple(tuple(g) for g in groups)
    return PodCollective(kind, "op.1", shape, 4 << 20, groups, 0, None, 1, model_s, "a model")


def _report(topology, chips, collectives=(), axes=(("chips", 8),), optimal_s=1e-3, temp=0):
    return PodReport(
        topology,
        f"{topology}: summary",
        topology.split(":")[0],
        chips,
        axes,
        "matmul",
        "a matmul",
        "",
        None,
        "",
        0,
        0,
        temp,
        0,
        0,
        16 * GIB,
        1e9,
        1e6,
        optimal_s,
        tuple(collectives),
        (),
        0.5,
    )


def _slice_2x4(collectives=()):
    """v5e:2x4 on two hosts: x 0-1 on host 0, x 2-3 on host 1 (4 columns, 2 rows)."""
    chips = _chips((4, 2), lambda x, y, z: x // 2)
    return _report("v5e:2x4", chips, collectives, axes=(("data", 2), ("model", 4)))


def _shapes(fig, name):
    return [s for s in fig.layout.shapes if s.name == name]


def _centre(shape):
    return ((shape.x0 + shape.x1) / 2, (shape.y0 + shape.y1) / 2)


def _path_bounds(path):
    numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path)]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _xy(report, device):
    (chip,) = [c for c in report.chips if c.id == device]
    return chip.coords[0], chip.coords[1]


def _texts(fig):
    return [a.text for a in fig.layout.annotations if not a.showarrow]


def test_every_chip_is_drawn_once_at_its_coordinates_with_its_id_and_host():
    report = _slice_2x4()
    fig = podfigure.pod_figure(report)
    chips = _shapes(fig, "chip")
    assert len(chips) == len({c.coords for c in report.chips}) == 8
    assert sorted(_centre(s) for s in chips) == sorted(
        (float(x), float(y)) for x, y, _ in (c.coords for c in report.chips)
    )
    (hover,) = fig.data
    assert len(hover.x) == 8 and hover.hovertext[5] == "device 5<br>chip at (1, 1, 0)<br>host 0"
    assert all(str(i) in _texts(fig) for i in range(8))  # small slice: ids on the chips
    assert fig.layout.title.text == "v5e:2x4: 8 chips on 2 hosts"
    assert "data 2 × model 4" in fig.layout.title.subtitle.text
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    assert not fig.layout.xaxis.visible and not fig.layout.yaxis.visible
    assert not fig.layout.showlegend


def test_each_host_is_a_rounded_rectangle_around_its_chips_only():
    report = _slice_2x4()
    fig = podfigure.pod_figure(report)
    hosts = _shapes(fig, "host 0") + _shapes(fig, "host 1")
    assert len(hosts) == len({c.host for c in report.chips}) == 2
    assert len([s for s in fig.layout.shapes if s.name.startswith("host")]) == 2
    spots = podfigure.chip_layout(report)
    for h, shape in enumerate(hosts):
        assert shape.type == "path" and " Q " in shape.path  # rounded corners
        x0, y0, x1, y1 = _path_bounds(shape.path)
        for s in spots:
            inside = x0 < s.x - podfigure.CHIP / 2 and s.x + podfigure.CHIP / 2 < x1
            inside = inside and y0 < s.y - podfigure.CHIP / 2 and s.y + podfigure.CHIP / 2 < y1
            assert inside == (s.host == h)
    assert {"host 0", "host 1"} <= set(_texts(fig))


def test_a_collectives_groups_colour_their_chips_and_groups_across_hosts_are_dashed():
    groups = [(0, 4), (1, 5), (2, 6), (3, 7)]  # columns: each within one host
    across = [(0, 2), (1, 3), (4, 6), (5, 7)]  # x and x + 2: each group on both hosts
    report = _slice_2x4([_collective("all-reduce", groups), _collective("all-gather", across)])
    assert podfigure.group_of_device(report, 0) == {0: 0, 4: 0, 1: 1, 5: 1, 2: 2, 6: 2, 3: 3, 7: 3}
    assert podfigure.crossing_groups(report, 0) == set()
    assert podfigure.crossing_groups(report, 1) == {0, 1, 2, 3}

    fig = podfigure.pod_figure(report, 0)
    fill = {_centre(s): s.fillcolor for s in _shapes(fig, "chip")}
    colour = {
        g: {fill[(float(x), float(y))] for x, y in [_xy(report, d) for d in devices]}
        for g, devices in enumerate(groups)
    }
    assert all(len(c) == 1 for c in colour.values())  # a group shares one colour
    assert len({c.pop() for c in colour.values()}) == len(groups)  # groups differ
    assert all(s.line.dash != "dash" for s in _shapes(fig, "chip"))
    assert "all-reduce f32[1024,1024]" in fig.layout.title.text
    assert not any("crosses hosts" in t.name for t in fig.data[1:])

    fig = podfigure.pod_figure(report, 1)
    assert all(s.line.dash == "dash" for s in _shapes(fig, "chip"))
    assert any("crosses hosts" in (t.name or "") for t in fig.data[1:])
    assert "4 groups of 2, 4 across hosts" in fig.layout.title.subtitle.text
    assert "crosses hosts" in fig.data[0].hovertext[0]


def test_more_groups_than_colours_cycle_the_palette():
    report = _report(
        "v5e:4x8",
        _chips((4, 8), lambda x, y, z: y // 2),
        [_collective("all-reduce", [(d,) for d in range(32)])],
    )
    fig = podfigure.pod_figure(report, 0)
    fills = [s.fillcolor for s in _shapes(fig, "chip")]
    assert len(set(fills)) == 16 and fills[0] == fills[16]


def test_a_permute_is_one_arrow_a_pair_and_pairs_across_hosts_differ():
    pairs = [(d, (d + 1) % 8) for d in range(8)]  # a ring over x then y
    report = _slice_2x4([_collective("collective-permute", pairs)])
    fig = podfigure.pod_figure(report, 0)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == len(pairs)
    for (src, dst), a in zip(pairs, arrows, strict=True):
        assert (a.ax, a.ay) == _xy(report, src) and (a.x, a.y) == _xy(report, dst)
    crossing = podfigure.crossing_groups(report, 0)
    assert crossing == {1, 3, 5, 7}  # 1->2, 3->4, 5->6, 7->0 change host
    for k, a in enumerate(arrows):
        assert a.arrowcolor == (podfigure.CROSSES if k in crossing else podfigure.WITHIN)
    assert [t.name for t in fig.data[1:]] == ["pair on one host (4)", "pair crosses hosts (4)"]
    assert "receives from device 0; sends to device 2" in fig.data[0].hovertext[1]
    assert "8 pairs, 4 across hosts" in fig.layout.title.subtitle.text


def test_a_3d_slice_puts_its_z_planes_side_by_side_and_two_cores_make_one_chip():
    chips = _chips((2, 2, 2), lambda x, y, z: z, per_chip=2)  # v4: two devices a chip
    groups = [(0, 2, 4, 6), (1, 3, 5, 7), (8, 10, 12, 14), (9, 11, 13, 15)]  # by core
    report = _report("v4:2x2x2", chips, [_collective("all-reduce", groups)], (("data", 16),))
    fig = podfigure.pod_figure(report, 0)
    chip_shapes = _shapes(fig, "chip")
    assert len(chip_shapes) == 8 and len(fig.data[0].x) == 8
    assert fig.data[0].hovertext[0].startswith("devices 0, 1<br>chip at (0, 0, 0)<br>host 0")
    planes = {}
    for s in podfigure.chip_layout(report):
        planes.setdefault(s.coords[2], []).append(s.x)
    assert max(planes[0]) + podfigure.CHIP < min(planes[1])  # no overlap
    assert min(planes[1]) == 3  # offset by (max x + 2) * z = 3
    assert {"<b>z = 0</b>", "<b>z = 1</b>"} <= set(_texts(fig))
    boxes = podfigure.host_boxes(report)
    assert [(b.host, b.z) for b in boxes] == [(0, 0), (1, 1)] and boxes[0].x1 < boxes[1].x0
    cores = _shapes(fig, "core")  # core 1 is in another group than core 0: its own strip
    assert len(cores) == 8 and {c.fillcolor for c in cores} == {device_colour(1), device_colour(3)}
    assert "(2 devices a chip)" in fig.layout.title.subtitle.text
    assert fig.layout.title.text.startswith("v4:2x2x2: 8 chips on 2 hosts")


def test_a_256_chip_slice_has_no_text_on_its_chips_and_smaller_markers():
    big = _report(
        "v5e:16x16",
        _chips((16, 16), lambda x, y, z: (y // 2) * 4 + x // 4),
        [_collective("all-gather", [range(k, 256, 16) for k in range(16)])],
    )
    fig = podfigure.pod_figure(big, 0)
    assert len(_shapes(fig, "chip")) == 256 and len(fig.data[0].hovertext) == 256
    assert not [t for t in _texts(fig) if t.isdigit()]  # hover only
    assert len([t for t in _texts(fig) if t.startswith("host ")]) == 32
    assert 360 <= fig.layout.height <= 560
    small = podfigure.pod_figure(_slice_2x4())
    assert fig.data[0].marker.size < small.data[0].marker.size
    for f in (fig, small):
        assert f.layout.font.size >= 14 and f.layout.title.font.size >= 14
        assert all(a.font.size >= 14 for a in f.layout.annotations if not a.showarrow)


def test_a_collective_that_is_not_there_is_an_index_error():
    with pytest.raises(IndexError, match="has 0 collective"):
        podfigure.pod_figure(_slice_2x4(), 0)
    assert podfigure.pod_figure(_slice_2x4(), title="mine").layout.title.text == "mine"


def _sweep_reports():
    out = []
    for shape, comm, optimal in (((2, 2), 2e-4, 4e-3), ((2, 4), 3e-4, 2e-3), ((4, 4), 4e-4, 1e-3)):
        chips = _chips(shape, lambda x, y, z: 0)
        name = f"v5e:{shape[0]}x{shape[1]}"
        out.append(_report(name, chips, [_collective("all-reduce", [], comm)], optimal_s=optimal))
    return out


def test_the_sweep_stacks_the_estimate_and_communication_against_the_ideal():
    reports = _sweep_reports()
    fig = podfigure.sweep_figure(list(reversed(reports)))  # any order: drawn by chip count
    est, comm, ideal = fig.data
    assert est.name == "compute + HBM (the compiler's estimate)"
    assert comm.name == "communication (model)" and ideal.name == "ideal: time / chips"
    assert list(est.y) == pytest.approx([r.optimal_s * 1e3 for r in reports])
    assert list(comm.y) == pytest.approx([r.comm_s * 1e3 for r in reports])
    first = (reports[0].optimal_s + reports[0].comm_s) * 1e3
    assert list(ideal.y) == pytest.approx([first * 4 / n for n in (4, 8, 16)])
    assert list(est.x) == [2.0, 3.0, 4.0]  # log2(chips)
    assert list(fig.layout.xaxis.ticktext) == [
        "v5e:2x2<br>4 chips",
        "v5e:2x4<br>8 chips",
        "v5e:4x4<br>16 chips",
    ]
    assert fig.layout.barmode == "stack" and not fig.layout.annotations
    assert fig.layout.title.text == "a matmul on v5e slices of 4 to 16 chips"


def test_the_sweep_says_where_there_is_no_estimate_and_what_does_not_fit():
    reports = _sweep_reports()
    reports[1] = replace(reports[1], optimal_s=None)  # v6e: libtpu has no cost model
    reports[2] = replace(reports[2], temp_bytes=20 * GIB)
    fig = podfigure.sweep_figure(reports)
    est, comm, ideal = fig.data
    assert est.y[1] is None and comm.y[1] == pytest.approx(reports[1].comm_s * 1e3)
    notes = {round(a.x): a.text for a in fig.layout.annotations}
    assert notes[3] == "no compiler estimate"
    assert notes[4].startswith("<b>does not fit</b>")
    does_not_fit = [a for a in fig.layout.annotations if "does not fit" in a.text]
    assert does_not_fit[0].font.color == podfigure.NO_FIT
    top = reports[2].optimal_s * 1e3 + reports[2].comm_s * 1e3
    assert does_not_fit[0].y == pytest.approx(top) and does_not_fit[0].yanchor == "bottom"
    first = (reports[0].optimal_s + reports[0].comm_s) * 1e3
    assert ideal.y[2] == pytest.approx(first / 4)
    assert fig.layout.yaxis.range[1] > top


def test_a_sweep_without_any_estimate_scales_the_communication():
    reports = [replace(r, optimal_s=None) for r in _sweep_reports()]
    fig = podfigure.sweep_figure(reports)
    assert fig.data[2].name == "ideal: communication / chips"
    assert fig.data[2].y[1] == pytest.approx(reports[0].comm_s * 1e3 / 2)
    with pytest.raises(ValueError):
        podfigure.sweep_figure([])


def test_the_module_imports_neither_jax_nor_streamlit():
    tree = ast.parse(Path(podfigure.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.split(".")[0] in ("jax", "jaxlib", "streamlit")]


def test_the_sweep_names_under_each_slice_the_links_the_model_used():
    reports = []
    for shape, comm in (((8, 8), 1.321e-3), ((8, 16), 0.888e-3), ((16, 16), 0.668e-3)):
        chips = _chips(shape, lambda x, y, z: y // 4)
        every = _collective("all-reduce", [range(len(chips))], comm)
        reports.append(_report(f"v5e:{shape[0]}x{shape[1]}", chips, [every]))
    fig = podfigure.sweep_figure(reports)
    assert list(fig.layout.xaxis.ticktext) == [
        "v5e:8x8<br>64 chips<br>line x line",
        "v5e:8x16<br>128 chips<br>line x ring",
        "v5e:16x16<br>256 chips<br>ring x ring",
    ]
    assert fig.layout.margin.b == podfigure.MARGIN["b"] >= 100  # room for the third line
    # hand-built collectives without groups: no links to name, two lines as before
    assert all(
        t.count("<br>") == 1 for t in podfigure.sweep_figure(_sweep_reports()).layout.xaxis.ticktext
    )


def test_past_the_drawn_devices_the_first_whole_slices_are_drawn_and_the_words_count_all(
    monkeypatch,
):
    """64 x v5e:16x16 is 16,384 chips: a page drew them all in 40 s. Past DRAWN_DEVICES the
    figure draws the first whole slices (groups cut to them, a permute's pairs kept where both
    ends are) and its title says so; the title's counts and the subtitle's groups are still
    every slice's."""
    monkeypatch.setattr(podshapes, "DRAWN_DEVICES", 4)
    chips = tuple(Chip(10 * s + k, (k % 2, k // 2, 0), 0, s, s) for s in range(4) for k in range(2))
    ring = [(chips[k].id, chips[(k + 1) % 8].id) for k in range(8)]
    every = [[c.id for c in chips]]
    report = replace(
        _report("4 x v5e:2x1", chips, [_collective("all-reduce", every)]),
        slices=4,
        collectives=(
            _collective("all-reduce", every),
            _collective(podfigure.PERMUTE, ring),
        ),
    )
    part = podfigure.drawn_part(report)
    assert {c.slice for c in part.chips} == {0, 1} and len(part.chips) == 4
    assert part.collectives[0].groups == ((0, 1, 10, 11),)  # cut to the drawn slices
    assert part.collectives[1].groups == ((0, 1), (1, 10), (10, 11))  # pairs inside them
    fig = podfigure.pod_figure(report, 0)
    title = fig.layout.title.text
    assert "8 chips on 4 hosts in 4 slices" in title  # the words count every slice
    assert "drawn: slices 0 to 1 of 4, each laid out the same" in title
    assert "1 group of 8" in str(fig.layout.title)  # the subtitle: every slice's group
    assert len(fig.data[0].x) == 4  # four chips drawn
    monkeypatch.setattr(podshapes, "DRAWN_DEVICES", 1024)
    assert podfigure.drawn_part(report) is report  # under the cap: everything, as it was
