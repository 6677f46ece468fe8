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


@pytest.mark.parametrize(
    ("name", "rings"),
    [
        ("v5e:8x8", (False, False)),
        ("v5e:8x16", (False, True)),  # the long axis spans the pod's 16
        ("v6e:16x16", (True, True)),
        ("v4:2x2x4", (False, False, False)),  # below a full cube: a mesh, even its 4
        ("v5p:2x4x4", (False, False, False)),
        ("v4:4x4x4", (True, True, True)),  # a full cube: a torus
        ("v5p:4x4x8", (True, True, True)),
    ],
)
def test_a_slices_axes_close_into_rings_by_its_whole_shape(name, rings):
    topo = parse_topology(name)
    assert tuple(topo.wraps(a) for a in range(len(topo.shape))) == rings


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


# Cloud's accelerator types, as the Cloud TPU pages list them (read 2026-12-07; sources and the
# shapes assumed where a page's table did not come through: tpuchips' docstring)
CLOUD = {
    "v5litepod-4": "v5e:2x2",
    "v5litepod-8": "v5e:2x4",
    "v5litepod-16": "v5e:4x4",
    "v5litepod-32": "v5e:4x8",
    "v5litepod-64": "v5e:8x8",
    "v5litepod-128": "v5e:8x16",
    "v5litepod-256": "v5e:16x16",
    "v5e-4": "v5e:2x2",
    "v5e-16": "v5e:4x4",
    "v5e-256": "v5e:16x16",
    "v6e-4": "v6e:2x2",
    "v6e-8": "v6e:2x4",
    "v6e-16": "v6e:4x4",
    "v6e-32": "v6e:4x8",
    "v6e-64": "v6e:8x8",
    "v6e-128": "v6e:8x16",
    "v6e-256": "v6e:16x16",
    "v5p-8": "v5p:2x2x1",
    "v5p-16": "v5p:2x2x2",
    "v5p-32": "v5p:2x2x4",
    "v5p-64": "v5p:2x4x4",
    "v5p-128": "v5p:4x4x4",
    "v5p-256": "v5p:4x4x8",
    "v5p-512": "v5p:4x8x8",
    "v4-8": "v4:2x2x1",
    "v4-16": "v4:2x2x2",
    "v4-32": "v4:2x2x4",
    "v4-64": "v4:2x4x4",
    "v4-128": "v4:4x4x4",
    "v4-256": "v4:4x4x8",
    "v4-512": "v4:4x8x8",
}


@pytest.mark.parametrize(("cloud", "name"), CLOUD.items())
def test_every_cloud_type_maps_to_the_shape_libtpu_reads(cloud, name):
    topo = parse_topology(f" {cloud.upper()} ")
    assert topo.name == name
    n = int(cloud.rsplit("-", 1)[1])
    per = 2 if name.startswith(("v4:", "v5p:")) else 1  # v4 and v5p types count TensorCores
    assert topo.chips * per == n
    assert tpuchips.cloud_words(cloud) == f"{cloud} = {name}"
    assert parse_topology(tpuchips.cloud_type(topo)).name == name  # and back


def test_cloud_type_names_every_offered_slice_and_nothing_for_other_shapes():
    for name in OFFERED:
        back = tpuchips.cloud_type(parse_topology(name))
        assert back and parse_topology(back).name == name, name
    assert tpuchips.cloud_type(parse_topology("v5e:2x8")) == ""  # 16 chips, not Cloud's 4x4
    assert tpuchips.cloud_type(parse_topology("v5e:4x4")) == "v5litepod-16"  # Cloud's v5e name
    assert tpuchips.cloud_words("v5e:4x4") == "" and tpuchips.cloud_words("v5e-12") == ""


