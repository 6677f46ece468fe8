"""A program compiled for a TPU slice, on a page: the target picker (this machine or a slice),
the compile (held in the server's budget), and what the compiled program says: per-device memory
against HBM, FLOPs, bytes, the compiler's estimate beside the communication model, the slice
drawn with its hosts and each collective's groups, and the published figures with sources."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import heavyimports, queues
from pmapviz.core.base.valuetext import quote
from pmapviz.core.budgets import memorymodel
from pmapviz.core.devices import accelerators
from pmapviz.core.drawing import podfigure, podview
from pmapviz.core.pods import (
    commmodel,
    dcnmodel,
    podcalibrate,
    podcompile,
    podtarget,
    podtopology,
    podwarm,
    tpuchips,
)
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podreport import PodReport, fmt_gib, fmt_seconds
from pmapviz.core.ui import recompute, tables

CHART = {"displayModeBar": False}


def target_picker(
    key: str, here: bool = True, label: str = "Compile for", more: tuple[str, ...] = ()
) -> str:
    """A select box of targets (widget ``key``, seeded by the page from the link): this machine
    (with ``here``), every offered slice, and ``more`` (several slices, where the page takes
    them). Returns the choice ('' for this machine)."""
    options = (*(podtarget.choices() if here else tpuchips.OFFERED), *more)
    current = st.session_state.get(key)
    if current not in options:  # a link's slice that is valid but not offered: offer it too
        options = (*options, current) if current else options
    have = podtopology.availability()
    hint = "A TPU slice is compiled for by libtpu on this machine; nothing runs."
    st.selectbox(
        label,
        options,
        key=key,
        format_func=podtarget.label,
        help=hint if have.ok else f"{hint} {have.why}",
    )
    return st.session_state[key]


def compiling(what: str, run):
    """``run(on_step)`` under a progress bar naming each compile ("Compiling for v5e:4x4 (2 of
    7)..."), the page greyed as it recomputes; the bar goes once ``run`` returns (its errors
    are the caller's to say)."""
    bar = st.progress(0.0, text="Compiling...")

    def step(k: int, total: int, name: str) -> None:
        bar.progress(k / total, text=f"Compiling for {name} ({k + 1} of {total})...")

    with recompute.working(f"Compiling for {what}..."):
        result = run(step)
    bar.empty()
    return result


def unavailable() -> bool:
    """Says (once) why this machine cannot compile for a pod, with the install line."""
    have = podtopology.availability()
    if not have.ok:
        st.info(have.why, icon=":material/download:")
    return not have.ok


def compile_report(program: PodProgram, topology: str) -> PodReport | None:
    """The compile (a notice while libtpu works, the page's earlier result greyed out:
    :mod:`.recompute`; the server's warm-up of the same compile waited for, not repeated), or
    None after one error line with a fix."""
    if unavailable():
        return None
    try:
        with recompute.working(f"Compiling for {topology} with libtpu (nothing runs)..."):
            podwarm.wait(program, topology)
            # several slices only reach here from a field that takes them (the Pods page's)
            return podcompile.compile_for(program, topology, multislice=True)
    except (podcompile.PodError, podtopology.PodUnavailable, memorymodel.BudgetError) as err:
        st.error(str(err), icon=":material/block:")
    except (queues.WaitTimeout, queues.Cancelled):
        st.warning(
            "The server is busy with other work; press the button again in a moment.",
            icon=":material/hourglass_empty:",
        )
    return None


def picture(r: PodReport) -> None:
    """The slice as a picture (hosts, chips colored by the first collective's groups; a
    screen reader hears what it shows), drawn before the rest of the report. As Markdown's
    HTML (podview escapes every value in it): the browser draws it with the code it loaded for
    the page's first words, not after a chunk of its own."""
    st.markdown(podview.chip_html(r), unsafe_allow_html=True)


