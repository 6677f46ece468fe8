"""Guided tour: the seed's path through pmap in ten steps, each with a small live demo on this
server's devices and a link that opens the full page with the same settings."""

import streamlit as st

from pmapviz import benchmarking, cluster, tour, turns, ui

ui.ensure_routed()

report = ui.device_report()
n = report.count
STEPS = tour.STEPS
TITLES = tour.titles(report.facts)

if st.session_state.get("tour_step") is None:
    texts, notes = tour.schema().from_query(dict(st.query_params))
    st.session_state["tour_step"] = int(texts["step"])
    st.session_state["_tour_notes"] = notes
ui.link_notes(st.session_state.get("_tour_notes", []))


def _go(step: int) -> None:
    st.session_state["tour_step"] = max(1, min(len(STEPS), step))


step = st.session_state["tour_step"]
ui.set_url({"step": str(step)})
ui.share_link("tour")

st.title("Guided tour")
st.progress(step / len(STEPS), text=f"Step {step} of {len(STEPS)}: {TITLES[step - 1]}")
nav = st.columns([1, 4, 1])
nav[0].button("Previous", on_click=_go, args=(step - 1,), disabled=step == 1,
              icon=":material/arrow_back:", key="tour_prev", width="stretch")  # fmt: skip
nav[1].selectbox("Jump to step", list(range(1, len(STEPS) + 1)), index=step - 1,
                 format_func=lambda k: f"{k}. {TITLES[k - 1]}", key="tour_jump",
                 on_change=lambda: _go(st.session_state["tour_jump"]),
                 label_visibility="collapsed")  # fmt: skip
nav[2].button("Next", on_click=_go, args=(step + 1,), disabled=step == len(STEPS),
              icon=":material/arrow_forward:", key="tour_next", width="stretch")  # fmt: skip
st.header(f"{step}. {TITLES[step - 1]}")


@st.cache_data(max_entries=32, show_spinner=False)
def _demo(step: int, ctx: tour.Context) -> list[tour.Block]:
    return STEPS[step - 1].demo(ctx)


ctx = tour.Context(n, tuple(report.labels), report.facts, report.cpu_restart_command(4))
ui.render_blocks(_demo(step, ctx), report)

if step == 8 and st.button("Launch 2 processes", key="tour_cluster",
                           icon=":material/rocket_launch:"):  # fmt: skip
    on_wait, clear_wait = ui.queue_display(stop_key="tour_stop_cluster")
    try:
        rows = tour.launch_two_processes(on_wait=on_wait)
        clear_wait()
        ui.dataframe(rows)
    except (cluster.ClusterError, OSError) as err:
        clear_wait()
        st.error(str(err), icon=":material/error:")
if step == 9 and st.button("Time x * 2 + 1 on 1 and on all devices", key="tour_time",
                           icon=":material/timer:"):  # fmt: skip
    on_wait, clear_wait = ui.queue_display(stop_key="tour_stop_time")
    try:
        rows = tour.time_one_and_all(n, on_wait=on_wait)
        clear_wait()
        ui.dataframe(rows)
    except (benchmarking.BenchError, turns.WaitTimeout, turns.Cancelled) as err:
        clear_wait()
        st.error(str(err), icon=":material/block:")
