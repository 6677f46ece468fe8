"""One program compiled for slices of growing size: how a step scales from a few chips to a pod.

The program keeps its global shapes (the batch stays, each chip holds less), so the compiler's
estimate falls as chips are added, and the communication model's time (:mod:`commmodel`) does
not: the curve bends away from the ideal ``time / chips``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pmapviz.core.pods import commmodel, podcompile, tpuchips
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podreport import PodReport

MIN_CHIPS, MAX_CHIPS = 4, 256


def sizes(generation: str, lo: int = MIN_CHIPS, hi: int = MAX_CHIPS) -> tuple[str, ...]:
    """The offered slices of ``generation`` from ``lo`` to ``hi`` chips, smallest first."""
    return tuple(
        name
        for name in tpuchips.offered_for(generation)
        if lo <= tpuchips.parse_topology(name).chips <= hi
    )


def sweep(
    program: PodProgram,
    generation: str = "v5e",
    lo: int = MIN_CHIPS,
    hi: int = MAX_CHIPS,
    on_step: Callable[[int, int, str], None] | None = None,
) -> list[PodReport]:
    """``program`` compiled for each size of ``generation`` (no batch search: one compile a
    size); ``on_step(k, total, topology)`` before each."""
    names = sizes(generation, lo, hi)
    if not names:
        raise ValueError(
            f"no {generation} slice offered between {lo} and {hi} chips; "
            f"the offered ones are {', '.join(tpuchips.offered_for(generation))}."
        )
    out = []
    for k, name in enumerate(names):
        if on_step:
            on_step(k, len(names), name)
        out.append(podcompile.compile_for(program, name, find_batch=False))
    return out


def speedups(reports: list[PodReport]) -> list[dict]:
    """Per size: chips, the estimate's and the model's times, the speed-up over the first
    (None where the compiler gave no estimate), and the links the model gave the slowest
    collective (:func:`commmodel.links_used`: ``collective``, ``links``, ``link_axes``)."""
    first = reports[0].total_s if reports else None
    return [
        {
            "topology": r.topology,
            "chips": len({c.coords for c in r.chips}),
            "compute_hbm_s": r.optimal_s,
            "communication_s": r.comm_s,
            "total_s": r.total_s,
            "speedup": (first / r.total_s) if first and r.total_s else None,
            "fits": r.fits,
            "batch": r.batch,  # the batch compiled on this slice (rounded up to divide it)
            "asked_batch": r.asked_batch,
            "changes": r.change_lines(),
            **commmodel.links_used(r),
        }
        for r in reports
    ]


def switches(rows: list[dict]) -> list[str]:
    """Where the model's links change between neighbouring rows of :func:`speedups`, a
    sentence each (:func:`commmodel.switches`)."""
    return commmodel.switches(rows)


# ---------------------------------------------------------------- Multislice: slices of one shape
MAX_SLICE_COUNTS = 8  # compiles one slice sweep may take


def slice_sweep(
    program: PodProgram,
    topology: str,
    counts: list[int],
    on_step: Callable[[int, int, str], None] | None = None,
) -> list[PodReport]:
    """``program`` compiled for ``counts`` slices of ``topology``'s slice (1, 2, 4, 8 x
    v5e:4x4), the global batch kept: the more slices, the less each chip computes and the more
    of the gradient crosses the data-center network."""
    topo = tpuchips.parse_topology(topology, "--topology", multislice=True)
    names = [replace(topo, slices=n).name for n in counts]  # the hosts as asked, on every count
    out = []
    for k, name in enumerate(names):
        if on_step:
            on_step(k, len(names), name)
        out.append(podcompile.compile_for(program, name, find_batch=False, multislice=True))
    return out


def slice_rows(reports: list[PodReport]) -> list[dict]:
    """Per slice count: chips, hosts, compute and HBM (the compiler's estimate, else the
    roofline estimate: ``compute_from`` says which), the ICI and DCN models' times and the
    bytes each device sends on each network, the step, and DCN's share of it."""
    rows = []
    for r in reports:
        sent = r.network_bytes()
        rows.append(
            {
                "topology": r.topology,
                "slices": r.slices,
                "chips": len(r.chips),
                "hosts": r.hosts,
                "compute_hbm_s": r.compute_s,
                "compute_from": "compiler" if r.optimal_s is not None else "roofline",
                "ici_s": r.ici_s,
                "dcn_s": r.dcn_s,
                "ici_bytes": sent["ICI"],
                "dcn_bytes": sent["DCN"],
                "step_s": r.step_s,
                "dcn_share": r.dcn_s / r.step_s if r.step_s else None,
                "fits": r.fits,
                "batch": r.batch,
            }
        )
    return rows


def dcn_dominates(rows: list[dict]) -> str:
    """Where the DCN model's time first becomes the step's largest term (above compute + HBM
    and above ICI), and where it first exceeds them together, in sentences written from the
    rows ('' without rows)."""
    ms = lambda s: f"{s * 1e3:,.3f} ms"  # noqa: E731
    said = []
    for r in rows:
        if r["step_s"] and r["dcn_s"] > max(r["compute_hbm_s"] or 0, r["ici_s"]):
            said.append(
                f"From {r['topology']} on, DCN is the step's largest term (model): "
                f"{ms(r['dcn_s'])} for {r['dcn_bytes'] / 2**20:,.1f} MiB a device, against "
                f"{ms(r['compute_hbm_s'] or 0)} of compute + HBM and {ms(r['ici_s'])} of ICI."
            )
            break
    for r in rows:
        if r["step_s"] and r["dcn_s"] > r["step_s"] - r["dcn_s"]:
            said.append(
                f"From {r['topology']} on, DCN takes more than everything else together "
                f"(model): {ms(r['dcn_s'])} against {ms(r['step_s'] - r['dcn_s'])}."
            )
            break
    if rows and not said:
        said.append("DCN is never the step's largest term here (model).")
    return " ".join(said)
