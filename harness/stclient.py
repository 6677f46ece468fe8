"""A minimal Streamlit client: open a page with its query string over the same websocket
protocol the browser uses (protobuf BackMsg/ForwardMsg on /_stcore/stream), and collect every
element the server sends until the script finishes. It opens a link exactly as a browser's
first request does (a new session, the URL's page and query string), without rendering, so
hundreds of links take a minute instead of ten. Browser rendering checks stay in the e2e tests
that drive Chromium."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

DONE = {ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY,
        ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR}  # fmt: skip


@dataclass
class Page:
    """What the server sent for one link: element kinds and their texts."""

    elements: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)
    finished: bool = False
    seconds: float = 0.0

    def texts(self, *kinds: str) -> list[str]:
        return [t for k, t in self.elements if not kinds or k in kinds]

    @property
    def exceptions(self) -> list[str]:
        return self.texts("exception")


def _element_text(el) -> tuple[str, str]:
    kind = el.WhichOneof("type") or "?"
    part = getattr(el, kind, None)
    if kind == "exception":
        return kind, f"{part.type}: {part.message} {' '.join(part.stack_trace)}"
    for attr in ("body", "label", "text", "code_text"):
        value = getattr(part, attr, None)
        if isinstance(value, str) and value:
            return kind, value
    return kind, ""


def open_link(base_url: str, link: str, timeout: float = 120.0) -> Page:
    """Open ``link`` ("/explorer?s0=...") in a new session; wait for the script to finish."""
    parts = urlsplit(link)
    ws_url = base_url.replace("http://", "ws://") + "/_stcore/stream"
    page = Page()
    t0 = time.monotonic()
    with connect(ws_url, subprotocols=["streamlit"], max_size=2**27, open_timeout=30) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = parts.query
        msg.rerun_script.page_name = parts.path.strip("/")
        ws.send(msg.SerializeToString())
        while time.monotonic() - t0 < timeout:
            fwd = ForwardMsg()
            fwd.ParseFromString(ws.recv(timeout=max(0.1, timeout - (time.monotonic() - t0))))
            which = fwd.WhichOneof("type")
            if which == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                page.elements.append(_element_text(fwd.delta.new_element))
            elif which == "script_finished" and fwd.script_finished in DONE:
                page.finished = True
                break
    page.seconds = time.monotonic() - t0
    return page


_CODE_SPAN = re.compile(r"`[^`]*`")
_ATTRIBUTE = re.compile(r"""\s[\w-]+=('[^'<>]*'|"[^"<>]*")""")  # name='value' in a tag


def outside_code(text: str) -> str:
    """Markdown text with its inline code spans and its HTML attribute values removed (an
    attribute value escaped with html.escape(quote=True) is never rendered): what could
    render as markup."""
    return _ATTRIBUTE.sub("", _CODE_SPAN.sub("", text))


class Session:
    """One browser session over the protocol: open a link, then press a button by its label,
    as a person does, with no browser. Each run's elements are collected until the script
    finishes; ``on_element(kind, text)`` sees each as it arrives (a queue message, say)."""

    def __init__(self, base_url: str, timeout: float = 600.0):
        self._connection = connect(base_url.replace("http://", "ws://") + "/_stcore/stream",
                                   subprotocols=["streamlit"], max_size=2**27,
                                   open_timeout=30)  # fmt: skip
        self._ws = self._connection.__enter__()  # closed by close(), as a with block would
        self.timeout = timeout
        self.query, self.page_name = "", ""
        self.buttons: dict[str, str] = {}  # label -> widget id, from the last run

    def close(self) -> None:
        self._connection.__exit__(None, None, None)

    def open(self, link: str, on_element=None) -> Page:
        parts = urlsplit(link)
        self.query, self.page_name = parts.query, parts.path.strip("/")
        return self._run([], on_element)

    def press(self, label_prefix: str, on_element=None) -> Page:
        """Press the first button whose label starts with ``label_prefix``; KeyError if the
        last run showed none."""
        wid = next(w for label, w in self.buttons.items() if label.startswith(label_prefix))
        return self._run([wid], on_element)

    def _run(self, triggers: list[str], on_element, states=()) -> Page:
        """Rerun with ``triggers`` pressed and the widget ``states`` given; the page it drew."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = self.page_name
        for wid in triggers:
            w = msg.rerun_script.widget_states.widgets.add()
            w.id, w.trigger_value = wid, True
        for state in states:
            msg.rerun_script.widget_states.widgets.add().CopyFrom(state)
        self._ws.send(msg.SerializeToString())
        page, t0 = self._new_page(), time.monotonic()
        self.buttons = {}
        while time.monotonic() - t0 < self.timeout:
            fwd = ForwardMsg()
            fwd.ParseFromString(self._ws.recv(timeout=max(0.1, self.timeout
                                                          - (time.monotonic() - t0))))  # fmt: skip
            which = fwd.WhichOneof("type")
            if which == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el = fwd.delta.new_element
                kind, text = _element_text(el)
                page.elements.append((kind, text))
                self._seen(el, kind, text, page)
                if on_element:
                    on_element(kind, text)
            elif which == "script_finished" and fwd.script_finished in DONE:
                page.finished = True
                break
        page.seconds = time.monotonic() - t0
        return page

    def _new_page(self) -> Page:
        return Page()

    def _seen(self, el, kind: str, text: str, page: Page) -> None:
        """One element drawn: its button's id is kept for :meth:`click` (subclasses keep more)."""
        if kind == "button":
            self.buttons[el.button.label] = el.button.id
