"""AppTest helpers: run app.py (the router) in-process, optionally with command-line args."""

import sys
from html.parser import HTMLParser

import pytest
from streamlit.testing.v1 import AppTest

from pmapviz.app.ui import page_check
from tests.conftest import ROOT


def steady_state_server(monkeypatch) -> None:
    """Make AppTest behave like a server after its first request: the legacy ``pages/`` mode
    left, and scripts compiled once and reused (see ``page_check.steady_server_patches``, which
    the accelerator check applies the same way; the fresh-server path itself is covered by
    the e2e deep-link test)."""
    for module, name, value in page_check.steady_server_patches():
        monkeypatch.setattr(module, name, value)


@pytest.fixture()
def run_app(monkeypatch):
    """run_app(page=None, argv=(), env=None) -> AppTest after the first run (and page switch)."""

    def _run(
        page: str | None = None, argv=(), env=None, timeout: float = 120, query: dict | None = None
    ) -> AppTest:
        steady_state_server(monkeypatch)
        monkeypatch.setattr(sys, "argv", ["app.py", *argv])
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout).run()
        if page is not None:
            for k, v in (query or {}).items():
                at.query_params[k] = v
            at.switch_page(page).run()
        return at

    return _run


def open_link(monkeypatch, page: str | None, query: dict, timeout: float = 120) -> AppTest:
    """A browser opening a link: a fresh session whose first run is ``page`` (a page file;
    None: Home) with ``query``, after that run."""
    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["app.py"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    if page is not None:
        at.switch_page(page)
    return at.run()


def all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [
        e.value for kind in ("error", "warning", "info", "success") for e in getattr(at, kind)
    ]
    parts += [t.value for t in at.title] + [h.value for h in at.subheader]
    parts += [h.value for h in at.header] + [c.value for c in at.code]
    parts += [e.proto.label for e in at.get("page_link")]
    return "\n".join(str(p) for p in parts)


class _TableParser(HTMLParser):
    """Rows of the first ``<table>`` in an HTML string: header cells, then data rows."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_table(at: AppTest, label: str) -> list[dict[str, str]]:
    """The rows of the ``st.html`` table labelled ``label`` (``arrayhtml.table_html``), as dicts
    keyed by its header, read from the HTML the browser would get."""
    body = next(h.proto.body for h in at.get("html") if f'aria-label="{label}"' in h.proto.body)
    parser = _TableParser()
    parser.feed(body)
    head, *rows = parser.rows
    return [dict(zip(head, row, strict=True)) for row in rows]
