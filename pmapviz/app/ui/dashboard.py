"""The dashboard's one run: page set-up, the device count fixed before anything starts JAX,
then the page chosen by ``st.navigation``, inside the router.

Two scripts run it, and nothing else: the checkout's ``app.py`` (``streamlit run app.py``) and
the package's own entry, ``pmapviz/app/ui/entry/streamlit_app.py`` (``pmapviz serve``, from a
wheel). Importing this module starts no JAX (tests/test_architecture.py checks): every module it
imports keeps JAX inside its functions, so :func:`main` applies the settings first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import streamlit as st

from pmapviz.app import page_registry
from pmapviz.app.ui import launch, page_code, page_menu, room_panel
from pmapviz.core.base import heavyimports, stopping, valueparse
from pmapviz.core.devices import jaxstartup, startcommands
from pmapviz.core.ui import device_panel, device_sets, presenter, shell

# the tab's icon is a file of our own: a ":material/...:" icon is fetched from fonts.gstatic.com
ICON = str(Path(__file__).resolve().parent / "icon.png")
FREEZE_AFTER_S = 1.0


def main() -> None:
    """One script run: what ``streamlit run app.py`` and ``pmapviz serve`` both execute."""
    st.set_page_config(page_title="pmapviz", page_icon=ICON, layout="wide")
    st.set_option("client.showErrorDetails", "none")  # also in serverconfig.OPTIONS
    page_code.guard()  # Streamlit parses no script beside your f (pmapviz.core.base.pythonast)
    heavyimports.begin()  # pandas imports beside JAX's start; ready() below waits for it
    try:
        settings = jaxstartup.parse_settings(sys.argv[1:], os.environ)
        jaxstartup.apply(settings)  # before anything else touches JAX
        startcommands.launched_with(launch.command())  # what the restart commands start with
    except valueparse.SettingError as err:
        _cannot_start(err)
        return
    heavyimports.ready()  # the one import rule: pandas whole before any page code runs
    if shell.real_server():  # a stop ends this server and every process it started
        stopping.end_everything_at_exit()
    pages = [
        st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, default=(i == 0))
        for i, p in enumerate(page_registry.PAGES)
    ]
    page = st.navigation(pages, position="hidden")  # drawn by page_menu (serverconfig)
    page_menu.page_menu()
    presenter.toggle()
    room_panel.panel(page.url_path, pages)
    device_set = device_sets.current(page_registry.by_url_path(page.url_path).runs_on)
    try:
        with shell.routing(device_set):
            device_panel.show(shell.device_report())
            device_sets.picker(device_set)
            page_menu.presenter_bar(page.url_path)
            page.run()
            room_panel.after_page(page.url_path)
    except Exception as err:  # noqa: BLE001  (a last resort: one clear message, no traceback)
        shell.page_failed(err)
    # once per process, a second after this page: gc.freeze()'s collection holds the interpreter
    # for a few tenths of a second, which at once would hold this first page's end too
    heavyimports.start(delay_s=FREEZE_AFTER_S)
    jaxstartup.return_freed_memory()  # what this run freed goes back to the OS (a long day's RSS)


def _cannot_start(err: valueparse.SettingError) -> None:
    """One hidden page saying what is wrong with the start-up settings and how to start, so no
    page list is offered for an app that cannot run."""
    message, missing = str(err), isinstance(err, jaxstartup.PlatformUnavailable)

    def cannot_start() -> None:
        st.title("pmapviz could not start")
        st.error(message, icon=":material/error:")
        if missing:
            st.markdown(
                "Install the accelerator build of the pinned JAX into this "
                "environment, then restart; or use emulated CPU devices:"
            )
            st.code(startcommands.install_commands(), language="bash")
            return
        st.markdown(
            f"Start it like this (any count from {jaxstartup.MIN_DEVICES} to "
            f"{jaxstartup.MAX_DEVICES}):"
        )
        st.code(f"{launch.command()} --devices 8", language="bash", wrap_lines=True)

    st.navigation([st.Page(cannot_start, title="pmapviz could not start")], position="hidden").run()
