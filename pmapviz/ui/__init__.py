"""The Streamlit side of pmapviz: the only package of ``pmapviz`` that imports Streamlit.

One concept per module. The frame every page runs in: :mod:`.shell` (the page list, routing
through app.py, the last resort), :mod:`.presenter` mode, the sidebar's :mod:`.device_panel`,
and :mod:`.url_state` (a page's settings read from and written to its link, through the
page's ``settings.Schema``). Components, each drawn by its ``show()``: :mod:`.grids`,
:mod:`.tables`, :mod:`.plan_cards`, :mod:`.queue_display`, :mod:`.timelines`,
:mod:`.compiled_analysis`, :mod:`.live_result`, :mod:`.dot_result`, and each page's own parts
(its settings form, its runs and their states, its results). Pages compose them; everything
else in ``pmapviz`` is plain core, and nothing here imports JAX.
"""

from pmapviz.ui.shell import PAGES

__all__ = ["PAGES"]
