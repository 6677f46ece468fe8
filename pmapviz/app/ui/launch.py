"""How this server was started, as a command a person can type again on this machine: the
restart commands the pages show (a device count is fixed at start) are this command with the
server's own options after it, so they run as shown after the README's install (no bare
``streamlit`` that is not on the PATH) and keep the address and port the room uses."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import streamlit as st

from pmapviz.app import serverconfig

DEFAULT_ADDRESS, DEFAULT_PORT = "127.0.0.1", 8501


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as typed from the server's folder: relative where it lies inside it, else
    absolute (never resolved: a virtual environment's python is a link to the system's)."""
    full = os.path.abspath(path)
    here = os.getcwd()
    inside = os.path.commonpath([full, here]) == here
    return shlex.quote(os.path.relpath(full, here) if inside else full)


def _tool(name: str, module: str) -> str:
    """The environment's own script for ``name`` where it has one, else python -m."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return shown_path(script)
    return f"{shown_path(sys.executable)} -m {module}"


def command(script: str | None = None) -> str:
    """This server's start command up to its own options (``--devices 8`` follows it)."""
    script = script if script is not None else sys.argv[0]
    address = str(st.get_option("server.address") or DEFAULT_ADDRESS)
    port = int(st.get_option("server.port") or DEFAULT_PORT)
    if script and Path(script).resolve() == serverconfig.ENTRY:
        words = [_tool("pmapviz", "pmapviz"), "serve"]
        words += ["--address", shlex.quote(address)] if address != DEFAULT_ADDRESS else []
        words += ["--port", str(port)] if port != DEFAULT_PORT else []
        return " ".join(words)
    words = [_tool("streamlit", "streamlit"), "run", shown_path(script or "app.py")]
    words += ["--server.address", shlex.quote(address)] if address != DEFAULT_ADDRESS else []
    words += ["--server.port", str(port)] if port != DEFAULT_PORT else []
    return " ".join([*words, "--"])