@pytest.mark.parametrize(
    ("text", "said", "nearest"),
    [
        ("v5e-12", "v5e-N counts chips", "v5e-8 = v5e:2x4, v5e-16 = v5e:4x4"),
        ("v5litepod-24", "no TPU v5e slice of 24 chips", "v5litepod-16 = v5e:4x4, v5litepod-32"),
        ("v6e-2", "no TPU v6e slice of 2 chips", "v6e-4 = v6e:2x2"),
        ("v5p-9", "counts TensorCores, 2 a chip", "v5p-8 = v5p:2x2x1, v5p-16 = v5p:2x2x2"),
        ("v4-48", "no TPU v4 slice of 48 TensorCores", "v4-32 = v4:2x2x4, v4-64 = v4:2x4x4"),
        ("v5e-1", "= v5e:1x1, one chip", "v5e-4 = v5e:2x2"),  # libtpu describes no 1x1
        ("v5litepod-1", "= v5e:1x1, one chip", "v5litepod-4 = v5e:2x2"),
        ("v5e-512", "is 512 chips", "the largest is v5e-256 = v5e:16x16"),
        ("v5p-1024", "is 512 chips", "the largest is v5p-512 = v5p:4x8x8"),
        ("v3-8", "reads Cloud's types v5litepod-N, v5e-N, v6e-N, v5p-N, v4-N", "v5e:4x4"),
    ],
)
def test_a_cloud_type_pmapviz_cannot_compile_names_the_nearest_ones(text, said, nearest):
    with pytest.raises(SettingError) as err:
        parse_topology(text, "--topology")
    message = str(err.value)
    assert message.startswith(f"--topology `{text}`")
    assert said in message and nearest in message, message
    assert "\n" not in message
    for typed in re.findall(r"(v[0-9a-z]+-[0-9]+) = ", message):  # every type it names maps
        parse_topology(typed)


def test_the_v5e_1x1_is_refused_as_before():
    with pytest.raises(SettingError, match="has 1 chips"):
        parse_topology("v5e:1x1")


@pytest.mark.parametrize("cloud", ["v5litepod-16", "v6e-8", "v5p-32", "v4-16"])
def test_a_mapped_cloud_type_loads_with_libtpu_with_its_chips(cloud):
    from pmapviz.core.pods import podtopology

    pod = podtopology.load(cloud)
    assert pod.name == CLOUD[cloud]
    assert pod.n_chips == parse_topology(cloud).chips
    per = 2 if cloud.startswith(("v4-", "v5p-")) else 1
    assert pod.n_chips * per == int(cloud.split("-")[1])


@pytest.mark.parametrize(
    ("text", "slices", "name"),
    [
        ("2 x v5e:16x16", 2, "2 x v5e:16x16"),
        ("2xv5e:4x4", 2, "2 x v5e:4x4"),
        (" 4 X V5E:2X4 ", 4, "4 x v5e:2x4"),
        ("2 x v5litepod-16", 2, "2 x v5e:4x4"),  # Cloud's name for the slice
        ("1 x v5e:4x4", 1, "v5e:4x4"),
        ("64 x v5e:16x16", 64, "64 x v5e:16x16"),
    ],
)
def test_a_multislice_target_reads_its_slice_count_and_its_slice(text, slices, name):
    topo = parse_topology(text, multislice=True)
    assert (topo.slices, topo.name) == (slices, name)
    assert topo.total_chips == slices * topo.chips
    assert topo.slice_name == name.split(" x ")[-1]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("99x v5e:16x16", "joins 99 slices; pmapviz compiles 1 to 64"),
        ("0 x v5e:4x4", "joins 0 slices"),
        ("10**30 x v5e:4x4", "`10**30` is not a number of slices"),
        ("1000000000000000000000000000000 x v5e:4x4", "is not a number of slices"),
        ("<b>2</b> x v5e:4x4", "is not a number of slices"),
        ("-2 x v5e:4x4", "is not a number of slices"),
        ("x v5e:4x4", "is not a number of slices"),
        ("2 x v5e:1x1", "pick 2 to 256"),
        ("2 x v9:4x4", "knows the generations"),
    ],
)
def test_a_bad_slice_count_gets_one_line_with_the_bounds_and_an_example(text, said):
    with pytest.raises(SettingError) as err:
        parse_topology(text, "--topology", multislice=True)
    message = str(err.value)
    assert message.startswith("--topology") and said in message
    assert "\n" not in message and len(message) < 240
    assert "<" not in re.sub(r"`[^`]*`", "", message)  # markup only inside its quotes


