"""One program compiled for slices of growing size: how a step scales from a few chips to a pod.

The program keeps its global shapes (the batch stays, each chip holds less), so the compiler's
estimate falls as chips are added, and the communication model's time (:mod:`commmodel`) does
not: the curve bends away from the ideal ``time / chips``.
"""

from __future__ import annotations

from collections.abc import Callable

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
