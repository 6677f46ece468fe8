"""pmap as JAX runs it, and jax.smap beside it: the explorer's section after "Open as
shard_map", drawn only while it is open (so an edit of the explorer costs one closed expander).

Open, it shows pmap's pipeline read from its jaxpr (a row of boxes), the same settings as a
``jax.smap`` call with its own settings (mesh size, axis type, and the three things a call can
leave out), smap's pipeline or its refusal (the plain words, JAX's own folded after them, and a
button that applies the fix), and a run of smap beside pmap and jit(vmap) on the same values:
each device's block beside pmap's slice, and the element-by-element check."""

from __future__ import annotations

import dataclasses

import streamlit as st

from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import deviceset, jaxstartup
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning, scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import sandbox
from pmapviz.core.ui import queue_display, recompute
from pmapviz.features.explorer import codegen
from pmapviz.features.explorer.ui import explorer_form
from pmapviz.features.smap import (
    pmappipeline,
    smapcall,
    smaphtml,
    smapparts,
    smaprefusals,
    smaprun,
)
from pmapviz.features.smap.smapsettings import AUTO, FIELDS, MODES, P, SmapSettings, from_texts

OPEN_KEY = "ex_smap_open"
AUTO_RUN_BYTES = 64 * 2**20  # a small run goes at once; a larger one waits for its button