def test_where_one_slice_is_asked_for_several_are_refused_naming_where_they_compile():
    with pytest.raises(SettingError) as err:
        parse_topology("2 x v5e:4x4", "pod=")
    assert "joins 2 slices" in str(err.value) and "pmapviz pod" in str(err.value)
    assert "e.g. v5e:4x4" in str(err.value)


# ------------------------------------------------------------------ HBM as the compiler counts it
@pytest.mark.parametrize("gen", list(GENERATIONS))
def test_every_generation_has_the_compilers_allowance_as_measured(gen):
    """benchmarks/hbm_allowance.py measured it (the largest peak accepted, the figure the
    refusal states): the bytes round to the stated GiB, and the date and version are kept."""
    allowed = GENERATIONS[gen].compiler_hbm
    assert abs(allowed.allowed_bytes / 1024**3 - allowed.stated_gib) < 0.01
    assert re.search(
        r"20[0-9]{2}-[0-9]{2}-[0-9]{2}, libtpu [0-9.]+", tpuchips.COMPILER_HBM_MEASURED
    )


# ------------------------------------------------------------------------------ hosts as rented
@pytest.mark.parametrize(
    ("text", "name", "bounds", "machine"),
    [
        ("v5e:2x4 on 8-chip hosts", "v5e:2x4 on 8-chip hosts", (2, 4, 1), "ct5lp-hightpu-8t"),
        ("v5e:2x4 on ct5lp-hightpu-8t", "v5e:2x4 on 8-chip hosts", (2, 4, 1), "ct5lp-hightpu-8t"),
        ("V5E:4x4  ON  8", "v5e:4x4 on 8-chip hosts", (2, 4, 1), "ct5lp-hightpu-8t"),
        ("v5litepod-8 on 8-chip hosts", "v5e:2x4 on 8-chip hosts", (2, 4, 1), "ct5lp-hightpu-8t"),
        ("v5e:2x4 on 4-chip hosts", "v5e:2x4", None, "ct5lp-hightpu-4t"),  # libtpu's default
        ("v6e:2x4 on ct6e-standard-8t", "v6e:2x4 on 8-chip hosts", (2, 4, 1), "ct6e-standard-8t"),
        ("v5p:2x2x2 on 4-chip hosts", "v5p:2x2x2", None, "ct5p-hightpu-4t"),
        (
            "2 x v5e:2x4 on 8-chip hosts",
            "2 x v5e:2x4 on 8-chip hosts",
            (2, 4, 1),
            "ct5lp-hightpu-8t",
        ),
    ],
)
def test_hosts_as_rented_are_read_from_the_target(text, name, bounds, machine):
    topo = parse_topology(text, multislice=True)
    assert topo.name == name and topo.host_bounds == bounds
    assert topo.host_layout.machine_type == machine
    assert parse_topology(topo.name, multislice=True) == topo  # the name reads back


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("v5e:2x2 on 8-chip hosts", "v5e:2x2 does not divide into 8-chip hosts"),
        ("v5p:2x2x2 on 8-chip hosts", "not a host TPU v5p is rented as"),
        ("v5e:2x4 on 99-chip hosts", "4-chip hosts (ct5lp-hightpu-4t) or 8-chip hosts"),
        ("v5e:2x4 on 10**30", "e.g. v5e:2x4 on 8-chip hosts"),
        ("v5e:2x4 on <b>8</b>", "is not a host"),
        ("v5e:2x4 on " + "8" * 60, "a target is at most"),
    ],
)
def test_a_bad_host_choice_gets_one_line_with_the_choices(text, said):
    with pytest.raises(SettingError) as err:
        parse_topology(text)
    assert said in str(err.value) and "\n" not in str(err.value)
    if "<b>" in text:  # what was typed is quoted as typed (a page escapes it where shown)
        assert "`<b>8</b>`" in str(err.value)
