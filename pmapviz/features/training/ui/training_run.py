"""A data-parallel training run: its settings (widgets ``tr_`` + the URL key, and the link),
the checked ``trainingmodel.Config``, and the run with its states: training (a progress bar, the
loss drawn live, Stop), stopped (the steps it finished are kept), done (``tr_hist``)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import queue_display, url_state
from pmapviz.core.ui.long_run import LongRun
from pmapviz.features.timing import timecharts
from pmapviz.features.training import trainingmodel, trainingrun

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
    url_state.save(P, schema)


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

    hist = queue_display.queued(
        lambda on_wait: trainingrun.train(cfg, progress=_progress, on_wait=on_wait)
    )
    TRAINING.finish(hist)
    stop_slot.empty()
    bar.empty()
    live.empty()
