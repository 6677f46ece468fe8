"""Hosts as Cloud rents them: each generation's layouts, libtpu's default first, each a block
that divides some offered slice, and the words of a host choice read or refused in one line.
Pure data: no JAX (tests/core/pods/test_podcompile.py lays them with libtpu)."""

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.pods import tpuchips, tpuhosts


def test_every_generation_offers_libtpus_default_first_and_its_slices_host_choices():
    assert set(tpuhosts.HOST_LAYOUTS) == set(tpuchips.GENERATIONS)
    for gen, layouts in tpuhosts.HOST_LAYOUTS.items():
        assert layouts[0].chips == 4 and layouts[0].bounds == (2, 2, 1)  # libtpu's default
        for h in layouts:  # each host's block is a slice pmapviz offers, and fills it
            assert f"{gen}:{h.block(tpuchips.GENERATIONS[gen].dims)}" in tpuchips.OFFERED
            assert h.bounds[0] * h.bounds[1] * h.bounds[2] == h.chips
    small, large = tpuchips.parse_topology("v5e:2x2"), tpuchips.parse_topology("v5e:16x16")
    assert [h.chips for h in tpuchips.host_choices(small)] == [4]
    assert [h.chips for h in tpuchips.host_choices(large)] == [4, 8]


@pytest.mark.parametrize(
    ("hosts", "chips"),
    [("8", 8), ("8-chip hosts", 8), ("8 chip host", 8), ("ct5lp-hightpu-8t", 8), ("4", 0)],
)
def test_a_host_choice_is_read_as_chips_or_clouds_machine_type(hosts, chips):
    assert tpuhosts.read("v5e", "TPU v5e", (4, 4), hosts, "The target") == chips


def test_a_host_choice_that_does_not_divide_the_slice_says_the_choices():
    with pytest.raises(SettingError) as err:
        tpuhosts.read("v6e", "TPU v6e", (2, 2), "8", "The target `v6e:2x2 on 8`")
    said = str(err.value)
    assert said.startswith("The target `v6e:2x2 on 8`: v6e:2x2 does not divide into 8-chip")
    assert "ct6e-standard-4t" in said and "e.g. v6e:2x4 on 8-chip hosts" in said
