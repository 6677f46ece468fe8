"""The phases of each all-reduce across slices, as the compiled program has them.

Across slices the compiler splits an all-reduce: a reduction inside each slice (an all-reduce
or a reduce-scatter over ICI), one or more ``send``/``recv`` pairs handed to the data-center
network's runtime (``_xla_megascale_transfer_type="ALL_REDUCE"``), and, where the reduction
was a reduce-scatter, all-gathers inside each slice. Which instructions belong together is
read from the program's data flow (:mod:`pmapviz.core.xla.hloflow`): the reduction is the
nearest one whose value a send carries, a recv is its send's by their shared rendezvous, and
the all-gathers are those the recvs' values reach. Sends that carry one reduction's value are
one all-reduce (a pytree's gradients reduced together, sent in pieces).
"""

from __future__ import annotations

from collections.abc import Sequence

from pmapviz.core.pods.podreport import PodCollective
from pmapviz.core.xla import hloflow

REDUCTIONS = ("all-reduce", "reduce-scatter")


def phases(collectives: Sequence[PodCollective], hlo: str) -> tuple[tuple[str, ...], ...]:
    """Each all-reduce across slices as instruction names in the order they run: [the
    reduction inside each slice, each send and its recv, the all-gathers after]; ``collectives``
    in the HLO's order."""
    graph = hloflow.operands_of(hlo)
    users = hloflow.users_of(graph)
    inside = [c for c in collectives if c.network == "ICI"]
    reductions = [c.name for c in inside if c.kind in REDUCTIONS]
    gathers = [c.name for c in inside if c.kind == "all-gather"]
    recv_of = {c.rendezvous: c.name for c in collectives if c.kind == "recv" and c.rendezvous}
    at = {c.name: k for k, c in enumerate(collectives)}
    grouped: dict[str, list[str]] = {}  # the reduction (or the lone send) -> its sends
    for c in collectives:
        if c.kind == "send" and c.network == "DCN" and c.transfer == "ALL_REDUCE":
            before = hloflow.reached(c.name, graph, reductions)[:1]
            grouped.setdefault(before[0] if before else c.name, []).append(c.name)
    out = []
    for key, sends in grouped.items():
        by_send = {c.name: c for c in collectives if c.name in sends}
        pairs = [(s, recv_of.get(by_send[s].rendezvous)) for s in sends]
        recvs = [r for _, r in pairs if r]
        after = {g for r in recvs for g in hloflow.reached(r, users, gathers)}
        names = [] if key in sends else [key]
        names += [n for s, r in pairs for n in (s, r) if n]
        out.append((*names, *sorted(after, key=at.__getitem__)))
    return tuple(out)
