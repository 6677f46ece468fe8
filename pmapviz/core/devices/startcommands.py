"""The commands that start a server, as a person types them on this machine: how this one was
started (:func:`launched_with`, said by the dashboard at every run), the same with another
device count (:func:`restart`, since a device count is fixed at start), and how to give this
environment a GPU or TPU backend (:func:`install_commands`)."""

from __future__ import annotations

from typing import Any

from pmapviz.core.base import valuetext
from pmapviz.core.devices import accelerators

# how this process was started, up to the server's own options
_launcher: list[str] = ["streamlit run app.py --"]


def launched_with(command: str) -> None:
    """Say how this server was started: its command up to the server's own options, e.g.
    ``.venv/bin/streamlit run app.py --`` or ``.venv/bin/pmapviz serve --port 8600``."""
    _launcher[0] = command


def restart(requested: Any, n: int | None = None, platform: str | None = None) -> str:
    """The command that restarts this server with ``n`` devices (default: as asked) on
    ``platform``, its budgets kept (``requested``: the server's ``jaxstartup.Settings``),
    with the sizes as a person types them (2G, not bytes)."""
    n = requested.devices if n is None else n
    platform = platform or requested.platform
    extra = f" --platform {platform}" if platform != "auto" else ""
    if requested.max_bytes:
        extra += f" --max-bytes {valuetext.size_flag(requested.max_bytes)}"
    if requested.max_device_bytes:
        extra += f" --max-device-bytes {valuetext.size_flag(requested.max_device_bytes)}"
    if requested.max_seconds:
        extra += f" --max-seconds {requested.max_seconds:g}"
    return f"{_launcher[0]} --devices {n}{extra}"


def install_commands() -> str:
    """The commands that give this environment a GPU or TPU backend, or start on CPU."""
    return "\n".join(
        [
            "# an NVIDIA GPU:",
            *accelerators.install_commands("gpu"),
            "# a Google TPU:",
            *accelerators.install_commands("tpu"),
            "# or, on this machine as it is, emulated CPU devices:",
            f"{_launcher[0]} --platform cpu --devices 8",
        ]
    )
