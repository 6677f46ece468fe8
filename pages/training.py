"""Data-parallel training: sharded batches, replicated parameters, gradients all-reduced."""

import streamlit as st

from pmapviz import benchmarking, devicefacts, timecharts, training, ui

ui.ensure_routed()

report = ui.device_report()
n = report.count
P = "tr_"

st.title("Data-parallel training")
slot = ui.picture_slot()  # presenter mode: how the batch and the parameters are split, first
st.markdown(
    "Each device receives **a shard of the batch** and **a copy of the parameters**, computes "
    "its own gradients, and a collective (`lax.pmean`, or `lax.psum` then divide) makes the "
    "gradients equal everywhere, so every device applies **the same update**. Below, that is "
    "checked at every step, and the result is compared with training on one device."
)

schema = training.schema(n)
ui.load_url_settings(P, schema)

with st.container(border=True):
    c = st.columns([2, 1, 1, 1, 1, 1])
    c[0].selectbox("Model", training.MODELS, key=P + "model",
                   format_func=lambda m: {"linear": "Linear regression",
                                          "mlp": "Two-layer MLP classifier"}[m])  # fmt: skip
    c[1].selectbox("Devices", [str(k) for k in range(1, n + 1)], key=P + "k")
    c[2].text_input("Global batch", key=P + "batch", max_chars=8)
    c[3].text_input("Steps", key=P + "steps", max_chars=6)
    c[4].text_input("Learning rate", key=P + "lr", max_chars=12)
    c[5].radio("Reduction", training.REDUCTIONS, key=P + "red",
               format_func=lambda r: {"pmean": "pmean", "psum": "psum / k"}[r])  # fmt: skip
ui.save_url_settings(P, ["model", "k", "batch", "steps", "lr", "red"])
ui.share_link("training")


v = ui.parsed(P, schema)
cfg = training.Config(v["model"], int(v["k"]), v["batch"], v["steps"], v["lr"], v["red"])
try:
    training.validate(cfg, n)
    training.check_budget(cfg)
except training.TrainError as err:
    st.error(str(err), icon=":material/block:")
    st.stop()
with ui.picture(slot):
    ui.grid(*training.setup_grid(cfg, report.labels))

with st.expander("The pmap training step for these settings", expanded=False):
    st.code(training.code_for(cfg), language="python")

if st.session_state.get("tr_running"):  # the last run was interrupted by Stop (or a rerun)
    st.session_state["tr_running"] = False
    partial = st.session_state.get("tr_partial")
    if partial is not None:
        partial.stopped = True
        st.session_state["tr_hist"] = partial
    st.warning("Training was stopped; the steps it finished are kept below.",
               icon=":material/stop_circle:")  # fmt: skip

if st.button(f"Train {cfg.steps} steps on {cfg.devices} device(s)", type="primary",
             icon=":material/model_training:", key="tr_go"):  # fmt: skip
    stop_slot = st.empty()
    stop_slot.button("Stop", icon=":material/stop:", key="tr_stop")  # a click reruns: stops it
    bar = st.progress(0.0, text="Compiling the training step")
    live = st.empty()
    st.session_state["tr_running"] = True

    def _progress(hist, step):
        st.session_state["tr_partial"] = hist
        same = hist.replica_diffs[-1] == 0
        bar.progress((step + 1) / cfg.steps, text=f"step {step + 1}/{cfg.steps}: loss "
                     f"{hist.losses[-1]:.4g}; replicas identical: {same}")  # fmt: skip
        if step % 10 == 0 or step + 1 == cfg.steps:
            live.plotly_chart(timecharts.loss_figure(hist.losses, hist.single_device_losses, []),
                              key=f"tr_live_{step}")  # fmt: skip

    hist = ui.queued(lambda on_wait: training.train(cfg, progress=_progress, on_wait=on_wait))
    st.session_state["tr_running"] = False
    if hist is not None:
        st.session_state["tr_hist"] = hist
    stop_slot.empty()
    bar.empty()
    live.empty()

hist = st.session_state.get("tr_hist")
if hist is None:
    st.info("Press Train. 100 steps of the linear model take about a second.",
            icon=":material/info:")  # fmt: skip
    st.stop()

