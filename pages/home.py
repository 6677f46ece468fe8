"""Home: what pmap does, the device set, and a live hello-pmap."""

import streamlit as st

from pmapviz.app.ui import page_menu
from pmapviz.core.base import valuetext
from pmapviz.core.devices import devicewords
from pmapviz.core.ui import grids, presenter, shell, url_state
from pmapviz.features.home.ui import hello_pmap, pmap_intro

shell.ensure_routed()

url_state.set_url({})  # Home has no settings: its link is the bare address
url_state.share_link("home")
report = shell.device_report()
n = report.count

st.title("pmapviz: see what `jax.pmap` does")
slot = presenter.picture_slot()  # presenter mode: the live hello-pmap first
st.markdown(
    (
        devicewords.sets_sentence(report.facts)
        or f"This server has **{valuetext.counted(n, report.platform + ' device')}**."
    )
    + " Every diagram, shape and number in this app comes from real JAX arrays "
    "on them."
)
pmap_intro.show(report.facts)

st.subheader("Your device set")
st.caption(
    "In mesh order, from `jax.devices()`. Each device keeps its colour on every page; "
    "hover a block for details."
)
grids.device_set(report)

hello_pmap.show(n, slot)

st.subheader("Pages")
page_menu.page_links()
