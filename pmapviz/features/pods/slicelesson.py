"""What several slices change, in words written from the compiled programs: the lesson "one
slice or two" (the same training step on v5e:16x16 and on 2 x v5e:8x16) and why data
parallelism is the axis to put across slices. Pure (no JAX, no Streamlit): the Pods page shows
it, the tests compare it with the engine's reports.
"""

from __future__ import annotations

from pmapviz.core.pods import tpuchips
from pmapviz.core.pods.podreport import PodReport, fmt_gib, fmt_seconds

ONE, TWO = "v5e:16x16", "2 x v5e:8x16"  # the lesson's pair: 256 chips either way


def _collectives(r: PodReport) -> str:
    """'all-reduce f32[4096,4096] [ICI]; send f32[...] [DCN]; ...' (the network on several
    slices only)."""
    return "; ".join(
        f"{c.kind} {c.shape}" + (f" [{c.network}]" if r.slices > 1 else "") for c in r.collectives
    )


def _compute(r: PodReport) -> str:
    """Compute + HBM and where it comes from."""
    if r.optimal_s is not None:
        return f"{fmt_seconds(r.optimal_s)} (the compiler's estimate)"
    if r.roofline_s is not None:
        return f"{fmt_seconds(r.roofline_s)} (roofline estimate: libtpu gives none)"
    return "none (libtpu gives none)"


def _mesh(r: PodReport) -> str:
    """ "('dcn', 'chips') = 2 x 128"."""
    names = ", ".join(repr(n) for n, _ in r.mesh_axes)
    return f"({names}) = " + " x ".join(str(size) for _, size in r.mesh_axes)


def compare_rows(one: PodReport, two: PodReport) -> list[dict]:
    """The two compiles side by side, a row per figure."""

    def row(what: str, value) -> dict:
        return {"what": what, one.topology: value(one), two.topology: value(two)}

    return [
        row("chips, hosts", lambda r: f"{len(r.chips)} chips on {r.hosts or '?'} hosts"),
        row("mesh", _mesh),
        row("program", lambda r: r.label),
        row("collectives as compiled", _collectives),
        row("each device sends over ICI", lambda r: fmt_gib(r.network_bytes()["ICI"])),
        row("each device sends over DCN", lambda r: fmt_gib(r.network_bytes()["DCN"])),
        row("ICI time (model)", lambda r: fmt_seconds(r.ici_s)),
        row("DCN time (model)", lambda r: fmt_seconds(r.dcn_s)),
        row("compute + HBM", _compute),
        row("one step, every term added", lambda r: fmt_seconds(r.step_s)),
        row("memory per device", lambda r: fmt_gib(r.peak_bytes)),
    ]


def what_changed(one: PodReport, two: PodReport) -> list[str]:
    """What changed in the program from one slice to two, and why, a sentence each, every
    figure from the two reports."""
    out = [
        f"On {one.topology} the step has {len(one.collectives)} collective(s), all on ICI: "
        f"{_collectives(one) or 'none'}; each device sends {fmt_gib(one.network_bytes()['ICI'])}"
        f" ({fmt_seconds(one.ici_s)}, model)."
    ]
    phases = two.phases()
    if phases:
        steps = []
        for c in phases[0]:
            if c.kind == "recv":
                continue
            where = "inside each slice" if c.network == "ICI" else "between slices"
            steps.append(f"{c.kind} {c.shape} {where} ({c.network})")
        first, send = phases[0][0], next(c for c in phases[0] if c.kind == "send")
        share = first.bytes / send.bytes if send.bytes and first.network == "ICI" else None
        out.append(
            f"On {two.topology} the compiler splits the gradient's all-reduce into "
            f"{len(steps)} phases: {'; then '.join(steps)}."
        )
        if share:
            out.append(
                f"Why: ICI inside a slice is fast and DCN between slices is not, so only "
                f"1/{share:,.0f} of the gradient each device holds ({fmt_gib(send.bytes)}) "
                f"crosses the data-center network; the rest of the reduction stays on ICI."
            )
    else:
        out.append(f"On {two.topology} no all-reduce crosses the slices.")
    out.append(
        f"Per device: {fmt_gib(two.network_bytes()['DCN'])} over DCN "
        f"({fmt_seconds(two.dcn_s)}, model) and {fmt_gib(two.network_bytes()['ICI'])} over ICI "
        f"({fmt_seconds(two.ici_s)}, model); one step {fmt_seconds(two.step_s)} against "
        f"{fmt_seconds(one.step_s)} on one slice (compute + HBM: {_compute(two)} against "
        f"{_compute(one)})."
    )
    return out


def why_data_parallel(rows: list[dict], generation: str) -> str:
    """Why data parallelism goes across slices, from a slice sweep's rows
    (:func:`~pmapviz.core.pods.podsweep.slice_rows`) and the generation's published links."""
    gen = tpuchips.GENERATIONS[generation]
    last = rows[-1] if rows else None
    if last is None or gen.dcn_chip_bytes_s is None:
        return ""
    ici = gen.ici_link_gbs * gen.ici_ports * 1e9
    return (
        "Data parallelism is the axis to put across slices: across slices it exchanges only "
        f"the gradient, once a step ({fmt_gib(last['dcn_bytes'])} a device over DCN on "
        f"{last['topology']}, against {fmt_gib(last['ici_bytes'])} over ICI inside each "
        f"slice), and DCN gives a chip {gen.dcn_chip_bytes_s / 1e9:.3g} GB/s against ICI's "
        f"{gen.ici_ports} links of {gen.ici_link_gbs:g} GB/s ({ici / gen.dcn_chip_bytes_s:,.0f}x "
        "more, published figures). A model-parallel axis across slices would put DCN inside "
        "every layer, forward and backward."
    )