def program_and_report(program: PodProgram, topology: str, key: str, slot=None):
    """The program's code (folded), its compile for ``topology`` and everything it says,
    the slice's picture first (in presenter mode in ``slot``, above the settings). The
    report, or None."""
    with st.expander("The program", expanded=False):
        st.code(program.code, language="python")
    # the slice first, as HTML: from the topology alone while the program compiles, then with
    # the compiled program's groups; drawn at once, while the browser still loads the chart
    # code of the figure below (Plotly's, about a second on a 2-core machine)
    place = (slot if slot is not None else st.container()).empty()
    _slice_before_compile(place, topology)
    compiled = compile_report(program, topology)
    if compiled is None:
        place.empty()
        return None
    with place:
        picture(compiled)
    show(compiled, key)
    return compiled


def _slice_before_compile(place, topology: str) -> None:
    """The slice's chips and hosts, before the program that will colour them is compiled
    (nothing where this machine cannot load the topology: the compile says why)."""
    try:
        pod = podtopology.load(topology, multislice=True)
    except podtopology.PodUnavailable:
        return
    said = f"{pod.summary()}; compiling the program for it"
    place.markdown(podview.slice_html(pod.chips, said), unsafe_allow_html=True)


def show(r: PodReport, key: str) -> None:
    """Everything the compile says, and the slice drawn (``key`` keeps the widgets apart)."""
    st.markdown(f"**{r.summary}**, the program as compiled:")
    st.code(r.label, language=None, wrap_lines=True)
    changes(r)
    c = st.columns(4)
    c[0].metric("Peak per device" + r.at_batch(), fmt_gib(r.peak_bytes), help="memory_analysis()")
    if r.optimal_s is None and r.roofline_s is not None:
        c[1].metric("Compute + HBM (roofline)", fmt_seconds(r.roofline_s), help=r.roofline_how)
    else:
        c[1].metric("Compute + HBM", fmt_seconds(r.optimal_s), help="the compiler's estimate")
    c[2].metric("Communication", fmt_seconds(r.comm_s), help=commmodel.MODEL_NAME)
    c[3].metric("Collectives", len(r.collectives), help="in the compiled HLO")
    (st.success if r.fits else st.error)(
        r.fit_words()[:1].upper() + r.fit_words()[1:] + ".",
        icon=":material/memory:" if r.fits else ":material/block:",
    )
    if r.optimal_s is None:
        instead = (
            f" Shown instead: the **roofline estimate**, {fmt_seconds(r.roofline_s)} "
            f"({r.roofline_how})."
            if r.roofline_s is not None
            else ""
        )
        st.warning(
            f"libtpu gives no time estimate for this program on {r.topology} (its cost model "
            "answered none or a negative time); the memory, FLOPs and collectives are still "
            f"the compiler's.{instead}",
            icon=":material/help:",
        )
    _figure(r, key)
    if r.slices > 1:
        networks(r)
    tables.show(tables.frame(podview.figures(r)))
    if r.collectives:
        tables.show(tables.frame(podview.collective_rows(r)))
    st.caption(
        "Communication is a **model**, not the compiler's: "
        f"{commmodel.MODEL_NAME}; link bandwidths from the table below. The compiler's own "
        "estimate (`optimal_seconds`) counts compute and HBM traffic only."
    )
    with st.expander("The chips' published figures, and where they come from"):
        tables.static(tables.frame(hardware_rows()))
        st.caption(
            "What the compiler allows a device is measured, not published: the largest program "
            f"libtpu accepted, as its refusal words it ({tpuchips.COMPILER_HBM_MEASURED}); the "
            "fit check uses it."
        )
    with st.expander("The compiled HLO"):
        st.code(r.hlo[:60_000], language=None)


def networks(r: PodReport) -> None:
    """Several slices: what runs on each network (bytes a device, the models' times), each
    all-reduce across slices drawn as its phases as compiled, and the DCN model with its
    source, every figure from ``r``."""
    st.markdown(f"**{r.slices} slices, two networks**: ICI inside each slice, DCN between them.")
    tables.show(tables.frame(podview.network_rows(r)))
    phases = r.phases()
    if phases:
        counts = sorted({len(podview.phase_steps(p)) for p in phases})
        many = f"The {len(phases)} all-reduces" if len(phases) > 1 else "The all-reduce"
        st.markdown(
            f"**{many} across slices**, as {r.topology} compiled "
            f"{'them' if len(phases) > 1 else 'it'} "
            f"({' or '.join(map(str, counts))} phase{'s' if counts != [1] else ''}):"
        )
        st.markdown(podview.phases_html(r), unsafe_allow_html=True)
    st.caption(
        f"DCN time is a **model**: {dcnmodel.DCN_MODEL}; "
        f"{dcnmodel.dcn_words(tpuchips.GENERATIONS[r.generation])}. "
        "ICI time is the communication model's; neither comes from the compiler."
    )