hc = hist.config
if hist.diverged_at is not None:
    st.error(
        f"**Training diverged at step {hist.diverged_at + 1}**: the loss became "
        f"{hist.losses[-1]:.3g} (NaN or infinite) with learning rate {hc.lr}. Each update "
        "overshot the minimum by more than the last, so the parameters grew without bound. "
        "Training stopped there. Lower the learning rate (try a tenth of it).",
        icon=":material/trending_up:",
    )
st.plotly_chart(timecharts.loss_figure(hist.losses, hist.single_device_losses, hist.local_losses,
                                        report.labels),
                key="tr_loss")  # fmt: skip

steps_done = len(hist.losses)
cols = st.columns(4)
cols[0].metric("Steps", f"{steps_done}" + (" (stopped)" if hist.stopped else ""))
cols[1].metric("Final loss", f"{hist.losses[-1]:.4g}")
worst = max(hist.replica_diffs) if hist.replica_diffs else 0.0
verdict = "identical at every step" if worst == 0 else "NOT identical"
cols[2].metric("Max difference between replicas", f"{worst:.3g}", verdict, delta_color="off")
if hist.max_param_diff is not None:
    cols[3].metric("Data-parallel vs one device", f"{hist.max_param_diff:.3g}",
                   "max |parameter difference|", delta_color="off")  # fmt: skip
if hist.max_param_diff is not None:
    if hist.max_param_diff == 0:
        st.success("The data-parallel parameters equal the one-device parameters exactly.",
                   icon=":material/check_circle:")  # fmt: skip
    else:
        st.success(
            f"The data-parallel parameters match one-device training to "
            f"{hist.max_param_diff:.2g}, float32 rounding level. Not exactly zero because the "
            f"sums happen in a different order: one device sums all {hc.batch} examples' "
            f"gradients at once, while data-parallel sums {hc.local_batch} per device and then "
            f"averages {hc.devices} partial results, and float addition is not associative.",
            icon=":material/check_circle:",
        )

st.subheader(f"One step, device by device (step {steps_done})")
k, last = hc.devices, steps_done - 1
rows = [
    ("device", [(report.labels[d], d, f"{report.labels[d]}: position {d}") for d in range(k)]),
    ("batch shard", [(f"rows {d * hc.local_batch}-{(d + 1) * hc.local_batch - 1}", d,
                      f"device {d} gets {hc.local_batch} of the {hc.batch} examples")
                     for d in range(k)]),
    ("local loss", [(f"{hist.local_losses[last][d]:.4g}", None, "loss on this shard only")
                    for d in range(k)]),
    ("local |grad|", [(f"{hist.local_grad_norms[last][d]:.4g}", None,
                       "gradient norm before the all-reduce: different on every device")
                      for d in range(k)]),
    (f"after {hc.reduction}", [(f"{hist.reduced_grad_norm[last]:.4g}", d,
                                "gradient norm after the all-reduce: the same everywhere")
                               for d in range(k)]),
    ("parameters", [("identical" if hist.replica_diffs[last] == 0 else
                     f"differ {hist.replica_diffs[last]:.2g}", d,
                     "each replica applies the same update") for d in range(k)]),
]  # fmt: skip
ui.grid(rows, training.step_label(hist))
st.caption(
    "Local losses and gradient norms differ per device (different data); after the all-reduce "
    "every device holds the same gradient, so every replica stays identical. The replica "
    "difference is read from the parameters' per-device shards after every step."
)

st.subheader("Time per step versus devices")
st.markdown(devicefacts.step_time_story(report.facts, hc.batch))
if st.button("Measure time per step", key="tr_time", icon=":material/timer:"):
    ks = [x for x in benchmarking.device_counts(n) if hc.batch % x == 0]
    with st.spinner(f"Timing {len(ks)} device counts..."):
        st.session_state["tr_times"] = ui.queued(
            lambda on_wait: training.time_per_step(hc, ks, on_wait=on_wait)
        )
times = st.session_state.get("tr_times")
if times:
    st.plotly_chart(timecharts.step_time_figure(times), key="tr_times_chart")
