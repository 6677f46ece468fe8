"""What a server started by :mod:`harness.server` printed on its terminal (its log, by port):
the presenter key and the one-time lead links (pmapviz.core.base.room), as a presenter reads
them there."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

from harness.server import LOGS

LEAD_LINK = re.compile(r"lead link.*?: (http://\S+)")
PRESENTER_KEY = re.compile(r"presenter key (\S+)")


def printed(url: str) -> str:
    """Everything the server at ``url`` printed so far."""
    return (LOGS / f"server-{urlsplit(url).port}.log").read_text(errors="replace")


def said(url: str, pattern: re.Pattern, after: int = 0, timeout_s: float = 30.0):
    """(the last match of ``pattern``, how many there are) once there are more than
    ``after``: ``streamlit run`` prints the key and the first lead link at the first visit,
    and the next link each time one is opened."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = pattern.findall(printed(url))
        if len(found) > after:
            return found[-1], len(found)
        assert time.monotonic() < deadline, f"the server never printed {pattern.pattern}"
        time.sleep(0.2)


def lead_link(url: str, timeout_s: float = 30.0) -> str:
    """The server's unspent lead link: the last one it printed (a page must have been opened
    once on a ``streamlit run`` server)."""
    link, _ = said(url, LEAD_LINK, timeout_s=timeout_s)
    return link
