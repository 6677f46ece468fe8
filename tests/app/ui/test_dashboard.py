"""The dashboard's one run, from both of its scripts: the checkout's app.py and the package's
own entry (``pmapviz serve``) draw the same app; bad start-up settings get one page."""

import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

from pmapviz.app import serverconfig
from pmapviz.app.page_registry import PAGES
from tests.conftest import ROOT
from tests.pages.conftest import all_text, steady_state_server


def _app(monkeypatch, script, *argv: str) -> AppTest:
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    return AppTest.from_file(str(script), default_timeout=120).run()


@pytest.mark.parametrize("script", [ROOT / "app.py", serverconfig.ENTRY], ids=["app.py", "entry"])
def test_both_scripts_serve_every_page(monkeypatch, script):
    at = _app(monkeypatch, script)
    assert (
        not at.exception and at.title[0].value == _app(monkeypatch, ROOT / "app.py").title[0].value
    )
    menu = [link.proto.label for link in at.sidebar.get("page_link")]
    assert menu == [p.title for p in PAGES]
    for page in PAGES[1:3]:
        at.switch_page(page.path).run()
        assert not at.exception and not at.error, page.title


def test_a_bad_start_up_setting_gets_one_page_with_the_commands_that_work(monkeypatch):
    at = _app(monkeypatch, serverconfig.ENTRY, "--devices", "0")
    assert [t.value for t in at.title] == ["pmapviz could not start"]
    assert "--devices 0" in at.error[0].value and not at.exception
    assert "pmapviz serve --devices 8" in all_text(at)


def test_importing_the_dashboard_starts_no_jax():
    code = "import sys, pmapviz.app.ui.dashboard; print('jax' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
