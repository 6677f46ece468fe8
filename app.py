"""pmapviz: an interactive dashboard for understanding and checking ``jax.pmap``.

Run ``streamlit run app.py -- --devices 8`` (or set PMAPVIZ_DEVICES). The device count is fixed
for the whole server process, so it is applied here, before any page imports JAX.
"""

import os
import sys

import streamlit as st

from pmapviz.core.base import heavyimports, valueparse
from pmapviz.core.devices import jaxstartup

# the tab's icon is a file of our own: a ":material/...:" icon is fetched from fonts.gstatic.com
ICON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pmapviz", "app", "icon.png")
st.set_page_config(page_title="pmapviz", page_icon=ICON, layout="wide")
st.set_option("client.showErrorDetails", "none")  # also in .streamlit/config.toml

try:
    _settings = jaxstartup.parse_settings(sys.argv[1:], os.environ)
    jaxstartup.apply(_settings)  # before anything else touches JAX
except valueparse.SettingError as err:

    def _cannot_start(
        message: str = str(err), missing: bool = isinstance(err, jaxstartup.PlatformUnavailable)
    ) -> None:
        st.title("pmapviz could not start")
        st.error(message, icon=":material/error:")
        if missing:
            st.markdown(
                "Install the accelerator build of the pinned JAX into this "
                "environment, then restart; or use emulated CPU devices:"
            )
            st.code(jaxstartup.install_commands(), language="bash")
            return
        st.markdown(
            f"Start it like this (any count from {jaxstartup.MIN_DEVICES} to "
            f"{jaxstartup.MAX_DEVICES}):"
        )
        st.code(
            "streamlit run app.py -- --devices 8\n# or\nPMAPVIZ_DEVICES=8 streamlit run app.py",
            language="bash",
        )

    # one hidden page, so no page list is offered for an app that cannot run
    st.navigation(
        [st.Page(_cannot_start, title="pmapviz could not start")], position="hidden"
    ).run()
    st.stop()

from pmapviz.app import page_registry  # noqa: E402  (after the devices)
from pmapviz.app.ui import page_menu  # noqa: E402
from pmapviz.core.ui import device_panel, device_sets, presenter, shell  # noqa: E402

page = st.navigation(  # drawn by page_menu: Streamlit's own list is off (config.toml)
    [
        st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, default=(i == 0))
        for i, p in enumerate(page_registry.PAGES)
    ],
    position="hidden",
)
page_menu.page_menu()
presenter.toggle()
device_set = device_sets.current(page_registry.by_url_path(page.url_path).runs_on)
try:
    with shell.routing(device_set):
        device_panel.show(shell.device_report())
        device_sets.picker(device_set)
        page.run()
except Exception as err:  # noqa: BLE001  (a last resort: one clear message, no traceback)
    shell.page_failed(err)
heavyimports.start()  # once per process, after this page: pandas for tables, and gc.freeze()
jaxstartup.return_freed_memory()  # what this run freed goes back to the OS (a long day's RSS)
