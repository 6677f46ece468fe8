"""One set of server settings: the checkout's config file and `pmapviz serve`'s flags agree."""

import tomllib

from pmapviz.app import serverconfig
from tests.conftest import ROOT


def test_the_checkouts_config_file_says_exactly_what_serve_passes():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config == serverconfig.OPTIONS


def test_safe_defaults_and_overrides_on_top():
    flags = serverconfig.flag_options()
    assert flags["server.address"] == "127.0.0.1" and flags["server.enableXsrfProtection"] is True
    assert flags["client.showErrorDetails"] == "none"
    mine = serverconfig.flag_options(server_port=8600, server_address="0.0.0.0")
    assert mine["server.port"] == 8600 and mine["server.address"] == "0.0.0.0"
    assert {k: v for k, v in mine.items() if k not in ("server.port", "server.address")} == {
        k: v for k, v in flags.items() if k != "server.address"
    }


def test_the_entry_script_is_in_the_package_and_runs_the_dashboard():
    assert serverconfig.ENTRY.is_file()
    assert serverconfig.ENTRY.is_relative_to(ROOT / "pmapviz")
    assert "dashboard.main()" in serverconfig.ENTRY.read_text()
    assert "dashboard.main()" in (ROOT / "app.py").read_text()