def changes(r: PodReport) -> None:
    """What pmapviz changed before compiling (a batch rounded up or clipped, a mapped axis
    re-laid), before any figure, with JAX's own refusal of the size asked, folded."""
    for line, change in zip(r.change_lines(lambda name: quote(name, 80)), r.changes, strict=True):
        st.warning(line, icon=":material/straighten:")
        if change.jax_said:
            with st.expander("What JAX itself says of the size asked"):
                st.code(change.jax_said, language=None, wrap_lines=True)
    for note in r.notes:
        st.info(note, icon=":material/info:")


def _figure(r: PodReport, key: str) -> None:
    index = None
    if r.collectives:
        names = ["(none: hosts and chips)"] + [
            f"{k}: {c.kind} {c.shape}, {len(c.groups)} group(s) of {c.group_size}"
            for k, c in enumerate(r.collectives)
        ]
        pick = st.selectbox("Draw the groups of", names, index=1, key=f"{key}_coll")
        index = None if pick not in names[1:] else names.index(pick) - 1
    heavyimports.pandas()  # Plotly's validators read pandas: never a half-imported one
    st.plotly_chart(podfigure.pod_figure(r, index), config=CHART, key=f"{key}_fig")


def hardware_rows() -> list[dict]:
    """One row per generation: HBM, bandwidths, link figure, and sources."""
    return [
        {
            "generation": g.title,
            "HBM a chip": f"{g.hbm_gib:g} GiB",
            "the compiler allows a device": f"{g.compiler_hbm.stated_gib:g} GiB",
            "HBM GB/s": g.hbm_gbs,
            "bf16 TFLOP/s": g.bf16_tflops,
            "ICI one-way GB/s a link": g.ici_link_gbs,
            "links": g.ici_ports,
            "source": g.source,
            "link source": g.ici_source,
        }
        for g in tpuchips.GENERATIONS.values()
    ]


def calibration(program: PodProgram, key: str) -> None:
    """On a TPU machine (whichever device set the page runs on): the program run on this
    machine's chip(s), measured against the compiler's estimate for that compile (a button);
    elsewhere, one line saying where it works."""
    if "tpu" not in accelerators.accelerators_present():
        st.caption(
            "On a TPU machine this page also runs the program on its own chip and sets the "
            "measured time beside the compiler's estimate (on one v5e chip: 1.35x for the "
            "training step, 3.5x for the seed's dot, 4.5x for the psum's copy)."
        )
        return
    if not st.button("Run it on this machine's chip", key=f"{key}_calibrate"):
        return
    try:
        with recompute.working("Running on this machine's chip..."):
            c = podcalibrate.calibrate(program)
    except (podcalibrate.NoChip, memorymodel.BudgetError) as err:
        st.error(str(err), icon=":material/block:")
        return
    cols = st.columns(3)
    cols[0].metric("Measured (median of 20)", fmt_seconds(c.measured_s), help="dispatch included")
    cols[1].metric("Compiler's estimate", fmt_seconds(c.estimate_s), help="optimal_seconds")
    cols[2].metric("Measured / estimated", "n/a" if c.ratio is None else f"{c.ratio:.2f}x")
    st.caption(
        f"On {c.devices} {c.device_kind} device(s), timed from Python with "
        "`block_until_ready` (dispatch included); a profiler trace's device times would be "
        "closer to what the estimate counts."
    )


def sweep(reports: list[PodReport], key: str) -> None:
    """A sweep's chart (compiler's estimate and model, stacked, against the ideal), table, and
    where the model's links change (axes closing into rings), in the reports' own numbers."""
    heavyimports.pandas()  # as in _figure
    st.plotly_chart(podfigure.sweep_figure(reports), config=CHART, key=f"{key}_sweep_chart")
    tables.show(tables.frame(podview.sweep_rows(reports)))
    for line in podview.sweep_switches(reports):
        st.caption(line)
