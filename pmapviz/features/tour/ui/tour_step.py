"""A tour step's content: its blocks (:class:`pmapviz.features.tour.tourblocks.TourBlock`, plain
data made by the core), drawn in order, in presenter mode the pictures first and the words after
them; and the live demo behind a button that two steps have (a cluster, a timing)."""

from __future__ import annotations

import html
from urllib.parse import parse_qsl, urlsplit

import streamlit as st

from pmapviz.core.base import queues
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import jaxstartup
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.ui import grids, plan_cards, presenter, queue_display, tables, url_state
from pmapviz.core.ui.device_panel import device_chips
from pmapviz.features.cluster import cluster
from pmapviz.features.timing import sweepsetup
from pmapviz.features.tour import tourblocks, tourruns, toursteps


def demo(step: int, ctx: tourblocks.Context) -> list[tourblocks.TourBlock]:
    """Step ``step``'s blocks for this server (cached: they depend on the step and the
    devices only; a step whose measurement could not be made now is not kept)."""
    try:
        return _kept(step, ctx)
    except tourruns.NotMeasured as unmeasured:
        return unmeasured.blocks


@st.cache_data(max_entries=32, show_spinner=False)
def _kept(step: int, ctx: tourblocks.Context) -> list[tourblocks.TourBlock]:
    return toursteps.STEPS[step - 1].demo(ctx)


def show(blocks: list, report: jaxstartup.DeviceReport) -> None:
    """Draw a step's blocks."""
    if presenter.presenting():  # the problem, then the pictures, then the words
        problem = [b for b in blocks if b.problem]
        pictures = [b for b in blocks if b.picture and not b.problem]
        blocks = problem + pictures + [b for b in blocks if b not in problem + pictures]
    for b in blocks:
        _block(b, report)


def _block(b, report: jaxstartup.DeviceReport) -> None:
    if b.kind == "markdown":
        st.markdown(b.body)
    elif b.kind == "code":
        st.code(b.body, language=b.extra or None, wrap_lines=True)
    elif b.kind == "lesson":  # a mistake's message, shown on purpose: not the page's error
        st.warning(b.body, icon=":material/school:")
    elif b.kind == "folded_code":  # e.g. JAX's own error, after pmapviz's explanation
        words, code = b.body
        with st.expander(b.extra, icon=":material/terminal:"):
            st.caption(words)
            st.code(code, language=None, wrap_lines=True)
    elif b.kind == "info":
        st.info(b.body, icon=":material/info:")
    elif b.kind == "table":
        tables.show(b.body)
    elif b.kind == "grid":
        grids.show(b.body, b.extra)
    elif b.kind == "chips":
        label = html.escape(
            f"The {report.count} devices of this server: " + ", ".join(report.labels[:16]),
            quote=True,
        )
        st.markdown(
            f"<div role='img' aria-label='{label}'>{device_chips(report)}</div>",
            unsafe_allow_html=True,
        )
    elif b.kind == "cards":
        _, plan, _ = Scenario.from_texts(b.body, report.count).plan(report.count)
        if plan is not None and plan.ok:
            plan_cards.show(plan, b.extra, "As JAX's NamedSharding places the arrays.")
    elif b.kind == "html":  # drawn (and escaped) by a drawing module: no script, no link
        st.html(b.body)
    elif b.kind == "link":
        _page_link(b.body, b.extra)


def _page_link(label: str, link: str) -> None:
    """A step's link to another page, opened in this tab and this session: presenter mode,
    following the presenter, and the device set stay as they are; the page's settings are the
    link's, read through its schemas as any link's."""
    parts = urlsplit(link)
    page = parts.path.strip("/") or "home"
    query = dict(parse_qsl(parts.query)) | url_state.own_keys()
    st.page_link(page_file(page), label=label, icon=":material/arrow_forward:", query_params=query)


def actions(step: int, n: int) -> None:
    """Step 8: launch two processes; step 9: time x * 2 + 1 on one and on all ``n`` devices
    (each after its turn in the queue, with a way to stop waiting)."""
    if step == 8 and st.button(
        "Launch 2 processes", key="tour_cluster", icon=":material/rocket_launch:"
    ):
        _rows(
            tourruns.launch_two_processes,
            "tour_stop_cluster",
            (cluster.ClusterError, OSError),
            ":material/error:",
        )
    if step == 9 and st.button(
        "Time x * 2 + 1 on 1 and on all devices", key="tour_time", icon=":material/timer:"
    ):
        _rows(
            lambda on_wait: tourruns.time_one_and_all(n, on_wait=on_wait),
            "tour_stop_time",
            (sweepsetup.BenchError, queues.WaitTimeout, queues.Cancelled),
            ":material/block:",
        )


def _rows(action, stop_key: str, errors: tuple, icon: str) -> None:
    """``action(on_wait=...)``'s table, or its error."""
    on_wait, clear_wait = queue_display.show(stop_key=stop_key)
    try:
        rows = action(on_wait=on_wait)
        clear_wait()
        tables.show(rows)
    except errors as err:
        clear_wait()
        st.error(str(err), icon=icon)
