"""The lead link on the server's terminal, as Jupyter prints its token link: the server's
address (as Streamlit's own banner names it) and ``/?lead=<token>``. ``pmapviz serve`` prints it
as soon as the server listens (its port is then the one Streamlit bound, which moves on from a
taken 8501 by itself); ``streamlit run app.py`` at the first visit (room_panel.the_room)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from streamlit import config, net_util
from streamlit.runtime import Runtime, RuntimeState
from streamlit.web.server import server_util

from pmapviz.core.base import room

WAIT_S = 600.0  # how long `pmapviz serve` waits for its server to listen before it gives up
LISTENING = (RuntimeState.NO_SESSIONS_CONNECTED, RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED)


def links(token: str) -> list[str]:
    """The lead link at each address this server answers at: ``browser.serverAddress`` where
    set; the address it listens on where that is one address; on every interface, localhost
    and this machine's network address (Streamlit's "Network URL")."""
    return [f"{base}/?{room.LEAD_KEY}={token}" for base in _bases()]


def _bases() -> list[str]:
    if config.is_manually_set("browser.serverAddress"):
        return [server_util.get_url(str(config.get_option("browser.serverAddress")))]
    address = str(config.get_option("server.address") or "").strip()
    if address not in ("", "0.0.0.0", "::", "[::]"):
        return [server_util.get_url(address)]
    found = [server_util.get_url("localhost")]
    internal = net_util.get_internal_ip()
    if internal:
        found.append(server_util.get_url(internal))
    return found


def line(token: str, first: bool = True) -> str:
    """The terminal's line for ``token`` (``first``: the first link; else the next one)."""
    return room.lead_link_line(links(token), first)


def _to_terminal(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def announce_when_listening(
    token: str, say: Callable[[str], None] = _to_terminal, wait_s: float = WAIT_S
) -> threading.Thread:
    """Print the lead link for ``token`` once this process's Streamlit server listens (a
    thread of its own: the server runs on the calling thread); nothing if it never does."""

    def wait() -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if Runtime.exists() and Runtime.instance().state in LISTENING:
                say(line(token))
                return
            time.sleep(0.1)

    thread = threading.Thread(target=wait, name="pmapviz-lead-link", daemon=True)
    thread.start()
    return thread