def show(program: Program, plan: Plan | None, report: jaxstartup.DeviceReport) -> None:
    """The section, for settings smap can be called with (nothing otherwise)."""
    if not smaprefusals.callable_with(plan):
        return
    box = st.expander(
        "pmap as JAX runs it, and jax.smap beside it",
        icon=":material/account_tree:",
        key=OPEN_KEY,
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        _pmap_part(program, plan)
        if plan.n_devices > report.count:
            st.info(
                f"Planned for {plan.n_devices:,} devices; this server has {report.count}: "
                "smap's mesh needs the devices, so run it on a machine with enough.",
                icon=":material/info:",
            )
            return
        s = _settings(report.count)
        _smap_part(program, plan, s, report.count)


def _pmap_part(program: Program, plan: Plan) -> None:
    st.markdown(
        "**pmap, as JAX 0.10 runs it.** `jax.pmap` is now `jit` of `shard_map`: each device "
        "gets a block of the mapped axis, squeezes it off, runs f, and puts it back. Read "
        "from `jax.make_jaxpr(jax.pmap(f, ...))` on abstract inputs (nothing allocated):"
    )
    pipe = pmappipeline.pipeline_of(program, plan)
    if pipe.refused is not None and not pipe.refused.asked:
        st.caption(pipe.refused.not_asked)
        return
    if pipe.refused is not None:
        st.markdown("JAX refuses this pmap call as it is written:")
        st.code(pipe.refused.text, language=None, wrap_lines=True)
        return
    st.html(smaphtml.pipeline_html(pipe, smaphtml.pipeline_label(pipe)))
    if st.toggle("Show pmap's jaxpr as JAX prints it", key="ex_smap_jaxpr"):
        st.code(pipe.jaxpr, language=None)


def _settings(n: int) -> SmapSettings:
    """The call's settings from its widgets (parsed by smapsettings.schema)."""
    st.markdown(
        "**The same settings as `jax.smap`**, on a one-axis mesh under `jax.set_mesh`. "
        "Explicit axes by default: `jax.make_mesh`'s own default, and the axis type whose "
        "types say how each array is split (so each mapped input is `jax.reshard`-ed first)."
    )
    c1, c2, c3 = st.columns([1, 1, 2])
    c1.number_input("Mesh devices", 1, max(1, n), max(1, n), key=P + "mesh")
    mode = c2.radio("Mesh axis type", MODES, key=P + "mode", horizontal=True)
    with c3:
        st.checkbox("Call it under jax.set_mesh", True, key=P + "setmesh")
        st.checkbox("Give in_axes", True, key=P + "inaxes")
        st.checkbox("jax.reshard the inputs", True, key=P + "reshard", disabled=mode == AUTO)
    state = st.session_state
    texts = {k: state[P + k] for k in ("mesh", "mode", "setmesh", "inaxes", "reshard")}
    s, errors = from_texts(texts, n)
    for e in errors:
        st.error(e, icon=":material/edit:")
    return s


def _apply(changes: dict, explorer: dict) -> None:
    """A fix's button: smap's widgets and the explorer's settings it changes."""
    names = {v: k for k, v in FIELDS.items()}  # SmapSettings' field -> its widget's key
    for field, value in changes.items():
        st.session_state[P + names[field]] = value
    if explorer:
        explorer_form.apply(explorer)


def _smap_part(program: Program, plan: Plan, s: SmapSettings, n: int) -> None:
    st.code("\n".join(smapcall.call_lines(plan, s, n)), language="python")
    pipe, vmap = _smap_pipeline(program, plan, s)
    if pipe.refused is not None:
        _refusal(smaprefusals.explain(plan, s, pipe.refused, n, vmap))
        return
    st.caption("smap's own pipeline, traced from the call above (its types as JAX prints them):")
    st.html(smaphtml.pipeline_html(pipe, smaphtml.pipeline_label(pipe)))
    if words := smapparts.pmap_refusal_words(plan, s):
        st.info(words, icon=":material/call_split:")
    part = smapparts.part_of(plan, s, pipe, vmap, n)
    if part is not None:
        st.warning(part.message, icon=":material/call_split:")
        st.markdown(f"**Fix:** {part.fix}")
        _fix_button(part.fix, part.changes, part.explorer, f"ex_smap_part_{part.code}")
    _run(program, plan, s, pipe, part is not None)
    if plan.ok and st.toggle("Export: the whole smap script", key="ex_smap_script"):
        st.code(codegen.smap_script(program, plan, mode=s.mode), language="python")


def _smap_pipeline(program: Program, plan: Plan, s: SmapSettings):
    ref = scenarios.program_ref(program)
    return _traced(deviceset.current(), ref, plan.key, dataclasses.astuple(s))


@st.cache_resource(max_entries=32, show_spinner=False)
def _traced(device_set: str, ref: tuple, key: tuple, fields: tuple):
    """smap's and jit(vmap)'s traces of these settings (a few ms; kept for the reruns of one
    edit)."""
    program = scenarios.program_for(*ref)
    plan = planning.replan(program, key)
    smap = smapcall.smap_pipeline(program, plan, SmapSettings(*fields))
    return smap, smapcall.vmap_pipeline(program, plan)


def _refusal(r: smaprefusals.Refusal) -> None:
    """smap's refusal: the plain words, the fix and its button, then JAX's words, folded."""
    with st.container(border=True):
        st.warning(r.message, icon=":material/block:")
        st.markdown(f"**Fix:** {r.fix}")
        _fix_button(r.fix, r.changes, r.explorer, f"ex_smap_fix_{r.code}")
        with st.popover(f"What JAX itself says: {r.said.name}", icon=":material/terminal:"):
            st.caption("A traceback of the call above ends with this line:")
            st.code(r.said.text, language=None, wrap_lines=True)


def _fix_button(fix: str, changes, explorer, key: str) -> None:
    if not (changes or explorer):
        return
    st.button(
        "Apply the fix",
        key=key,
        on_click=_apply,
        args=(dict(changes), dict(explorer)),
        type="primary",
        icon=":material/auto_fix_high:",
        help=fix,
    )


def _run(program: Program, plan: Plan, s: SmapSettings, pipe, parts: bool) -> None:
    """The run of smap beside pmap and jit(vmap): at once when small, else on its button."""
    need = smaprun.estimate(plan, pipe)
    budget = memorypool.budget()
    if too_big := budget.problem(sandbox.need(program, need)):  # your own f: and its process
        st.error(f"Running smap beside pmap {too_big}.", icon=":material/memory:")
        return
    small = budget.bytes_of(need) <= AUTO_RUN_BYTES
    label = f"Run smap, pmap and jit(vmap) ({budget.words(need)} at the peak)"
    if not small and not st.button(label, key="ex_smap_run", icon=":material/play_arrow:"):
        return
    with recompute.working("Running smap, pmap and jit(vmap) on the same values..."):
        res = queue_display.queued(
            lambda on_wait: _cached_run(
                deviceset.current(),
                scenarios.program_ref(program),
                plan.key,
                dataclasses.astuple(s),
                _on_wait=on_wait,
            )
        )
    if res is not None:
        _result(res, parts)
        if sandbox.applies(program):
            st.caption(
                "Your own f ran in a process of its own, which is ended if a run passes the "
                f"{jaxstartup.time_limit()} s limit."
            )


@st.cache_data(max_entries=16, show_spinner=False)
def _cached_run(device_set: str, ref: tuple, key: tuple, fields: tuple, _on_wait=None):
    """One run per settings and device set (plain data, kept for the reruns of one edit)."""
    program = scenarios.program_for(*ref)
    plan = planning.replan(program, key)
    s = SmapSettings(*fields)
    pipe = smapcall.smap_pipeline(program, plan, s)
    return smaprun.run(program, plan, s, pipe, on_wait=_on_wait)


def _result(res: smaprun.SmapRun, parts: bool) -> None:
    checks = [c for c in (res.vs_pmap, res.vs_vmap) if c is not None]
    said = "; ".join(f"smap {c.words()}" for c in checks)
    if res.passed:
        st.success(said + ".", icon=":material/check_circle:")
    elif parts:
        st.warning(f"As said above, they part: {said}.", icon=":material/call_split:")
    else:
        st.error(said + ".", icon=":material/error:")
    block = f"a block of {res.block}" if res.block else "its block"
    st.caption(
        f"Each of smap's {res.mesh_devices} devices gets {block} of the mapped axis"
        + (f"; pmap gives each of its {res.pmap_devices} one slice" if res.pmap_devices else "")
        + ". Read from the arrays' addressable_shards; hover a cell for its values."
    )
    st.html(smaphtml.blocks_html(res))
    st.caption("smap's arrays as JAX types them (`jax.typeof`: `@i` marks the split axis):")
    st.code("\n".join(f"{name}: {t}" for name, t in res.types.items()), language=None)
