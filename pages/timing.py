"""Timing lab: pmap vs jit(vmap), jit + NamedSharding, shard_map and numpy; compile, transfer
and compute separated; speed-up, scaling with size, spread, and the measured physical floor."""

import csv
import io
import json

import streamlit as st

from pmapviz import benchmarking as bench
from pmapviz import devicefacts, memory, programs, scenario, settings, timecharts, turns, ui

ui.ensure_routed()

report = ui.device_report()
n = report.count
P = "tl_"

st.title("Timing lab")
slot = ui.picture_slot()  # presenter mode: what the sweep measures, first
st.markdown(devicefacts.speed_story(report.facts, n) + " Everything below is measured, not "
            "modelled.")  # fmt: skip
budget = memory.budget()

ks_all = bench.device_counts(n)
schema = bench.schema(n, st.query_params.get("w", "dot"))
ui.load_url_settings(P, schema)
if P + "sizes" in st.session_state:  # the link's sizes belong to the link's workload
    st.session_state[P + "sizes_" + st.session_state[P + "w"]] = st.session_state.pop(P + "sizes")

with st.container(border=True):
    c1, c2 = st.columns([2, 1])
    c1.selectbox("Workload", list(bench.WORKLOADS), key=P + "w",
                 format_func=lambda k: bench.WORKLOADS[k].label)  # fmt: skip
    c2.selectbox("Timed runs per measurement", [str(r) for r in range(3, 31)], key=P + "r")
    wl = bench.WORKLOADS[st.session_state[P + "w"]]
    st.caption(wl.description)
    choices = bench.size_choices(wl.key, ks_all)
    sizes = st.multiselect(f"Sizes ({wl.unit})", choices, format_func=lambda s: f"{s:,}",
                           default=None if P + "sizes_" + wl.key in st.session_state
                           else choices[:4], key=P + "sizes_" + wl.key)  # fmt: skip
    c3, c4 = st.columns(2)
    ks = c3.multiselect("Device counts", ks_all, key=P + "ks")
    impls = c4.multiselect("Implementations", bench.IMPLS, key=P + "impls")
ui.set_url({"w": st.session_state[P + "w"], "r": st.session_state[P + "r"],
            "sizes": ",".join(map(str, sizes)), "ks": ",".join(map(str, ks)),
            "impls": ",".join(impls)})  # fmt: skip
ui.share_link("timing")
repeat = ui.parsed(P, schema, ["r"])["r"]

try:
    runs = bench.plan_sweep(wl, sorted(sizes), sorted(ks), impls, budget, repeat=repeat)
except bench.BenchError as err:
    st.error(str(err), icon=":material/block:")
    runs = []
if runs:
    with ui.picture(slot):
        ui.grid(*bench.sweep_grid(runs))

if st.session_state.get("tl_running"):  # the last sweep was interrupted (Cancel, or a rerun)
    st.session_state["tl_running"] = False
    partial = st.session_state.get("tl_partial")
    if partial is not None:
        partial.cancelled = True
        st.session_state["tl_report"] = partial
    st.warning("The last sweep was cancelled; the measurements it finished are kept below.",
               icon=":material/cancel:")  # fmt: skip

go = st.button(f"Run {len(runs)} measurements", type="primary", icon=":material/timer:",
               disabled=not runs, key="tl_go")  # fmt: skip
if go and runs:
    cancel_slot = st.empty()  # any click reruns the page, which stops the sweep
    cancel_slot.button("Cancel", icon=":material/stop:", key="tl_cancel")
    bar = st.progress(0.0, text="Waiting for the benchmark's turn")
    on_wait, clear_wait = ui.queue_display()  # Cancel above also stops a wait
    partial = bench.Report({}, 0.0, wl.key)
    st.session_state["tl_running"] = True
    st.session_state["tl_partial"] = partial

    def _progress(m, i, total):
        partial.results.append(m)
        bar.progress(i / total, text=f"{i}/{total}: {m.impl} on {m.devices} device(s), "
                     f"size {m.size:,}: {m.run_s_median * 1e3:.2f} ms")  # fmt: skip

    try:
        result = bench.sweep(
            wl, sorted(sizes), sorted(ks), impls, repeat=repeat,
            budget=budget, progress=_progress, on_wait=on_wait,
        )  # fmt: skip
    except (turns.WaitTimeout, bench.BenchError) as err:
        result = None
        st.error(str(err), icon=":material/hourglass_disabled:")
    clear_wait()
    cancel_slot.empty()
    st.session_state["tl_running"] = False
    if result is not None:
        st.session_state["tl_report"] = result
    bar.progress(1.0, text="Done")

