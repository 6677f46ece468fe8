"""pmapviz.features.timing.showtiming: the Timing lab's measurement as a view. No wall-clock bound
is asserted
(those tests run ALONE, see tests/xdist_groups.py): only what the harness guarantees."""

import pytest

from pmapviz.features.timing import benchmarking, showtiming, sweepsetup, workloads


@pytest.fixture(scope="module")
def tiny():
    return showtiming.timing(
        "elementwise", sizes=[64, 128], devices=[2], implementations=["pmap", "vmap"], repeats=2
    )


def test_a_tiny_sweep_has_a_row_per_implementation_and_size(tiny):
    rows = tiny.data["rows"]
    assert sorted((r["impl"], r["devices"], r["size"]) for r in rows) == sorted(
        (impl, k, s) for impl, k in (("pmap", 2), ("vmap", 1)) for s in (64, 128)
    )
    for r in rows:
        assert r["compile_s"] > 0 and r["transfer_s"] > 0 and r["run_s_median"] > 0
        assert r["runs"] == 2 and r["run_s_min"] <= r["run_s_median"] <= r["run_s_max"]


def test_the_floor_is_the_bytes_moved_over_the_measured_bandwidth(tiny):
    wl = workloads.WORKLOADS["elementwise"]
    bw = tiny.data["bandwidth_gbs"]
    assert bw > 0 and tiny.data["floor_method"]
    for r in tiny.data["rows"]:
        assert r["bytes_moved"] == wl.bytes_moved(r["size"])
        assert r["floor_s"] == pytest.approx(wl.bytes_moved(r["size"]) / (bw * 1e9))
    assert "floor" in str(tiny) and tiny.data["floor_method"] in str(tiny)


def test_speed_up_is_vmap_over_the_implementation(tiny):
    rows = tiny.data["rows"]
    for s in (64, 128):
        vmap = next(r for r in rows if r["impl"] == "vmap" and r["size"] == s)
        pmap = next(r for r in rows if r["impl"] == "pmap" and r["size"] == s)
        assert vmap["speedup_vs_vmap"] == 1.0
        assert pmap["speedup_vs_vmap"] == pytest.approx(vmap["run_s_median"] / pmap["run_s_median"])


def test_html_draws_the_bars_per_size_and_no_script(tiny):
    page = tiny.html()
    assert page.count("role='img'") == 2 and "<script" not in page.lower()
    assert "aria-label='Measured so far at size 64" in page
    fastest = [line for line in str(tiny).splitlines() if "the fastest is" in line]
    assert len(fastest) == 2


def test_text_is_the_table_in_plain_text(tiny):
    lines = str(tiny).splitlines()
    assert lines[1].split()[0] == "implementation" and "<" not in str(tiny)
    assert sum(line.split()[0] in ("pmap", "vmap") for line in lines[2:6]) == 4
    assert len(tiny.to_frame()) == 4


def test_default_sizes_follow_the_device_counts_as_the_lab_chooses_them():
    view = showtiming.timing("elementwise", devices=[1, 3, 5], implementations="pmap", repeats=1)
    sizes = sorted({r["size"] for r in view.data["rows"]})
    assert sizes == sweepsetup.size_choices("elementwise", [1, 3, 5])[: showtiming.DEFAULT_SIZES]
    assert all(s % 15 == 0 for s in sizes)
    assert sorted({r["devices"] for r in view.data["rows"]}) == [1, 3, 5]


def test_an_unknown_workload_lists_the_names():
    with pytest.raises(ValueError, match="dot, matmul, elementwise") as err:
        showtiming.timing("fft")
    assert all(name in str(err.value) for name in workloads.WORKLOADS)


def test_a_sweep_too_big_is_refused_before_it_runs(monkeypatch):
    def never(*_a, **_k):
        raise AssertionError("measured")

    monkeypatch.setattr(benchmarking, "measure", never)
    with pytest.raises(ValueError, match="largest size allowed"):
        showtiming.timing("elementwise", sizes=[2**40], devices=[1], implementations=["vmap"])
    with pytest.raises(ValueError, match="device counts must be 1 to"):
        showtiming.timing("elementwise", sizes=[64], devices=[10_000], implementations=["vmap"])
    with pytest.raises(ValueError, match="multiple of 2"):
        showtiming.timing("elementwise", sizes=[7], devices=[2], implementations=["pmap"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sizes": "64"},
        {"devices": [True]},
        {"implementations": []},
        {"implementations": ["fast"]},
        {"repeats": 0},
    ],
)
def test_bad_settings_are_value_errors(kwargs):
    with pytest.raises(ValueError):
        showtiming.timing("elementwise", **kwargs)


def test_a_device_set_this_process_lacks_is_refused_with_the_sets_it_has():
    with pytest.raises(ValueError, match="device_set `gpu` is not a device set here") as err:
        showtiming.timing("dot", sizes=64, devices=1, device_set="gpu")
    assert "This process has: auto, cpu" in str(err.value)
