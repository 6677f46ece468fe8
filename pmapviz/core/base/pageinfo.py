"""A page's record, without Streamlit: its file, title, icon, URL path, line on Home, default
device set, the schemas its link is read through, and the checks run on it. Each feature
declares its page as ``PAGE`` in its ``__init__``; :mod:`pmapviz.app.page_registry` gathers
them in the order of :data:`pmapviz.features.ORDER`, which is the menu's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pmapviz.core.base import settings

# The pages' one folder: a checkout's top-level pages/ (beside app.py, as the product's layout
# has it), which a wheel carries as pmapviz/app/ui/pages/ (setup.py maps it at build time), so
# `streamlit run app.py` and an installed `pmapviz serve` serve the same files.
_IN_PACKAGE = Path(__file__).resolve().parents[2] / "app" / "ui" / "pages"
PAGES_FOLDER = (
    _IN_PACKAGE if _IN_PACKAGE.is_dir() else Path(__file__).resolve().parents[3] / "pages"
)


def page_file(name: str) -> str:
    """The absolute path of page ``name`` (``page_file("explorer")``): what ``st.Page``,
    ``st.page_link``, ``st.switch_page`` and AppTest take, from app.py in a checkout and from
    the package's own entry (``pmapviz serve``) alike."""
    return str(PAGES_FOLDER / f"{name}.py")


Schemas = Callable[[int], tuple[settings.Schema, ...]]  # a page's schemas on n devices


def no_settings(n_devices: int) -> tuple[settings.Schema, ...]:
    """The schemas of a page whose link carries no settings of its own."""
    return ()


@dataclass(frozen=True)
class PageInfo:
    """One page: its file, title, icon, URL path, line on Home, default device set, the
    schemas its link is read through (``schemas(n)``: every query key it reads, but the app's
    ``page_registry.APP_KEYS``), and the checks the doctor and the tests run on it
    (``checks``: each a query and the buttons pressed in order: the page's main actions, small
    enough to be quick)."""

    path: str
    title: str
    icon: str
    url_path: str
    blurb: str
    runs_on: str = "many"  # its default device set (deviceset.NEEDS): lessons want many
    checks: tuple[tuple[dict, tuple[str, ...]], ...] = (({}, ()),)
    schemas: Schemas = no_settings

    def keys(self, n_devices: int = 8) -> tuple[str, ...]:
        """Every URL query key the page reads, in its schemas' order (the same on any
        ``n_devices``), without the app's ``page_registry.APP_KEYS``."""
        return tuple(dict.fromkeys(f.key for s in self.schemas(n_devices) for f in s.fields))
