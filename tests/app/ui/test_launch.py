"""pmapviz.app.ui.launch: the start command the restart commands begin with runs as shown
on this machine and keeps the address and port the room uses."""

import os
import shlex
import subprocess
import sys

import pytest

from pmapviz.app import serverconfig
from pmapviz.app.ui import launch
from tests.conftest import ROOT


@pytest.fixture()
def options(monkeypatch):
    values = {"server.address": "127.0.0.1", "server.port": 8501}
    monkeypatch.setattr(launch.st, "get_option", lambda name: values[name])
    monkeypatch.chdir(ROOT)
    return values


def test_the_checkouts_command_is_the_environments_streamlit_and_runs(options):
    words = shlex.split(launch.command("app.py"))
    assert words[1:] == ["run", "app.py", "--"]
    assert not os.path.isabs(words[0])  # as typed in the checkout: .venv/bin/streamlit
    r = subprocess.run([words[0], "version"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Streamlit" in r.stdout


def test_a_room_servers_address_and_port_are_kept(options):
    options.update({"server.address": "0.0.0.0", "server.port": 8600})
    assert launch.command("app.py").endswith(
        "run app.py --server.address 0.0.0.0 --server.port 8600 --"
    )
    served = launch.command(str(serverconfig.ENTRY))
    assert served.endswith("serve --address 0.0.0.0 --port 8600")


def test_the_packages_entry_is_restarted_with_pmapviz_serve_and_runs(options):
    words = shlex.split(launch.command(str(serverconfig.ENTRY)))
    assert words[-1] == "serve"
    r = subprocess.run([*words, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--devices" in r.stdout


def test_a_path_outside_the_servers_folder_is_absolute_and_quoted(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    odd = tmp_path / "my app.py"
    assert launch.shown_path(odd) == shlex.quote(str(odd))
    assert launch.shown_path(ROOT / "app.py") == "app.py"
    assert launch.shown_path(sys.executable).startswith(".venv/") or os.path.isabs(
        launch.shown_path(sys.executable)
    )
