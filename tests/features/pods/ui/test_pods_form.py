"""The Pods page in AppTest: a link's slice and program compiled, the figures on the page equal
the engine's for the same compile, a bad link falls back with a note, and the sweep draws."""

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.drawing import podview
from pmapviz.core.pods import podcompile, podsweep
from pmapviz.core.pods.podreport import fmt_gib, fmt_seconds
from pmapviz.features.pods import podsettings
from tests.pages.conftest import all_text


def test_the_link_compiles_its_slice_and_shows_the_engines_figures(run_app):
    at = run_app(
        page_file("pods"), argv=["--devices", "2"], query={"pod": "v5e:4x4", "prog": "psum"}
    )
    assert not at.exception and not at.error, [e.value for e in at.error]
    want = podcompile.compile_for(podsettings.program("psum"), "v5e:4x4")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Peak per device"] == fmt_gib(want.peak_bytes)
    assert metrics["Compute + HBM"] == fmt_seconds(want.optimal_s)
    assert metrics["Communication"] == fmt_seconds(want.comm_s)
    assert metrics["Collectives"] == str(len(want.collectives)) == "1"
    assert "v5e:4x4: 16 chips on 4 hosts" in all_text(at)
    assert at.query_params["pod"] == ["v5e:4x4"] or at.query_params["pod"] == "v5e:4x4"


def test_a_link_with_clouds_name_compiles_its_slice_and_says_which(run_app):
    query = {"pod": "v5litepod-4", "prog": "psum"}
    at = run_app(page_file("pods"), argv=["--devices", "2"], query=query)
    assert not at.exception and not at.error, [e.value for e in at.error]
    (picker,) = [s for s in at.selectbox if s.key == "po_pod"]
    assert picker.format_func(picker.value) == "TPU v5e 2x2 (4 chips; v5litepod-4 = v5e:2x2)"
    assert "v5e:2x2: 4 chips on 1 host" in all_text(at)


def test_a_bad_link_gets_a_note_and_the_default_slice(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"pod": "v9:1x1", "prog": "dot"})
    assert not at.exception
    assert any("v9" in w.value and "v5e:2x4" in w.value for w in at.warning)
    assert "v5e:2x4: 8 chips on 2 hosts" in all_text(at)


def test_the_sweep_draws_the_chart_and_the_table(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"sprog": "psum", "gen": "v4"})
    at.button(key="po_sweep").click().run(timeout=240)
    assert not at.exception and not at.error, [e.value for e in at.error]
    charts = [c for c in at.get("plotly_chart")]
    assert len(charts) == 2  # the slice, and the sweep
    assert len(at.dataframe) >= 3
    # where the model's links change (v4: axis 2 joins, then the full cube's rings), said
    # under the table in the engine's words for the same compiles (kept: no second compile)
    said = podview.sweep_switches(podsweep.sweep(podsettings.program("psum"), "v4"))
    assert len(said) >= 2 and any("close into rings (wraparound links)" in s for s in said)
    captions = [c.value for c in at.caption]
    assert all(line in captions for line in said), (said, captions)


def test_a_machine_without_a_chip_says_where_the_run_works(run_app):
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"prog": "psum"})
    assert not any(b.key == "po_calibrate" for b in at.button)
    assert any("On a TPU machine this page also runs" in c.value for c in at.caption)


def test_on_a_tpu_machine_the_program_runs_on_its_chip(run_app, monkeypatch):
    """The chip run's path, on the emulated CPU devices standing in for the chip (the TPU
    runs are quoted in the README): measured, estimated and their ratio as metrics."""
    from pmapviz.core.devices import accelerators
    from pmapviz.core.pods import podcalibrate

    real = podcalibrate.calibrate
    monkeypatch.setattr(accelerators, "accelerators_present", lambda: ["tpu"])
    monkeypatch.setattr(podcalibrate, "calibrate", lambda p: real(p, repeat=3, platform="cpu"))
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"prog": "dot", "batch": "4096"})
    at.button(key="po_calibrate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Measured (median of 20)"].endswith(("ms", "µs"))
    assert "Measured / estimated" in metrics


def test_the_picker_offers_hosts_as_rented_and_the_host_count_follows(run_app):
    """Issue 66: v5e:2x4 as Cloud also rents it, one 8-chip host: picked from the page's own
    list, the summary and the psum's crossing marks follow libtpu's layout for it."""
    at = run_app(page_file("pods"), argv=["--devices", "2"], query={"prog": "psum"})
    (picker,) = [s for s in at.selectbox if s.key == "po_pod"]
    assert {picker.format_func(o) for o in podsettings.RENTED} <= set(picker.options)
    picker.set_value("v5e:2x4 on 8-chip hosts").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    want = podcompile.compile_for(podsettings.program("psum"), "v5e:2x4 on 8-chip hosts")
    assert len({c.host for c in want.chips}) == 1 and "8 chips on 1 host" in all_text(at)
    assert [c.crossing for c in want.collectives] == [0]  # 1 on libtpu's default 2 hosts
