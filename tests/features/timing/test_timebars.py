"""The Timing lab's bars as measurements arrive: one per run, each as long as its measured
total, its phases in order, words for a screen reader, and nothing typed becomes markup."""

import re

from pmapviz.features.timing import timebars


def _row(impl, devices, compile_s, run_s, transfer_s=0.0, d2h_s=0.0):
    return {
        "impl": impl,
        "devices": devices,
        "size": 64,
        "compile_s": compile_s,
        "transfer_s": transfer_s,
        "run_s_median": run_s,
        "d2h_s": d2h_s,
    }


def test_each_bar_is_as_long_as_its_total_against_the_longest():
    rows = [_row("vmap", 1, 0.030, 0.010), _row("pmap", 8, 0.060, 0.020)]
    out = timebars.bars_html(rows, 64)
    widths = [float(w) for w in re.findall(r"width:([0-9.]+)%", out)]
    assert widths == [37.5, 12.5, 75.0, 25.0]  # 30 and 10 of 80 ms; 60 and 20 of 80 ms
    assert "40.00 ms" in out and "80.00 ms" in out
    assert out.startswith("<div role='img' aria-label='Measured so far at size 64: vmap on 1")


def test_a_phase_that_took_no_time_draws_no_segment_and_names_are_escaped():
    out = timebars.bars_html([_row("<b>x</b>", 2, 0.0, 0.001)], 1_024)
    assert out.count("title='") == 1 and "compute: 1.000 ms" in out
    assert "<b>" not in out and "&lt;b&gt;x&lt;/b&gt; on 2" in out
    assert "size 1,024" in out