with st.expander("Time the explorer's current settings"):
    explored = ui.explorer_scenario(n)
    program, plan, errors = explored.plan(n)
    if elsewhere := explored.plans_elsewhere(n):
        st.caption(f"The explorer plans for {elsewhere:,} devices; timing uses this server's "
                   f"{n} devices.")  # fmt: skip
    if errors or plan is None or not plan.ok:
        st.warning("The explorer's settings are not valid yet: fix them on the Shapes & "
                   "sharding page first.", icon=":material/grid_view:")  # fmt: skip
    elif why := programs.not_runnable(plan):
        st.info(why, icon=":material/info:")
    else:
        args = ", ".join(f"{a} {settings.fmt_shape(s)}"
                         for a, s in zip(plan.arg_names, plan.arg_shapes, strict=True))  # fmt: skip
        vs_numpy = (" vs numpy" if scenario.has_numpy_version(program)
                    else " (this f has no numpy version)")  # fmt: skip
        shown = settings.quote(program.body(plan.axis_name), 200)
        st.markdown(f"f = {shown} on {args}: pmap on {plan.devices_used} device(s) vs "
                    f"jit(vmap(f)) on one{vs_numpy}.")  # fmt: skip
        if too_big := budget.problem(memory.plan_timing_bytes(plan)):
            st.error(f"Timing these settings {too_big}.", icon=":material/memory:")
        elif st.button("Time the explorer's settings", key="tl_explorer"):
            on_wait, clear_wait = ui.queue_display(stop_key="tl_explorer_stop")
            with st.spinner("Timing (waits its turn if another benchmark is running)..."):
                try:
                    st.session_state["tl_report"] = bench.measure_plan(
                        program, plan, repeat=repeat, on_wait=on_wait
                    )
                except (turns.WaitTimeout, bench.BenchError) as err:
                    st.error(str(err), icon=":material/hourglass_disabled:")
            clear_wait()

rep = st.session_state.get("tl_report")
if rep is None:
    st.info("Choose what to compare and press Run. A sweep of the defaults takes a few seconds.",
            icon=":material/info:")  # fmt: skip
    st.stop()
if not rep.results:
    st.warning("No measurements yet.")
    st.stop()

rows = bench.rows_for_table(rep)
wl_done = bench.WORKLOADS.get(rep.workload, bench.PLAN_WORKLOAD)
largest = max(r["size"] for r in rows)
st.subheader(f"Results: {wl_done.label}")
st.caption(bench.floor_caption(rep))
at_largest = [r for r in rows if r["size"] == largest]
st.plotly_chart(timecharts.breakdown_figure(at_largest), key="tl_breakdown")
sp = [r for r in bench.speedups(rep.results) if r["size"] == largest]
if sp:
    st.plotly_chart(timecharts.speedup_figure(sp), key="tl_speedup")
else:
    st.info("Speed-up needs jit(vmap) (the one-device baseline) and a parallel "
            "implementation in the sweep.")  # fmt: skip
floors = {r["size"]: r["floor_s"] for r in rows}
st.plotly_chart(timecharts.scaling_figure(rows, floors), key="tl_scaling")
st.plotly_chart(timecharts.spread_figure([m for m in rep.results if m.size == largest]),
                key="tl_spread")  # fmt: skip

best = min(at_largest, key=lambda r: r["run_s_median"])
floor = at_largest[0]["floor_s"]
st.markdown(
    f"At size {largest:,}, the fastest is **{best['impl']} on {best['devices']} device(s)**: "
    f"{best['run_s_median'] * 1e3:.2f} ms, {best['run_s_median'] / floor:.1f}x the memory floor "
    f"of {floor * 1e3:.2f} ms."
)
ui.dataframe(rows)

buf = io.StringIO()
writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
writer.writeheader()
writer.writerows(rows)
d1, d2 = st.columns(2)
d1.download_button("Download CSV", buf.getvalue(), f"pmapviz-{rep.workload}.csv", "text/csv",
                   icon=":material/download:")  # fmt: skip
d2.download_button("Download JSON (with machine info)", json.dumps(rep.to_json(), indent=2),
                   f"pmapviz-{rep.workload}.json", "application/json",
                   icon=":material/download:")  # fmt: skip
st.caption(
    "Same harness from a script: `python -m pmapviz bench --workload dot --size 1048576 "
    f"--devices {','.join(map(str, ks_all))} --repeat 7 --json out.json`."
)
