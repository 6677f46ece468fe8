"""A live run of the explorer's settings (a ``pmaprun.LiveResult``): the verdict against
jit(vmap(f)) and numpy, compile / transfer / compute, the reshape back, each device's blocks."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.devices import devicewords, jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.scenarios import has_numpy_version
from pmapviz.core.ui import tables


def show(res, plan: Plan, program: Program, report: jaxstartup.DeviceReport) -> None:
    """A live run: the verdict, the timings, the reshape back and each device's blocks."""
    verdict = "PASS" if res.passed else "FAIL"
    st.markdown(f"#### pmap output {fmt_shape(res.out_shape)}")
    cols = st.columns(5)
    cols[0].metric(
        "vs jit(vmap(f))", verdict, f"max |diff| {res.max_abs_diff:.2g}", delta_color="off"
    )
    cols[1].metric("Compile (trace + XLA)", f"{res.compile_s * 1e3:,.0f} ms")
    cols[2].metric("Transfer to devices", f"{res.transfer_s * 1e3:,.1f} ms")
    cols[3].metric("Compute (median)", f"{res.run_s * 1e3:,.2f} ms")
    cols[4].metric("jit(vmap) on 1 device", f"{res.reference_run_s * 1e3:,.2f} ms")
    tol = "exact" if res.rtol == 0 else f"rtol {res.rtol:g}"
    detail = (
        f"max |pmap - vmap| = {res.max_abs_diff:.3g}, max relative {res.max_rel_diff:.3g} ({tol})"
    )
    if res.numpy_max_abs_diff is not None:
        detail += f"; max |pmap - numpy| = {res.numpy_max_abs_diff:.3g}"
    elif not has_numpy_version(program):
        detail += "; there is no numpy version of this f, so jit(vmap(f)) is the only check"
    (st.success if res.passed else st.error)(
        f"**{verdict}**: pmap's result matches jit(vmap(f)) on one device. {detail}."
        if res.passed
        else f"**{verdict}**: pmap and jit(vmap(f)) differ. {detail}.",
        icon=":material/check_circle:" if res.passed else ":material/error:",
    )
    if res.reshape_back:
        a, b = res.reshape_back
        same = "the values match" if res.flat_equal else "the values DIFFER"
        st.markdown(
            f"**Reshape back:** `out.reshape{fmt_shape(b)}`: {fmt_shape(a)} -> "
            f"{fmt_shape(b)}; compared with jit(vmap(f)) reshaped the same way, "
            f"{same}."
        )
    st.caption(
        "Compile and transfer are measured once; compute is the median of 5 runs with "
        "inputs already placed, after a warm-up, timed with block_until_ready. "
        + devicewords.speed_caveat(report.facts, plan.devices_used)
    )

    st.subheader("Per device")
    tables.show(res.rows)
