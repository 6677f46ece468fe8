"""One short value kept in this browser across reloads: a cookie, written by a small inline
component (``st.components.v2``: no API writes a cookie from Python) and read back on a later
session's first run from the request that opened it (``st.context.cookies``).

The component is trusted code of ours: its JavaScript is this module's constant, and the one
value it writes comes as data, checked here to be a cookie-safe token (the server's own
random text, never anything a person typed). The cookie is ``SameSite=Strict``, on ``Path=/``,
``Secure`` on https; cookies are shared by every port of a host, so each name carries the
server's port (:func:`cookie_name`).
"""

from __future__ import annotations

import functools
import string

import streamlit as st

NAME = "pmapviz.browser_store"
SAFE = frozenset(string.ascii_letters + string.digits + "-_")
MAX_VALUE = 128

WRITE_JS = """
export default function (component) {
  const { data } = component;
  if (!data || typeof data.name !== "string" || typeof data.value !== "string") return;
  const age = data.value ? Math.max(0, Math.floor(Number(data.max_age) || 0)) : 0;
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  document.cookie =
    data.name + "=" + data.value + "; Path=/; Max-Age=" + age + "; SameSite=Strict" + secure;
}
"""


@functools.cache
def _writer():
    """The component, registered on first use (inside a script run, as Streamlit wants)."""
    return st.components.v2.component(NAME, js=WRITE_JS)


def cookie_name(prefix: str) -> str:
    """``prefix`` and this server's port (``pmapviz_lead_8501``): one cookie per server."""
    return f"{prefix}_{int(st.get_option('server.port') or 0)}"


def _safe(text: str) -> bool:
    return len(text) <= MAX_VALUE and set(text) <= SAFE


def keep(name: str, value: str, max_age_s: float, key: str) -> None:
    """Keep ``value`` in this browser under ``name`` for ``max_age_s`` seconds ("" or 0:
    forget it). Draws nothing visible; mount it where the run passes each time it should
    hold (a value the JavaScript already wrote is written again, which costs nothing)."""
    if not (_safe(name) and name and _safe(value)):
        raise ValueError("a browser-stored name or value must be a short URL-safe token")
    data = {"name": name, "value": value, "max_age": int(max_age_s) if value else 0}
    _writer()(key=key, data=data, height="content", width="stretch")


def read(name: str) -> str | None:
    """The value this browser sent under ``name`` when this session opened (None: none, or
    not a token this module could have written)."""
    value = (st.context.cookies or {}).get(name)
    return value if isinstance(value, str) and value and _safe(value) else None
