"""A training run's result (``tr_hist``, a ``trainingrun.History``): divergence, the loss beside
one-device training, whether the replicas stayed identical, one step device by device, and
the time per step against the device count."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.devices import devicewords, jaxstartup
from pmapviz.core.drawing import gridhtml
from pmapviz.core.ui import grids, queue_display, recompute
from pmapviz.features.timing import sweepsetup, timecharts
from pmapviz.features.training import trainingmodel, trainingrun


def show(report: jaxstartup.DeviceReport) -> None:
    """The last run of this session, or what to press to get one."""
    hist = st.session_state.get("tr_hist")
    if hist is None:
        st.info(
            "Press Train. 100 steps of the linear model take about a second.",
            icon=":material/info:",
        )
        return
    hc = hist.config
    if hist.diverged_at is not None:
        st.error(
            f"**Training diverged at step {hist.diverged_at + 1}**: the loss became "
            f"{hist.losses[-1]:.3g} (NaN or infinite) with learning rate {hc.lr}. Each update "
            "overshot the minimum by more than the last, so the parameters grew without bound. "
            "Training stopped there. Lower the learning rate (try a tenth of it).",
            icon=":material/trending_up:",
        )
    st.plotly_chart(
        timecharts.loss_figure(
            hist.losses, hist.single_device_losses, hist.local_losses, report.labels
        ),
        key="tr_loss",
    )
    _verdict(hist)
    st.subheader(f"One step, device by device (step {len(hist.losses)})")
    grids.show(step_rows(hist, report.labels), trainingrun.step_label(hist))
    st.caption(
        "Local losses and gradient norms differ per device (different data); after the "
        "all-reduce every device holds the same gradient, so every replica stays identical. The "
        "replica difference is read from the parameters' per-device shards after every step."
    )
    _step_times(hc, report)


def _verdict(hist) -> None:
    """Steps, final loss, replica agreement and the match with one-device training."""
    hc = hist.config
    cols = st.columns(4)
    cols[0].metric("Steps", f"{len(hist.losses)}" + (" (stopped)" if hist.stopped else ""))
    cols[1].metric("Final loss", f"{hist.losses[-1]:.4g}")
    worst = max(hist.replica_diffs) if hist.replica_diffs else 0.0
    verdict = "identical at every step" if worst == 0 else "NOT identical"
    cols[2].metric("Max difference between replicas", f"{worst:.3g}", verdict, delta_color="off")
    if hist.max_param_diff is None:
        return
    cols[3].metric(
        "Data-parallel vs one device",
        f"{hist.max_param_diff:.3g}",
        "max |parameter difference|",
        delta_color="off",
    )
    if hist.max_param_diff == 0:
        st.success(
            "The data-parallel parameters equal the one-device parameters exactly.",
            icon=":material/check_circle:",
        )
    else:
        st.success(
            f"The data-parallel parameters match one-device training to "
            f"{hist.max_param_diff:.2g}, float32 rounding level. Not exactly zero because the "
            f"sums happen in a different order: one device sums all {hc.batch} examples' "
            f"gradients at once, while data-parallel sums {hc.local_batch} per device and then "
            f"averages {hc.devices} partial results, and float addition is not associative.",
            icon=":material/check_circle:",
        )


def step_rows(hist, labels: list[str]) -> gridhtml.Rows:
    """The last step as grid rows: each device's batch shard, local loss and gradient norm,
    the reduced gradient and whether the parameters agree."""
    hc = hist.config
    k, last = hc.devices, len(hist.losses) - 1
    return [
        ("device", [(labels[d], d, f"{labels[d]}: position {d}") for d in range(k)]),
        (
            "batch shard",
            [
                (
                    f"rows {d * hc.local_batch}-{(d + 1) * hc.local_batch - 1}",
                    d,
                    f"device {d} gets {hc.local_batch} of the {hc.batch} examples",
                )
                for d in range(k)
            ],
        ),
        (
            "local loss",
            [
                (f"{hist.local_losses[last][d]:.4g}", None, "loss on this shard only")
                for d in range(k)
            ],
        ),
        (
            "local |grad|",
            [
                (
                    f"{hist.local_grad_norms[last][d]:.4g}",
                    None,
                    "gradient norm before the all-reduce: different on every device",
                )
                for d in range(k)
            ],
        ),
        (
            f"after {hc.reduction}",
            [
                (
                    f"{hist.reduced_grad_norm[last]:.4g}",
                    d,
                    "gradient norm after the all-reduce: the same everywhere",
                )
                for d in range(k)
            ],
        ),
        (
            "parameters",
            [
                (
                    "identical"
                    if hist.replica_diffs[last] == 0
                    else f"differ {hist.replica_diffs[last]:.2g}",
                    d,
                    "each replica applies the same update",
                )
                for d in range(k)
            ],
        ),
    ]


def _step_times(hc: trainingmodel.Config, report: jaxstartup.DeviceReport) -> None:
    """Time per step for every device count that divides the batch (on request)."""
    st.subheader("Time per step versus devices")
    st.markdown(devicewords.step_time_story(report.facts, hc.batch))
    if st.button("Measure time per step", key="tr_time", icon=":material/timer:"):
        ks = [x for x in sweepsetup.device_counts(report.count) if hc.batch % x == 0]
        with recompute.working(f"Timing {len(ks)} device counts..."):
            st.session_state["tr_times"] = queue_display.queued(
                lambda on_wait: trainingrun.time_per_step(hc, ks, on_wait=on_wait)
            )
    times = st.session_state.get("tr_times")
    if times:
        st.plotly_chart(timecharts.step_time_figure(times), key="tr_times_chart")
