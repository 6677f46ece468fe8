"""Figures of measurements: every curve inside its axes, speed-up and efficiency apart."""

from pmapviz import timecharts


def _rows(speedups: dict[int, float], impl: str = "pmap") -> list[dict]:
    return [{"impl": impl, "devices": k, "size": 1, "speedup": s, "efficiency": s / k}
            for k, s in speedups.items()]  # fmt: skip


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
    fig = timecharts.loss_figure([1.0, 0.5], [1.0, 0.5], [[1.0, 1.1], [0.4, 0.6]],
                                 ["cuda:0", "cuda:1"])  # fmt: skip
    assert fig.data[0].name == "cuda:0 local loss"
    assert all("cpu:" not in (t.name or "") for t in fig.data)
