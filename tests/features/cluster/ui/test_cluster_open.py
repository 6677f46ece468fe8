"""Opening a report: a path inside the reports folder (from the link too), refusals said on
the page, and the folder named at start-up or its absence."""

import json

import pytest

from pmapviz.core.devices import jaxstartup
from tests.conftest import ROOT
from tests.core.ui.conftest import render, texts

REAL = (ROOT / "tests/core/fixtures/cluster-report-slurm-4x2.json").read_text()


def _open():
    import streamlit as st

    from pmapviz.core.ui import url_state
    from pmapviz.features.cluster import clustersettings
    from pmapviz.features.cluster.ui import cluster_open

    url_state.load("cl_", clustersettings.schema())
    report, source = cluster_open.show()
    st.markdown(f"opened: {None if report is None else report.process_count} from {source}")


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    (tmp_path / "good.json").write_text(REAL)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path.parent / "outside.json").write_text(REAL)
    applied = jaxstartup.applied_settings()
    monkeypatch.setattr(
        jaxstartup,
        "applied_settings",
        lambda: jaxstartup.Settings(applied.devices, applied.platform, reports=str(tmp_path)),
    )
    return tmp_path


def test_a_path_from_the_link_opens_the_report(folder):
    at = render(_open, query={"report": "good.json"})
    assert not at.exception and not at.error
    assert at.markdown[-1].value == "opened: 4 from `good.json` in the reports folder"
    assert "`bad.json`, `good.json`" in texts(at)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("bad.json", "not valid JSON"),
        ("../outside.json", "is outside the reports folder"),
        ("missing.json", "There is no report `missing.json`"),
    ],
)
def test_bad_paths_and_files_are_one_message(folder, name, said):
    at = render(_open, query={"report": name})
    assert not at.exception
    assert said in at.error[0].value and at.markdown[-1].value == "opened: None from"


def test_without_a_folder_the_path_is_off_and_says_how_to_name_one():
    at = render(_open, query={"report": "good.json"})
    assert not at.exception and not at.error
    assert at.text_input(key="cl_report").disabled
    assert "start the server with `--reports DIR`" in texts(at)
    assert at.markdown[-1].value == "opened: None from"
    assert json.loads(REAL)["process_count"] == 4
