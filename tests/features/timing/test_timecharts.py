"""Figures of measurements: every curve inside its axes, speed-up and efficiency apart."""

import pytest

from pmapviz.core.xla import timeline, tracefiles
from pmapviz.features.timing import timecharts
from tests.fakes import FIXTURES

TPU_TRACE = FIXTURES.parent / "tpu-v5e" / "psum_and_matmul_tpu.perfetto_trace.json.gz"


def _rows(speedups: dict[int, float], impl: str = "pmap") -> list[dict]:
    return [
        {"impl": impl, "devices": k, "size": 1, "speedup": s, "efficiency": s / k}
        for k, s in speedups.items()
    ]


def test_speedup_and_efficiency_have_separate_labelled_panels_and_stay_inside():
    rows = _rows({1: 1.0, 2: 0.9, 4: 0.7, 8: 0.4}) + _rows({1: 0.95, 8: 9.5}, "shard_map")
    fig = timecharts.speedup_figure(rows)
    titles = [a.text for a in fig.layout.annotations]
    assert any("Speed-up" in t for t in titles) and any("efficiency" in t for t in titles)
    for trace in fig.data:
        axis = fig.layout.yaxis if trace.yaxis in (None, "y") else fig.layout.yaxis2
        lo, hi = axis.range
        assert all(lo <= y <= hi for y in trace.y), (trace.name, axis.range)
    panel = {t.name: t.yaxis for t in fig.data}
    assert panel["ideal: k devices, k times faster"] in (None, "y")  # only on speed-up
    assert panel["ideal efficiency (100%)"] == "y2"
    assert fig.layout.yaxis2.range[1] >= 100 * 9.5 / 8  # a super-linear point still fits


def test_loss_figure_names_devices_from_the_labels_given():
    fig = timecharts.loss_figure(
        [1.0, 0.5], [1.0, 0.5], [[1.0, 1.1], [0.4, 0.6]], ["cuda:0", "cuda:1"]
    )
    assert fig.data[0].name == "cuda:0 local loss"
    assert all("cpu:" not in (t.name or "") for t in fig.data)


def test_breakdown_has_a_two_level_axis_and_names_each_bar_in_its_tooltip():
    rows = [
        {
            "impl": impl,
            "devices": k,
            "compile_s": 0.01 * k,
            "transfer_s": 0.002,
            "run_s_median": 0.003 * k,
            "d2h_s": 0.001,
        }
        for impl in ("pmap", "shard_map")
        for k in (1, 2, 4)
    ]
    fig = timecharts.breakdown_figure(rows)
    assert [t.name for t in fig.data] == ["compile", "transfer", "compute", "device to host"]
    impls, counts = fig.data[0].x
    assert list(impls) == ["pmap"] * 3 + ["shard_map"] * 3
    assert list(counts) == ["x1", "x2", "x4"] * 2
    assert list(fig.data[2].y) == pytest.approx([r["run_s_median"] * 1e3 for r in rows])
    assert fig.data[0].customdata[4] == "shard_map on 2 device(s)"


def test_op_rates_have_one_bar_per_op_with_a_rate_and_the_floor_when_known():
    tl = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)))
    rows = timeline.op_rates(tl)
    rated = [r for r in rows if r["GB/s"] is not None]
    assert 0 < len(rated) < len(rows)  # the async copy's halves have no rate
    fig = timecharts.op_rate_figure(rows)
    (bars,) = fig.data
    assert list(bars.y) == [r["op"] for r in rated] and list(bars.x) == [r["GB/s"] for r in rated]
    assert not fig.layout.shapes  # an uploaded trace: no floor of this machine
    assert fig.layout.xaxis.range[1] > max(bars.x)
    fusion = rated[[r["op"] for r in rated].index("fusion")]
    assert f"{fusion['bytes']:,} bytes" in bars.hovertext[list(bars.y).index("fusion")]
    floor = 555.0
    fig = timecharts.op_rate_figure(rows, floor)
    (line,) = fig.layout.shapes
    assert line.x0 == line.x1 == floor and fig.layout.xaxis.range[1] > floor
    assert "555 GB/s" in fig.layout.annotations[0].text


def test_the_timeline_hover_names_what_the_trace_counted_for_each_op():
    tl = timeline.from_trace(tracefiles.read_trace(str(TPU_TRACE)))
    (bars,) = timecharts.timeline_figure(tl).data
    for e, text in zip(tl.lanes["tpu:0"], bars.hovertext, strict=True):
        assert f"{e.bytes_accessed:,} bytes accessed" in text and e.category in text
        assert f"{e.model_flops:,} FLOPs" in text


def test_a_trace_of_5000_lanes_draws_the_64_busiest_and_at_most_10000_bars():
    from tests.core.xla.test_timeline import many_lanes

    tl = timeline.from_trace(many_lanes(long_lane_ops=5_000))
    fig = timecharts.timeline_figure(tl)
    assert len(fig.data) == timeline.MAX_DRAWN_LANES == 64
    assert {bars.y[0] for bars in fig.data} == set(timeline.drawn(tl)[0].lanes)
    assert sum(len(bars.x) for bars in fig.data) <= timeline.MAX_DRAWN_EVENTS


def test_the_bandwidth_figure_draws_the_longest_ops_and_says_how_many_it_left_out():
    rows = [
        {
            "device": "tpu:0",
            "op": f"op.{k}",
            "category": None,
            "bytes": 1000,
            "FLOPs": None,
            "duration (us)": float(k % 250),
            "GB/s": 1.0,
            "TFLOP/s": None,
        }
        for k in range(1, 1_000)
    ]
    fig = timecharts.op_rate_figure(rows)
    (bars,) = fig.data
    assert len(bars.y) == timecharts.MAX_RATE_BARS == 100
    kept = [int(label.split(".")[1]) for label in bars.y]
    assert kept == sorted(kept) and all(k % 250 >= 249 - 25 for k in kept)  # the longest
    assert fig.layout.title.text.endswith(": the 100 longest of 999 ops")
    assert "longest" not in timecharts.op_rate_figure(rows[:50]).layout.title.text
