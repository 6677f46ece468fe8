"""The app's pages, in the menu's order: each feature's ``PAGE`` (a
:class:`pmapviz.core.base.pageinfo.PageInfo`: its file, title, icon, URL path, line on Home,
default device set, the schemas it reads its link through, and the checks run on it), taken
in the order of :data:`pmapviz.features.ORDER`. The menu, app.py's navigation, the page check
(``page_check.PAGE_ACTIONS``), the fuzzers and the hostile links all come from :data:`PAGES`.

It lives at the top because routing needs every feature's page, which the core's
:mod:`pmapviz.core.ui.shell` may not import; it draws nothing (the menu and Home's links:
:mod:`pmapviz.app.ui.page_menu`), so the CLI reads it without importing Streamlit.
"""

from __future__ import annotations

import importlib

from pmapviz import features
from pmapviz.core.base import room, settings
from pmapviz.core.base.pageinfo import PageInfo
from pmapviz.core.devices import deviceset

# read by the dashboard on every page: presenter mode, the device set, following the presenter,
# the lead link's one-time token (taken out of the link at once)
APP_KEYS = (settings.PRESENT_KEY, deviceset.URL_KEY, room.FOLLOW_KEY, room.LEAD_KEY)


def _pages() -> tuple[PageInfo, ...]:
    """Each feature's page (a feature without one has no ``PAGE``), in features.ORDER."""
    found = (importlib.import_module(f"pmapviz.features.{name}") for name in features.ORDER)
    return tuple(m.PAGE for m in found if isinstance(getattr(m, "PAGE", None), PageInfo))


PAGES = _pages()


def page_info(path: str) -> PageInfo:
    """The entry of the page in file ``path``."""
    return next(p for p in PAGES if p.path == path)


def by_url_path(url_path: str) -> PageInfo:
    """The page entry ``st.navigation`` chose (its url_path; the default page's is empty)."""
    return next((p for p in PAGES if p.url_path == url_path), PAGES[0])
