"""The seed's example at full size (a ``dotproduct.DotResult``): shapes, the checks, the
timings, each device's block and the two classic mistakes."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.ui import tables
from pmapviz.features.live import dotproduct


def show(res) -> None:
    """A finished run: shapes, the check, timings, each device's block, the two mistakes."""
    st.markdown(
        f"#### pmap output {fmt_shape(res.pmap_out_shape)} -> reshape -> "
        f"{fmt_shape(res.flat_shape)}"
    )
    cols = st.columns(4 if res.device_peak_bytes is None else 5)
    cols[0].metric(
        "max |pmap - vmap|",
        f"{res.max_abs_diff:.2g}",
        "equal" if res.allclose else "DIFFERENT",
        delta_color="off",
    )
    cols[1].metric("Compute (median)", f"{res.run_s * 1e3:,.1f} ms")
    cols[2].metric("jit(vmap) on 1 device", f"{res.vmap_run_s * 1e3:,.1f} ms")
    grew = "unknown" if res.host_growth_mb is None else f"{res.host_growth_mb:,.0f} MB"
    cols[3].metric(
        "Host memory (this run)",
        grew,
        help="How far the server's resident memory rose above its level when the "
        "run started, at its highest (sampled every 2 ms): the run's own host "
        "cost. What the JAX runtime mapped in at start-up (13 GB on a TPU, chip "
        "windows included) is not counted; runs of other sessions at the same time "
        "are.",
    )
    if res.device_peak_bytes is not None:
        cols[4].metric(
            "Device peak",
            f"{res.device_peak_bytes / 1e6:,.0f} MB",
            help="The highest peak_bytes_in_use of the devices since the server "
            "started, as the backend reports it (memory_stats).",
        )
    st.markdown(
        f"{res.pairs:,} pairs: compile {res.compile_s * 1e3:,.0f} ms, transfer to {res.devices} "
        f"devices {res.transfer_s * 1e3:,.1f} ms, compute {res.run_s * 1e3:,.1f} ms (median of "
        f"{len(res.run_s_all)}). Reshape ({res.devices}, {res.block:,}) -> ({res.pairs:,},): "
        + ("**the values equal jit(vmap(dot))**" if res.allclose else "**values differ**")
        + f" (max |diff| {res.max_abs_diff:.2g}); numpy per block: max |diff| "
        f"{res.numpy_max_abs_diff:.2g}."
    )
    st.caption(dotproduct.transfer_note(res))
    tables.static(res.per_device)
    _mistakes(res)
    st.caption(
        f"The same code path: `python -m pmapviz dot --pairs {res.pairs} --devices "
        f"{res.devices} --json`."
    )


def _mistakes(res) -> None:
    """The two classic mistakes: no reshape, and pmap without vmap."""
    with st.expander("If you forget the reshape", expanded=True):
        st.warning(res.forgot_reshape_message, icon=":material/school:")  # a lesson, not an error
        st.markdown(
            f"pmap maps over axis 0, which would have {res.pairs:,} entries: one per device. "
            f"JAX itself reports this with a cryptic error at the first call; pmapviz catches it "
            f"from the shapes alone. Reshape to ({res.devices}, {res.block:,}, 3) first."
        )
    with st.expander("If you pmap `dot` without `vmap`", expanded=True):
        st.warning(
            f"`jax.pmap(jnp.vdot)(x, y)` runs, but gives shape "
            f"{fmt_shape(res.without_vmap_shape)}: one number per device, the dot product of the "
            f"whole ({res.block:,}, 3) blocks flattened, i.e. the **sum** of that device's "
            f"{res.block:,} dot products"
            + (" (checked: it equals the block sums)." if res.without_vmap_is_block_sums else ".")
            + " Each device gets a block of pairs, so it needs `vmap` to compute one dot "
            "product per pair.",
            icon=":material/warning:",
        )
