"""AppTest for the Multi-process page."""

from pmapviz.core.base.pageinfo import page_file
from tests.pages.conftest import all_text

PAGE = page_file("cluster")


def test_launch_shows_local_and_global_devices(run_app):
    at = run_app(page=PAGE)
    assert not at.exception
    at.button(key="cl_go").click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    assert "2 processes x 2 devices = 4 global devices" in all_text(at)
    rows = at.dataframe[0].value
    assert list(rows["psum"]) == [10.0, 10.0]
    assert list(rows["sees global devices"]) == [4, 4]
    assert any("in **every** process" in s.value for s in at.success)
    grid = next(m.value for m in at.markdown if "process 1" in m.value and "axis_index" in m.value)
    assert "axis_index 3" in grid


def test_a_crash_is_reported_and_the_page_keeps_working(run_app):
    at = run_app(page=PAGE)
    at.checkbox(key="cl_crash").check().run()
    at.button(key="cl_go").click().run(timeout=180)
    assert not at.exception
    assert any(
        "process 1 of 2 (pid " in e.value and "was killed by SIGKILL" in e.value for e in at.error
    )
    at.checkbox(key="cl_crash").uncheck().run()
    at.button(key="cl_go").click().run(timeout=180)
    assert not at.exception and not at.error


def test_bad_link_values_fall_back(run_app):
    at = run_app(page=PAGE, query={"p": "100", "d": "-1"})
    assert not at.exception
    assert at.selectbox(key="cl_p").value == "2" and len(at.warning) == 2


def test_a_report_opened_from_the_reports_folder_draws_the_real_cluster(
    run_app, tmp_path, monkeypatch
):
    from pmapviz.core.devices import jaxstartup
    from tests.conftest import ROOT

    monkeypatch.setattr(jaxstartup, "_applied", jaxstartup._applied)  # app.py applies --reports

    report = ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json"
    (tmp_path / "slurm.json").write_text(report.read_text())
    at = run_app(
        page=PAGE,
        env={"PMAPVIZ_REPORTS": str(tmp_path), "PMAPVIZ_PLATFORM": "cpu"},
        query={"report": "slurm.json"},
    )
    assert not at.exception, [e.value for e in at.exception]
    assert at.tabs[1].label == "Show a report"
    assert "1 host, 4 processes, 8 global devices" in [h.value for h in at.subheader]
    rows = at.dataframe[0].value
    assert list(rows["psum"]) == [36.0] * 4 and list(rows["sees global devices"]) == [8] * 4
    assert any(s.value.startswith("psum = 36 in **every** process") for s in at.success)
    at.text_input(key="cl_report").input("../escape.json").run()
    assert not at.exception
    assert any("outside the reports folder" in e.value for e in at.error)


def test_launch_lines_and_what_changes_on_a_real_cluster(run_app):
    at = run_app(page=PAGE, query={"nodes": "2", "ppn": "4", "kind": "cpu"})
    assert not at.exception
    codes = [c.value for c in at.code]
    assert (
        "srun -N 2 --ntasks-per-node 4 python -m pmapviz cluster --join --report "
        "cluster-report.json --local-devices 1"
    ) in codes
    assert "What changes on a real cluster" in all_text(at)
    assert at.query_params["nodes"] == "2" and at.query_params["p"] == "2"
