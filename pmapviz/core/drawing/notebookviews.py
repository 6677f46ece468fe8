"""What a public call of :mod:`pmapviz` returns: a view that draws itself in a notebook, prints
as text in a terminal and gives its data.

A :class:`View` holds HTML built by the same presentation functions as the pages (device grids,
array diagrams, tables: plain HTML with inline styles), so a notebook cell shows what the
dashboard shows, self-contained: no Streamlit, no server, no script or request to the outside.
Everything a caller typed is escaped where it is built.
"""

from __future__ import annotations

import copy
import html
import os
from dataclasses import dataclass, field
from typing import Any

from pmapviz.core.base import heavyimports
from pmapviz.core.base.palette import MONO_CSS
from pmapviz.core.devices import jaxstartup

# one light card, so a notebook's dark theme does not put dark text on a dark page
_CARD = (
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:14px;"
    "line-height:1.45;color:#1f2328;background:#ffffff;border:1px solid #d0d7de;"
    "border-radius:8px;padding:12px 16px;margin:4px 0;max-width:100%;overflow-x:auto"
)


def ready() -> tuple[str, ...]:
    """Make sure JAX is configured before a public call uses it, and return what to tell the
    user. The first call in a process that has not started JAX applies the settings of the
    environment (``PMAPVIZ_DEVICES``, default 8 emulated CPU devices beside any accelerator);
    a notebook that started JAX itself keeps its devices as they are, and the notes say when
    a count asked for cannot take effect any more (restart the kernel to change it)."""
    if jaxstartup.is_applied():
        return jaxstartup.apply(jaxstartup.applied_settings())
    return jaxstartup.apply(jaxstartup.parse_settings([], os.environ))


def escape(text: Any) -> str:
    """``text`` as HTML text: every character a caller typed is shown, none is markup."""
    return html.escape(str(text), quote=True)


def heading(text: str) -> str:
    """A section heading inside a view (escaped)."""
    return f"<div style='font-weight:600;font-size:1.05em;margin:10px 0 4px'>{escape(text)}</div>"


def paragraph(text: str) -> str:
    """A paragraph of plain text (escaped)."""
    return f"<p style='margin:4px 0'>{escape(text)}</p>"


def code_block(text: str, label: str = "") -> str:
    """Monospaced text as a block (escaped), e.g. code or HLO; ``label`` names it for a reader."""
    aria = f" aria-label='{escape(label)}'" if label else ""
    return (
        f"<pre{aria} style='{MONO_CSS};font-size:12px;background:#f6f8fa;padding:8px;"
        f"border-radius:6px;overflow-x:auto;white-space:pre;margin:4px 0'>{escape(text)}</pre>"
    )


def problem_box(message: str, fix: str) -> str:
    """A problem and its fix, as the pages' red error box says them (escaped)."""
    return (
        "<div role='alert' style='background:#ffebe9;border-left:4px solid #cf222e;"
        f"padding:6px 10px;margin:6px 0'>{escape(message)}"
        f"<br><b>Fix:</b> {escape(fix)}</div>"
    )


def notice_box(message: str) -> str:
    """Something to know before the figures (escaped), as the pages' yellow box says it."""
    return (
        "<div role='note' style='background:#fff8c5;border-left:4px solid #bf8700;"
        f"padding:6px 10px;margin:6px 0'>{escape(message)}</div>"
    )


def table(rows: list[dict[str, Any]], label: str) -> str:
    """Rows of the same keys as an HTML table (every cell escaped); ``label`` names it."""
    if not rows:
        return ""
    keys = list(rows[0])
    head = "".join(
        f"<th style='text-align:left;padding:2px 8px;border-bottom:1px solid #d0d7de'>"
        f"{escape(k)}</th>"
        for k in keys
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td style='padding:2px 8px;{MONO_CSS};font-size:12px'>{escape(r.get(k, ''))}</td>"
            for k in keys
        )
        + "</tr>"
        for r in rows
    )
    return (
        f"<table aria-label='{escape(label)}' style='border-collapse:collapse;margin:4px 0'>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


@dataclass(frozen=True)
class View:
    """A result of the public API: ``title``, its HTML body (already escaped by whoever built
    it), its text for a terminal, and its data. Attributes a view does not have are read from
    ``source`` (the object it shows, e.g. a :class:`pmapviz.core.planning.planning.Plan`)."""

    title: str
    body: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    source: Any = None

    def _repr_html_(self) -> str:
        return (
            f"<div class='pmapviz-view' style=\"{_CARD}\">"
            f"<div style='font-weight:700;font-size:1.15em;margin-bottom:6px'>"
            f"{escape(self.title)}</div>{self.body}</div>"
        )

    def html(self) -> str:
        """The view as one HTML fragment (what a notebook shows): save it or embed it."""
        return self._repr_html_()

    def __str__(self) -> str:
        return f"{self.title}\n{self.text}".rstrip()

    def __repr__(self) -> str:
        return str(self)

    def to_dict(self) -> dict[str, Any]:
        """The view's data, plain Python values (a copy)."""
        return copy.deepcopy(self.data)

    def to_frame(self):
        """The view's main table (``data["rows"]``, one row per device or item) as a pandas
        DataFrame."""
        return heavyimports.pandas().DataFrame(self.data.get("rows", []))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or self.source is None:
            raise AttributeError(name)
        return getattr(self.source, name)
