"""The DCN model and the roofline estimate, from the chip table's published figures."""

import pytest

from pmapviz.core.pods import dcnmodel, tpuchips

V5E, V6E = tpuchips.GENERATIONS["v5e"], tpuchips.GENERATIONS["v6e"]


def test_dcn_time_is_bytes_over_a_chips_share_of_its_hosts_nics():
    per_chip = V5E.dcn_host_gbps * 1e9 / 8 / V5E.dcn_chips_per_host
    assert V5E.dcn_chip_bytes_s == per_chip
    seconds, how = dcnmodel.dcn_seconds(8 * 2**20, V5E)
    assert seconds == pytest.approx(8 * 2**20 / per_chip)
    assert "8.0 MiB" in how and f"{per_chip / 1e9:.3g} GB/s" in how
    words = dcnmodel.dcn_words(V5E)
    assert "model" in words and V5E.dcn_source in words and "2 x 100 Gbps" in V5E.dcn_source


def test_no_published_figure_means_no_dcn_time_and_says_so():
    assert V6E.dcn_chip_bytes_s is None
    seconds, how = dcnmodel.dcn_seconds(2**20, V6E)
    assert seconds == 0.0 and "no published DCN bandwidth for TPU v6e" in how
    assert dcnmodel.dcn_seconds(0, V5E) == (0.0, "nothing sent over DCN")


@pytest.mark.parametrize("flops, bytes_, bound", [(1e12, 1e6, "compute"), (1e6, 1e10, "HBM")])
def test_the_roofline_is_the_larger_of_compute_and_hbm_against_the_published_peak(
    flops, bytes_, bound
):
    seconds, how = dcnmodel.roofline_seconds(flops, bytes_, V6E)
    compute, hbm = flops / (V6E.bf16_tflops * 1e12), bytes_ / (V6E.hbm_gbs * 1e9)
    assert seconds == pytest.approx(max(compute, hbm))
    assert f"{bound}-bound" in how and V6E.source in how and dcnmodel.ROOFLINE in how
    assert dcnmodel.roofline_seconds(None, None, V6E) == (None, "no FLOPs or bytes counted")
