"""pmapviz.core.devices.startcommands: the restart command is this server's own start command
with the server's options after it, sizes as typed, and parses back to the same settings."""

import shlex

import pytest

from pmapviz.core.devices import jaxstartup, startcommands


@pytest.fixture()
def launcher():
    before = startcommands._launcher[0]
    startcommands.launched_with(".venv/bin/streamlit run app.py --server.port 8600 --")
    yield
    startcommands.launched_with(before)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_a_restart_reads_back_as_the_settings_it_was_made_from(launcher, n):
    asked = jaxstartup.Settings(
        devices=5, platform="cpu", max_bytes=2 * 2**30, max_device_bytes=1536 * 2**20
    )
    command = startcommands.restart(asked, n)
    assert command.startswith(".venv/bin/streamlit run app.py --server.port 8600 -- ")
    assert "--max-bytes 2G --max-device-bytes 1536M" in command
    options = shlex.split(command.split(" -- ", 1)[1])
    again = jaxstartup.parse_settings(options, {})
    assert (again.devices, again.platform, again.max_bytes, again.max_device_bytes) == (
        n,
        "cpu",
        asked.max_bytes,
        asked.max_device_bytes,
    )


def test_the_install_commands_end_with_this_servers_own_start_on_cpu(launcher):
    last = startcommands.install_commands().splitlines()[-1]
    assert last == ".venv/bin/streamlit run app.py --server.port 8600 -- --platform cpu --devices 8"
