"""The Timing lab's sweep: its settings and link, the planned runs, and its states."""

from pmapviz.features.timing import benchreports, sweepsetup
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _sweep(n):
    import streamlit as st

    from pmapviz.features.timing.ui import sweep

    choice = sweep.form(n)
    runs, repeat = sweep.planned(choice, None)
    st.markdown(f"{len(runs)} runs x {repeat}")
    sweep.run(choice, runs, repeat)


def test_the_links_sizes_belong_to_its_workload_and_go_back_into_the_link():
    sizes = sweepsetup.size_choices("dot", sweepsetup.device_counts(TEST_DEVICES))[:2]
    query = {
        "w": "dot",
        "r": "5",
        "sizes": ",".join(map(str, sizes)),
        "ks": "1,2",
        "impls": "vmap,pmap",
    }
    at = render(_sweep, TEST_DEVICES, query=query)
    assert not at.exception
    assert at.multiselect(key="tl_sizes_dot").value == sizes
    assert at.markdown[-1].value == "6 runs x 5"  # 2 sizes x (vmap on 1, pmap on 1 and 2)
    assert dict(at.query_params) == query
    assert at.button(key="tl_go").label == "Run 6 measurements"


def test_an_interrupted_sweep_is_called_cancelled_and_keeps_what_it_measured():
    partial = benchreports.SweepReport({}, 0.0, "dot")
    at = render(_sweep, TEST_DEVICES, state={"tl_running": True, "tl_partial": partial})
    assert "cancelled" in at.warning[0].value
    assert at.session_state["tl_report"] is partial and partial.cancelled
    assert not at.session_state["tl_running"]


def test_no_device_count_plans_no_run_and_disables_the_button():
    at = render(_sweep, TEST_DEVICES)
    at.multiselect(key="tl_ks").set_value([]).run()
    assert at.error and at.button(key="tl_go").disabled


def test_each_size_is_drawn_as_its_measurements_arrive(monkeypatch):
    """Issue 38: the bars stream: after every measurement, the size being measured is drawn
    with what it has so far (1, 2, 3 bars), then the next size starts its own."""
    from pmapviz.features.timing import timebars

    drawn = []
    bars = timebars.bars_html

    def spy(rows, size):
        drawn.append([(r["size"], r["impl"], r["devices"]) for r in rows])
        return bars(rows, size)

    monkeypatch.setattr(timebars, "bars_html", spy)
    sizes = sweepsetup.size_choices("elementwise", [1, 2])[:2]
    query = {
        "w": "elementwise",
        "r": "2",
        "sizes": ",".join(map(str, sizes)),
        "ks": "1,2",
        "impls": "vmap,pmap",
    }
    at = render(_sweep, TEST_DEVICES, query=query)
    at.button(key="tl_go").click().run(timeout=120)
    assert not at.exception
    done = [(m.size, m.impl, m.devices) for m in at.session_state["tl_report"].results]
    assert len(done) >= 6 and len({size for size, _, _ in done}) >= 2
    # after measurement i: the bars of its size measured so far, in the order measured
    assert drawn == [[d for d in done[: i + 1] if d[0] == done[i][0]] for i in range(len(done))]
    assert [len(d) for d in drawn[:3]] == [1, 2, 3]  # vmap on 1, pmap on 1, pmap on 2
