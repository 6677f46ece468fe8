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
    if res.forgot_reshape_message:
        with st.expander("If you forget the reshape", expanded=True):
            _forgot_reshape(res)
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


def _forgot_reshape(res) -> None:
    """pmapviz's explanation of the un-reshaped call, its fix, then JAX's own words for it
    (collapsed, verbatim: read from a real lowering of that call on these devices)."""
    st.warning(res.forgot_reshape_message, icon=":material/school:")  # a lesson, not an error
    devices = f"{res.devices} device" + ("s" if res.devices != 1 else "")
    said = res.forgot_reshape_jax
    st.markdown(
        f"pmap maps over axis 0 and gives each device one entry of it, so on {devices} axis 0 "
        f"may have at most {res.devices} entr{'y' if res.devices == 1 else 'ies'}; not "
        f"reshaped, x has {res.pairs:,}. Reshape to ({res.devices}, {res.block:,}, 3) first. "
        "pmapviz catches it from the shapes alone"
        + (
            "; JAX itself refuses the call at its first call, with the error below, which "
            "does not say what to change."
            if said
            else "."
        )
    )
    if not said:
        return
    name = said.partition(": ")[0].rpartition(".")[2]
    with st.expander(f"What JAX itself says: {name}", icon=":material/terminal:"):
        st.caption(
            f"`jax.pmap(jax.vmap(jnp.dot))(x, y)` with x and y of shape ({res.pairs:,}, 3), not "
            f"reshaped, on {devices}: read from a real lowering of that call (no data made). "
            "A traceback ends with this line:"
        )
        st.code(said, language=None, wrap_lines=True)
