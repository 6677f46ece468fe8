"""A tour step's plain data: what it knows about this server (:class:`Context`), the blocks it
gives (:class:`TourBlock`, so a step can be cached and tested and the page only renders them),
and the links that open the full pages with the same settings (:func:`page_url`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pmapviz.core.devices import devicefacts


@dataclass(frozen=True)
class TourBlock:
    """One piece of a step: kind is markdown, code, lesson (a mistake's message, shown on
    purpose), info, table, link, folded_code (body: (words, code), drawn collapsed under the
    label ``extra``: the words, then the code unrendered, e.g. JAX's own error), or a picture:
    grid (rows; extra: what it shows), chips (the devices), cards (an explorer scenario's
    texts, drawn as JAX splits its arrays; extra: a title), html (a picture already drawn by a
    drawing module as escaped HTML, role="img" with its own label)."""

    kind: str
    body: Any
    extra: str = ""  # code language, a link's target, a folded block's label, a picture's words
    problem: bool = False  # the problem a picture answers: before the pictures when presenting

    @property
    def picture(self) -> bool:
        """Whether the block is drawn as a picture (grid, chips or cards)."""
        return self.kind in PICTURES


PICTURES = ("grid", "chips", "cards", "html")


@dataclass(frozen=True)
class Context:
    """What a step needs to know about this server."""

    n: int  # devices
    labels: tuple[str, ...]  # device names from JAX
    facts: devicefacts.Facts  # what the devices are (every platform statement comes from it)
    restart_command: str  # for 4 devices (emulated CPU devices when these are real ones)


def page_url(page: str, **params: Any) -> str:
    """A link to another page with its settings (home is ``/``)."""
    path = "/" if page == "home" else f"/{page}"
    return path + (f"?{urlencode({k: str(v) for k, v in params.items()})}" if params else "")
