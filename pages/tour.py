"""Guided tour: the seed's path through pmap in ten steps, each with a small live demo on this
server's devices and a link that opens the full page with the same settings."""

import streamlit as st

from pmapviz.app import page_registry
from pmapviz.core.ui import shell, url_state
from pmapviz.features.exercises.ui import exercise_box, lesson_view
from pmapviz.features.tour import tourblocks, toursteps
from pmapviz.features.tour.ui import tour_nav, tour_step

shell.ensure_routed()

report = shell.device_report()
n = report.count
TITLES = toursteps.titles(report.facts)

step = tour_nav.step()
url_state.share_link("tour")

st.title("Guided tour")
lesson_view.bar(page_registry.PAGES)  # a workshop's lesson, replayed: where in it this is
tour_nav.show(step, TITLES)
st.header(f"{step}. {TITLES[step - 1]}")

ctx = tourblocks.Context(n, tuple(report.labels), report.facts, report.cpu_restart_command(4))
tour_step.show(tour_step.demo(step, ctx), report)
tour_step.actions(step, n)
exercise_box.show("tour", {"step": str(step)}, n)  # the step's exercise, judged against JAX
lesson_view.opener(page_registry.PAGES)
