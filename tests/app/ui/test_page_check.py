"""The pages' part of doctor: every page through AppTest, its words checked on an accelerator."""

import pytest

from pmapviz.app.ui import page_check
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import devicewords, jaxstartup


def test_pages_section_flags_the_cpu_story_on_a_gpu(fake_devices, monkeypatch):
    """The page check presses buttons and reads what a page says; a page that tells the CPU
    story on a GPU is listed. Here the Timing lab's words are put back to the CPU story."""
    from pmapviz.core.devices import devicefacts

    monkeypatch.setattr(
        page_check, "PAGE_ACTIONS", ((page_file("timing"), {}, ()), (page_file("home"), {}, ()))
    )
    cpu_story = devicewords.speed_story(devicefacts.facts())
    settings = jaxstartup.applied_settings()
    with fake_devices("gpu"):
        clean = page_check.section(settings)
        monkeypatch.setattr(devicewords, "speed_story", lambda f, n=None: cpu_story)
        flagged = page_check.section(settings)
    # each page on the fake GPUs, then on the emulated CPU devices beside them
    assert [(r["page"], r["set"]) for r in clean] == [
        (page_file("timing"), "gpu"),
        (page_file("home"), "gpu"),
        (page_file("timing"), "cpu"),
        (page_file("home"), "cpu"),
    ]
    assert [r["cpu_words"] for r in clean] == [[], [], [], []]
    assert "emulated" in flagged[0]["cpu_words"] and not flagged[1]["cpu_words"]
    assert not flagged[2]["cpu_words"]  # the CPU story is true on the CPU set
    assert not any(r["exceptions"] for r in clean + flagged)


def test_every_page_has_its_checks_from_its_registry_entry_and_their_buttons_exist():
    """The checks come from each page's registry entry (``PAGES``), in its order, and every
    button they press is a widget key the product really has (a renamed button fails here)."""
    from pmapviz.app.page_registry import PAGES
    from tests.conftest import ROOT

    assert [a[0] for a in page_check.PAGE_ACTIONS][:3] == [p.path for p in PAGES[:3]]
    assert {page for page, _, _ in page_check.PAGE_ACTIONS} == {p.path for p in PAGES}
    sources = "".join(
        f.read_text() for f in [*(ROOT / "pmapviz").rglob("*.py"), *(ROOT / "pages").glob("*.py")]
    )
    keys = {b for _, _, buttons in page_check.PAGE_ACTIONS for b in buttons}
    assert keys and not [k for k in keys if f'"{k}"' not in sources]


def _one_line():
    import streamlit as st

    st.write("one line")


def test_installed_components_are_found_once_per_process_as_a_server_finds_them(monkeypatch):
    from streamlit.components.v2 import manifest_scanner
    from streamlit.testing.v1 import AppTest

    scans = []
    real = manifest_scanner.scan_component_manifests
    monkeypatch.setattr(
        manifest_scanner, "scan_component_manifests", lambda: scans.append(1) or real()
    )
    monkeypatch.setitem(page_check._SCRIPTS, "components_found", False)  # a fresh process
    module, name, value = page_check.components_found_once()
    monkeypatch.setattr(module, name, value)
    runs = [AppTest.from_function(_one_line).run() for _ in range(3)]
    assert [r.markdown[0].value for r in runs] == ["one line"] * 3
    assert len(scans) == 1  # AppTest alone searches once per AppTest
    assert runs[0]._bidi_component_manager is runs[2]._bidi_component_manager


def _sleeps_a_while():
    import time

    import streamlit as st

    time.sleep(float(st.query_params.get("s", "0.4")))
    st.markdown("slept")


def test_apptest_waits_for_a_run_by_joining_it_not_by_polling(monkeypatch):
    from streamlit.testing.v1 import AppTest, local_script_runner

    module, name, value = page_check.waits_without_polling()
    monkeypatch.setattr(module, name, value)
    checks = []
    real = local_script_runner.LocalScriptRunner.script_stopped
    monkeypatch.setattr(
        local_script_runner.LocalScriptRunner,
        "script_stopped",
        lambda self: checks.append(1) or real(self),
    )
    at = AppTest.from_function(_sleeps_a_while).run()
    assert at.markdown[0].value == "slept"
    assert len(checks) < 40, len(checks)  # AppTest's own wait: one check per ms (about 400)
    late = AppTest.from_function(_sleeps_a_while, default_timeout=0.2)
    late.query_params["s"] = "3"
    with pytest.raises(RuntimeError, match=r"timed out after 0.2\(s\)"):
        late.run()
