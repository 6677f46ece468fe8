"""The TPU generations' figures and topology names: every offered slice parses into a name
libtpu reads back, a bad name says what is wrong and what to type, and wraparound follows each
generation's rule. Pure data: no JAX."""

import re

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.pods import tpuchips
from pmapviz.core.pods.tpuchips import GENERATIONS, OFFERED, parse_topology


@pytest.mark.parametrize("name", OFFERED)
def test_every_offered_topology_parses_back_to_its_name(name):
    topo = parse_topology(name)
    assert topo.name == name
    assert topo.generation.name == name.split(":")[0]
    assert len(topo.shape) == topo.generation.dims
    product = 1
    for d in name.split(":")[1].split("x"):
        product *= int(d)
    assert topo.chips == product
    assert 2 <= topo.chips <= 256


def test_offered_lists_each_generation_smallest_first_and_the_default_is_offered():
    assert tpuchips.DEFAULT in OFFERED
    assert len(set(OFFERED)) == len(OFFERED)
    for gen in GENERATIONS:
        names = tpuchips.offered_for(gen)
        assert names, gen
        assert all(n.startswith(gen + ":") for n in names)
        chips = [parse_topology(n).chips for n in names]
        assert chips == sorted(chips) and len(set(chips)) == len(chips), names
    assert max(parse_topology(n).chips for n in OFFERED) == tpuchips.MAX_CHIPS
    assert tpuchips.offered_for("v9") == ()


def test_names_are_read_case_and_space_insensitively():
    assert parse_topology("  V5E:4X4 ").name == "v5e:4x4"
    assert parse_topology("v4:2x2x2").shape == (2, 2, 2)


@pytest.mark.parametrize(
    ("text", "said", "fix"),
    [
        ("v5e", "is not a TPU topology name", "e.g. v5e:4x4"),
        ("4x4", "is not a TPU topology name", "generation:shape"),
        ("v5e:4x4x4x4", "is not a TPU topology name", "e.g. v5e:4x4"),
        ("v7:2x2", "knows the generations v4, v5e, v5p, v6e", "e.g. v5e:4x4"),
        ("v5e:2x2x2", "2-D (AxB)", "e.g. v5e:2x2"),
        ("v4:2x2", "3-D (AxBxC)", "e.g. v4:2x2x1"),
        ("v5e:1x1", "has 1 chips", "pick 2 to 256"),
        ("v5e:32x16", "has 512 chips", "e.g. v5e:2x2"),
        ("v4:8x8x8", "has 512 chips", "e.g. v4:2x2x1"),
    ],
)
def test_a_bad_name_says_what_is_wrong_and_what_to_type(text, said, fix):
    with pytest.raises(SettingError) as err:
        parse_topology(text, "The link's pod=")
    message = str(err.value)
    assert message.startswith("The link's pod=")
    assert said in message and fix in message
    assert "\n" not in message


def test_a_long_bad_name_is_cut_in_the_message():
    with pytest.raises(SettingError) as err:
        parse_topology("x" * 500)
    assert len(str(err.value)) < 200


def test_wraparound_rules_per_generation():
    v5e, v6e, v4, v5p = (GENERATIONS[g] for g in ("v5e", "v6e", "v4", "v5p"))
    for gen in (v5e, v6e):  # 2-D: only the full pod's axis of 16 is a ring
        assert gen.wraps(16)
        assert not any(gen.wraps(n) for n in (1, 2, 4, 8, 12, 32))
    for gen in (v4, v5p):  # 3-D: multiples of 4
        assert all(gen.wraps(n) for n in (4, 8, 12, 16))
        assert not any(gen.wraps(n) for n in (1, 2, 3, 6, 10))


@pytest.mark.parametrize("gen", GENERATIONS.values(), ids=list(GENERATIONS))
def test_each_figure_is_the_one_its_source_line_quotes(gen):
    assert gen.hbm_gib == gen.hbm_bytes / 1024**3
    assert f"{gen.bf16_tflops:g} TFLOP/s" in gen.source
    assert f"{int(gen.hbm_gbs):,} GB/s" in gen.source
    assert gen.source.startswith("https://") and gen.ici_source.startswith("https://")
    assert gen.dims in (2, 3) and gen.ici_ports == 2 * gen.dims  # a torus: two ports an axis
    quoted = re.search(r"([0-9.e]+) (GB|B)/s one-way", gen.ici_source)
    assert quoted, gen.ici_source
    per_second = float(quoted[1]) * (1e9 if quoted[2] == "GB" else 1)
    assert per_second == gen.ici_link_gbs * 1e9
    both_ways = re.search(r"([0-9,]+) GB/s bidirectional", gen.ici_source)
    if both_ways:  # the per-chip figure is every port's link, both ways
        assert float(both_ways[1].replace(",", "")) == gen.ici_link_gbs * gen.ici_ports * 2
