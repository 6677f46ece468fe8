"""`pmapviz serve`: the dashboard from the package, its options checked before it starts."""

import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

from harness.server import free_port, wait_healthy
from pmapviz.app import cli, cmd_serve, serverconfig
from pmapviz.core.base import room
from pmapviz.core.base.valueparse import SettingError


def _serve(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pmapviz", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--devices", "0"], "--devices 0"),
        (["--port", "70000"], "--port 70,000 is out of range"),
        (["--address", "0.0.0.0;rm"], "is not a host name or an IP address"),
        (["--presenter-key", "short"], "--presenter-key must be 8 to 128"),
        (["--max-bytes", "lots"], "--max-bytes"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_any_server(args, says, capsys):
    assert cli.main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and err.startswith("pmapviz: ")


def test_the_servers_options_reach_the_script_and_streamlits_its_flags(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        cmd_serve.streamlitserver, "serve", lambda *a: seen.setdefault("call", a) and 0
    )
    monkeypatch.setattr(cmd_serve, "warm_up", lambda argv: None)  # it starts JAX: not here
    monkeypatch.delenv(room.ENV_KEY, raising=False)
    argv = ["serve", "--devices", "3", "--max-bytes", "1G", "--port", "8600"]
    assert cli.main([*argv, "--address", "0.0.0.0", "--presenter-key", "abcdefgh"]) == 0
    script, flags, args = seen["call"]
    assert script == serverconfig.ENTRY
    assert args == ["--devices", "3", "--max-bytes", "1G", "--presenter-key", "abcdefgh"]
    assert flags["server.port"] == 8600 and flags["server.address"] == "0.0.0.0"
    assert flags["server.enableXsrfProtection"] is True
    assert room.ENV_KEY not in os.environ  # a key given is the operator's: not replaced


def test_serve_says_the_key_on_the_terminal_serves_the_pages_and_stops_on_ctrl_c():
    port = free_port()
    proc = _serve("--devices", "2", "--port", str(port))
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/explorer", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        cmdline = " ".join(psutil.Process(proc.pid).cmdline())
        os.killpg(proc.pid, signal.SIGINT)
        start = time.monotonic()
        out, err = proc.communicate(timeout=10)
        assert time.monotonic() - start < 5
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    (line,) = [x for x in err.splitlines() if "presenter key" in x]
    key = line.split("presenter key ")[1].split()[0]
    assert room.parse_key(key) == key and key not in cmdline  # on no command line
    assert f"127.0.0.1:{port}" in out + err  # Streamlit's own banner: where to open it
    # the one-time lead link, printed once the server listened (no page was opened: a lead
    # link a visit had to bring would wait for the presenter's first visit)
    (link,) = [x for x in err.splitlines() if "lead link" in x]
    token = link.split(f"http://127.0.0.1:{port}/?lead=")[1].split()[0]
    assert len(token) == 32 and set(token) <= room.KEY_CHARS and key not in link


def test_a_port_taken_is_said_in_one_line_before_any_server_starts(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 2
        cmd_serve.check_listen("127.0.0.1", None)  # no --port: Streamlit moves on by itself
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and f"--port {port + 1}" in err
    assert "presenter key" not in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_machine_without_network_sockets_is_told_what_still_works(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")

    monkeypatch.setattr(cmd_serve.socket, "socket", refused)  # as the TPU machine's sandbox
    with pytest.raises(SettingError, match="Address family not supported.*notebook API work"):
        cmd_serve.check_listen("127.0.0.1", None)


def test_a_ctrl_c_while_the_pods_compile_warms_ends_the_server_within_5_s_and_libtpu_is_quiet():
    port = free_port()
    proc = _serve("--devices", "2", "--port", str(port))
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)  # warm: the Pods compile just started
        pgid = os.getpgid(proc.pid)
        os.killpg(pgid, signal.SIGINT)
        start = time.monotonic()
        out, err = proc.communicate(timeout=10)
        assert time.monotonic() - start < 5
        alive = [p for p in psutil.process_iter() if _in_group(p, pgid)]
        assert alive == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    said = out + err
    assert "libtpu" not in said and "TPU_" not in said and "Traceback" not in said


def _in_group(p: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ProcessLookupError):
        return False
