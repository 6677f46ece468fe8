"""A data-parallel training run: its settings (widgets ``tr_`` + the URL key, and the link),
the checked ``trainingmodel.Config``, and the run with its states: training (a progress bar, the
loss drawn live, Stop), stopped (the steps it finished are kept), done (``tr_hist``); and, with
a TPU slice picked (``?pod=v5e:4x4``, or several: ``?pod=2 x v5e:4x4``), one step of it compiled
for the slice (nothing runs)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from pmapviz.core.pods import podprograms, podtarget, podtopology, tpuchips
from pmapviz.core.ui import pod_report, queue_display, recompute, url_state
from pmapviz.core.ui.long_run import LongRun
from pmapviz.features.timing import timecharts
from pmapviz.features.training import traininganalysis, trainingmodel, trainingrun

P = "tr_"
MODEL_LABELS = {"linear": "Linear regression", "mlp": "Two-layer MLP classifier"}
REDUCTION_LABELS = {"pmean": "pmean", "psum": "psum / k"}


def form(n: int) -> None:
    """The training settings, seeded from the link and written back to it."""
    schema = trainingmodel.schema(n)
    url_state.load(P, schema)
    with st.container(border=True):
        c = st.columns([2, 1, 1, 1, 1, 1])
        c[0].selectbox(
            "Model", trainingmodel.MODELS, key=P + "model", format_func=lambda m: MODEL_LABELS[m]
        )
        c[1].selectbox("Devices", [str(k) for k in range(1, n + 1)], key=P + "k")
        c[2].text_input("Global batch", key=P + "batch", max_chars=8)
        c[3].text_input("Steps", key=P + "steps", max_chars=6)
        c[4].text_input("Learning rate", key=P + "lr", max_chars=12)
        c[5].radio(
            "Reduction",
            trainingmodel.REDUCTIONS,
            key=P + "red",
            format_func=lambda r: REDUCTION_LABELS[r],
        )
        with st.columns([4, 2])[0]:
            pod_report.target_picker(P + podtarget.KEY, more=podtarget.MULTISLICE)
    here = not st.session_state[P + podtarget.KEY]  # this machine: no pod= in the link
    url_state.save(P, schema, [f.key for f in schema.fields if f.key != podtarget.KEY or not here])


def config(n: int) -> trainingmodel.Config:
    """The settings, parsed and checked against the devices and the memory budget; on a
    problem, the page says it and stops."""
    v = url_state.parsed(P, trainingmodel.schema(n))
    cfg = trainingmodel.Config(v["model"], int(v["k"]), v["batch"], v["steps"], v["lr"], v["red"])
    try:
        trainingmodel.validate(cfg, n)
        trainingmodel.check_budget(cfg)
    except trainingmodel.TrainError as err:
        st.error(str(err), icon=":material/block:")
        st.stop()
    return cfg


def on_slice(cfg: trainingmodel.Config, n: int) -> None:
    """With a TPU slice picked: one training step of ``cfg`` on every device of the slice, each
    with cfg's local batch, compiled for it by libtpu (nothing runs, nothing is trained)."""
    topology = url_state.parsed(P, trainingmodel.schema(n), [podtarget.KEY])[podtarget.KEY]
    if not topology:
        return
    slices = tpuchips.parse_topology(topology, multislice=True).slices
    st.subheader("One step on a TPU slice" if slices == 1 else f"One step on {slices} TPU slices")
    if pod_report.unavailable():
        return
    try:
        k = podtopology.load(topology, multislice=True).n_devices
    except podtopology.PodUnavailable as err:
        st.error(str(err), icon=":material/block:")
        return
    on_pod = replace(cfg, devices=k, batch=cfg.local_batch * k)
    st.markdown(
        f"This step with `devices={k}`: each device keeps its {cfg.local_batch} examples "
        f"(a global batch of {on_pod.batch:,}) and a copy of the parameters, and the gradients "
        f"are all-reduced over all {k}. " + podtarget.pmap_words(topology) + " Nothing is trained."
    )
    key = f"tr:{on_pod.model}:{on_pod.reduction}:{on_pod.lr!r}:{on_pod.devices}:{on_pod.batch}"
    target = traininganalysis.training_target(on_pod)
    compiled = pod_report.compile_report(podprograms.from_target(target, key), topology)
    if compiled is not None:
        pod_report.show(compiled, "tr_pod")


TRAINING = LongRun(
    "tr_",
    "tr_hist",
    "stopped",
    "Training was stopped; the steps it finished are kept below.",
    ":material/stop_circle:",
)


def run(cfg: trainingmodel.Config) -> None:
    """The Train button, and what a stopped run left (Stop, or any rerun)."""
    TRAINING.recover()
    if st.button(
        f"Train {cfg.steps} steps on {cfg.devices} device(s)",
        type="primary",
        icon=":material/model_training:",
        key="tr_go",
    ):
        _train(cfg)


def _train(cfg: trainingmodel.Config) -> None:
    """Train here: a progress bar, the loss every ten steps, a Stop button (a click reruns
    the page, which stops it)."""
    stop_slot = st.empty()
    stop_slot.button("Stop", icon=":material/stop:", key="tr_stop")
    bar = st.progress(0.0, text="Compiling the training step")
    live = st.empty()
    TRAINING.start()

    def _progress(hist, step):
        TRAINING.keep(hist)
        same = hist.replica_diffs[-1] == 0
        bar.progress(
            (step + 1) / cfg.steps,
            text=f"step {step + 1}/{cfg.steps}: loss "
            f"{hist.losses[-1]:.4g}; replicas identical: {same}",
        )
        if step % 10 == 0 or step + 1 == cfg.steps:
            live.plotly_chart(
                timecharts.loss_figure(hist.losses, hist.single_device_losses, []),
                key=f"tr_live_{step}",
            )

    with recompute.working(f"Training {cfg.steps} steps on {cfg.devices} device(s)..."):
        hist = queue_display.queued(
            lambda on_wait: trainingrun.train(cfg, progress=_progress, on_wait=on_wait)
        )
    TRAINING.finish(hist)
    stop_slot.empty()
    bar.empty()
    live.empty()
