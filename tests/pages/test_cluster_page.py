"""AppTest for the Multi-process page."""

from tests.pages.conftest import all_text

PAGE = "pages/cluster.py"


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
    assert any("worker 1 was killed" in e.value for e in at.error)
    at.checkbox(key="cl_crash").uncheck().run()
    at.button(key="cl_go").click().run(timeout=180)
    assert not at.exception and not at.error


def test_bad_link_values_fall_back(run_app):
    at = run_app(page=PAGE, query={"p": "100", "d": "-1"})
    assert not at.exception
    assert at.selectbox(key="cl_p").value == "2" and len(at.warning) == 2
