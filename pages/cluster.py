"""Multi-process: a real jax.distributed cluster on this machine; local versus global devices."""

import streamlit as st

from pmapviz import cluster, devicefacts, ui

ui.ensure_routed()

P = "cl_"
st.title("Multi-process")
slot = ui.picture_slot()  # presenter mode: the cluster, first
st.markdown(
    "Across hosts, each process sees only its **local** devices, while collectives run over "
    "the **global** devices of every process. Here that runs for real on this machine: "
    "worker processes on 127.0.0.1 join with `jax.distributed.initialize`, each runs a pmap over "
    "its local devices, and `psum`, `all_gather` and `axis_index` span all of them (CPU "
    "collectives go through gloo)."
)
if note := devicefacts.workers_note(ui.device_report().facts):
    st.info(note, icon=":material/info:")

schema = cluster.schema()
ui.load_url_settings(P, schema)

with st.container(border=True):
    c1, c2, c3 = st.columns([1, 1, 2])
    c1.selectbox("Processes", [str(v) for v in range(2, cluster.MAX_PROCESSES + 1)], key=P + "p")
    c2.selectbox("CPU devices per process", [str(v) for v in range(1, cluster.MAX_LOCAL + 1)],
                 key=P + "d")  # fmt: skip
    crash = c3.checkbox("Kill worker 1 right after launch (to see how a failure is handled)",
                        key=P + "crash")  # fmt: skip
ui.save_url_settings(P, ["p", "d"])
ui.share_link("cluster")
v = ui.parsed(P, schema)
procs, local = int(v["p"]), int(v["d"])
with ui.picture(slot):
    ui.grid(*cluster.plan_grid(procs, local))
st.code(cluster.worker_code(procs, local), language="python")


def _kill_worker_1(workers):
    import os
    import signal
    import time

    time.sleep(0.3)
    os.kill(workers[1].pid, signal.SIGKILL)


if st.button(f"Launch {procs} processes x {local} devices", type="primary",
             icon=":material/rocket_launch:", key="cl_go"):  # fmt: skip
    on_wait, clear_wait = ui.queue_display(stop_key="cl_stop")
    with st.spinner(f"Starting {procs} workers (waits its turn if another launch is under way)..."):
        try:
            st.session_state["cl_result"] = cluster.launch(
                procs, local, timeout=30, fault=_kill_worker_1 if crash else None,
                on_wait=on_wait,
            )  # fmt: skip
            st.session_state.pop("cl_error", None)
        except (cluster.ClusterError, ValueError, OSError) as err:
            st.session_state.pop("cl_result", None)
            st.session_state["cl_error"] = (str(err), getattr(err, "details", {}))
    clear_wait()

if "cl_error" in st.session_state:
    msg, details = st.session_state["cl_error"]
    st.error(f"**The cluster failed**: {msg}", icon=":material/error:")
    st.markdown("Every worker was stopped and no process was left behind; the dashboard "
                "keeps serving. What each worker printed last:")  # fmt: skip
    for i, lines in details.items():
        st.code(f"worker {i}:\n" + "\n".join(lines[-6:] or ["(no output)"]), language="text")

res = st.session_state.get("cl_result")
if res is not None:
    g = res.global_devices
    st.subheader(f"{res.processes} processes x {res.local_devices} devices = {g} global devices")
    rows = []
    for pp in res.per_process:
        cells = []
        for j, (dev_id, idx) in enumerate(zip(pp["local_device_ids"], pp["axis_index"],
                                              strict=True)):  # fmt: skip
            label = ui.titled(f"id {dev_id}", f"axis_index {idx} · x={pp['local_inputs'][j]:g}")
            tip = f"process {pp['process_index']}, local device {j}, global device id {dev_id}"
            cells.append((label, idx, tip))
        rows.append((f"process {pp['process_index']}", cells))
    ui.grid(rows, cluster.picture_label(res))
    st.caption(
        "Each row is one process and its local devices; the colour is the device's position on "
        "the global axis (its axis_index). Device ids come from JAX: process i's devices are "
        "numbered from i x 2048 on CPU."
    )

    check = cluster.check_result(res)
    table = [
        {"process": pp["process_index"], "local devices": str(pp["local_device_ids"]),
         "sees global devices": pp["global_devices"], "local x": str(pp["local_inputs"]),
         "psum": pp["psum"], "all_gather": str(pp["all_gather"]),
         "init (s)": round(pp["init_s"], 3),
         "first call (ms)": round(pp["first_call_s"] * 1e3, 1),
         "steady call (ms)": round(pp["steady_s"] * 1e3, 3)}
        for pp in res.per_process
    ]  # fmt: skip
    ui.dataframe(table)
    (st.success if check.ok else st.error)(
        f"psum = {res.per_process[0]['psum']:g} and all_gather = 1..{g} in **every** process"
        + (f", equal to numpy (sum 1..{g} = {check.expect_sum:g})." if check.correct
           else ": WRONG.") + ("" if check.identical else " The processes DISAGREE."),
        icon=":material/check_circle:" if check.ok else ":material/error:",
    )  # fmt: skip
    single = res.single_process
    if single:
        init, steady = check.init_s, check.steady_s
        st.markdown(
            f"**Timings.** Joining the cluster took {init:.2f} s. A steady call of the same pmap: "
            f"{steady * 1e3:.2f} ms across {res.processes} processes, versus "
            f"{single['steady_s'] * 1e3:.2f} ms in one process with all {g} devices (first "
            f"call {single['first_call_s'] * 1e3:.0f} ms). Across processes, every collective "
            "goes through gloo over the loopback network."
        )

st.subheader("On real clusters")
st.markdown(
    """
- **A multi-GPU host:** one process usually drives all its GPUs; no `jax.distributed` needed.
  `jax.devices()` lists them and `pmap` spans them. To run one process per GPU instead, give each
  `local_device_ids=[i]` in `jax.distributed.initialize`.
- **A TPU pod slice:** run the same program on every host (e.g. `gcloud compute tpus tpu-vm ssh
  NAME --worker=all --command="python train.py"`); `jax.distributed.initialize()` with no
  arguments detects the coordinator and process ids.
- **SLURM:** `srun --nodes=4 --ntasks-per-node=1 python train.py`, and in the script
  `jax.distributed.initialize()` with no arguments reads the SLURM environment. Each process
  feeds its local devices (`jax.local_devices()`); collectives span `jax.devices()`.
- **Everywhere:** pass each process only its own shard of the data (`jax.process_index()`), and
  expect a process whose peers never arrive to abort after `initialization_timeout` seconds.
"""
)
