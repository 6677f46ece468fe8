"""AppTest for the Timing lab."""

from pmapviz.core.base.pageinfo import page_file
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

PAGE = page_file("timing")


def test_page_states_cores_and_why_emulated_devices_do_not_speed_up(run_app):
    at = run_app(page=PAGE)
    assert not at.exception
    text = all_text(at)
    assert "physical CPU core(s)" in text and f"{TEST_DEVICES} emulated" in text
    assert "expect no real speed-up here" in text and "the verdict under the results" in text
    assert "Run" in at.button(key="tl_go").label


def test_small_sweep_shows_all_plots_and_downloads(run_app):
    at = run_app(page=PAGE)
    at.multiselect(key="tl_sizes_dot").set_value([2**14])
    at.multiselect(key="tl_ks").set_value([1, 2])
    at.button(key="tl_go").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == 4  # breakdown, speed-up, scaling, spread
    rows = at.dataframe[0].value
    assert set(rows["impl"]) == {"pmap", "vmap", "jit_sharded", "shard_map", "numpy"}
    assert "GB/s" in all_text(at) and "memory floor" in all_text(at)
    assert len(at.get("download_button")) == 2
    (verdict,) = [m.value for m in at.markdown if m.value.startswith("Measured at size")]
    best = max(r for r in rows["run_s_median"])  # the words come from this run's table
    assert "against jit(vmap) on one device" in verdict and best > 0


def test_invalid_sweep_is_explained_not_run(run_app):
    at = run_app(page=PAGE)
    at.multiselect(key="tl_ks").set_value([])
    at.run()
    assert not at.exception
    assert any("at least one" in e.value for e in at.error)
    assert at.button(key="tl_go").disabled


def test_crafted_link_falls_back(run_app):
    at = run_app(page=PAGE, query={"w": "bitcoin", "r": "9999"})
    assert not at.exception
    assert at.selectbox(key="tl_w").value == "dot"
    assert len(at.warning) >= 2


def test_time_the_explorer_settings(run_app):
    at = run_app(
        page=PAGE, query={"fn": "add", "s0": f"{TEST_DEVICES}, 64", "s1": f"{TEST_DEVICES}, 64"}
    )
    # the link keeps the explorer's settings it was opened with (the page's own settings
    # rewrite it before the section reads them)
    assert at.query_params["fn"] == "add" and at.query_params["s0"] == f"{TEST_DEVICES}, 64"
    said = next(m.value for m in at.markdown if m.value.startswith("f = "))
    assert f"on x ({TEST_DEVICES}, 64), y ({TEST_DEVICES}, 64)" in said
    at.button(key="tl_explorer").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    rows = at.dataframe[0].value
    assert list(rows["impl"]) == ["pmap", "vmap", "numpy"]
    assert list(rows["devices"]) == [TEST_DEVICES, 1, 1]


def test_a_sweep_waits_its_turn_then_runs(run_app):
    """Another session holds the benchmark: the page shows the queue, then runs when freed."""
    import threading

    from pmapviz.features.timing import benchmarking as bench

    at = run_app(page=PAGE)
    at.multiselect(key="tl_sizes_dot").set_value([2**6])
    at.multiselect(key="tl_ks").set_value([1])
    at.multiselect(key="tl_impls").set_value(["vmap", "numpy"])
    holder = bench.TURNS.acquire(timeout=1)
    seen = []

    def release_once_queued():  # robust under load: wait until the page is in the queue
        import time

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not seen:
            if bench.TURNS.waiting():
                seen.append(bench.TURNS.waiting())
            time.sleep(0.02)
        holder.release()

    threading.Thread(target=release_once_queued, daemon=True).start()
    at.button(key="tl_go").click().run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert seen == [1]  # the page's sweep was in the queue
    assert set(at.dataframe[0].value["impl"]) == {"vmap", "numpy"}
    assert bench.TURNS.held_for() is None
