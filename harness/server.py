"""Start and stop a real ``streamlit run`` server on a free port, its output in
artifacts/server-<port>.log. Safe with several test workers at once: every server gets a port
of its own, and a server that lost its port to another process before it could bind it is
started again on another."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "artifacts"
PORT_TRIES = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExitedEarly(RuntimeError):
    pass


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ExitedEarly(f"streamlit exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} was not healthy within {timeout} s")


def _log_says_port_taken(port: int) -> bool:
    try:
        said = (LOGS / f"server-{port}.log").read_text(errors="replace")
    except OSError:
        return False
    return "is not available" in said or "another program listens there" in said  # serve's


def start_server(
    extra_args: list[str],
    env: dict[str, str] | None = None,
    script: str = "app.py",
    cwd: Path = ROOT,
    serve: bool = False,
    address: str = "127.0.0.1",
):
    """Start `streamlit run` (with ``serve``: ``python -m pmapviz serve``, the package's own
    server, ``extra_args`` its options) listening on ``address`` (the tests reach it at
    127.0.0.1 whatever it is); returns (process, base url). Caller must stop_server()."""
    for attempt in range(PORT_TRIES):
        port = free_port()
        cmd = [
            sys.executable, "-m", "streamlit", "run", script,
            "--server.headless", "true", "--server.address", address,
            "--server.port", str(port), "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none",
        ]  # fmt: skip
        if serve:
            cmd = [sys.executable, "-m", "pmapviz", "serve", "--port", str(port), *extra_args]
        elif extra_args:
            cmd += ["--", *extra_args]
        LOGS.mkdir(exist_ok=True)
        log = open(LOGS / f"server-{port}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        proc.log = log  # type: ignore[attr-defined]
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc)
        except ExitedEarly:
            stop_server(proc)
            if attempt + 1 < PORT_TRIES and _log_says_port_taken(port):
                continue  # another process took the port between free_port() and the bind
            raise
        except Exception:
            stop_server(proc)
            raise
        return proc, url
    raise AssertionError("unreachable")


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a process started in a session of its own, and its whole group: ``sig`` (SIGINT
    is a Ctrl-C), then SIGKILL after 10 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def stop_server(proc: subprocess.Popen) -> None:
    stop_group(proc)
    proc.log.close()  # type: ignore[attr-defined]


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its children (a server and its workers); a child
    that ends while it is read counts 0."""
    root, total = psutil.Process(pid), 0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total
