"""The core's Streamlit side: the frame every page runs in and the components every feature
draws with (each feature's own parts are in its ``ui`` package, e.g.
:mod:`pmapviz.features.cluster.ui`).

The frame: :mod:`.shell` (routing through app.py, the last resort; the page list is the
app's, :mod:`pmapviz.app.page_registry`), :mod:`.presenter` mode, the sidebar's
:mod:`.device_panel` and :mod:`.device_sets`, and :mod:`.url_state` (a page's settings read
from and written to its link, through the page's ``settings.Schema``). Components, each
drawn by its ``show()``: :mod:`.grids`, :mod:`.tables`, :mod:`.plan_cards`,
:mod:`.queue_display`, :mod:`.compiled_analysis`, :mod:`.long_run`,
:mod:`.collective_picker`; every long action runs under :func:`.recompute.working`.
Nothing here imports JAX.
"""
