"""A collective's picture as device-aligned grid rows: each device, its x before and y after,
numpy's answer where y is wrong, and where each piece came from (or which devices each result
combines). The Collectives page and ``pmapviz.collective`` draw the same rows."""

from __future__ import annotations

import html

from pmapviz.core.drawing import gridhtml
from pmapviz.core.expressions.collectivedefs import Collective
from pmapviz.features.collectives import collectiveruns
from pmapviz.features.collectives.collectiveruns import CollectiveOutcome


def group_of(out: CollectiveOutcome) -> dict[int, list[int]]:
    """Per device, the devices its result combines (its group; all devices without groups)."""
    groups = [list(g) for g in out.groups] if out.groups else [list(range(out.n))]
    return {d: g for g in groups for d in g}


def shows_sources(c: Collective) -> bool:
    """Whether ``c``'s results are copies of other devices' pieces ("came from"), rather than
    combinations of a group ("combines")."""
    return c.kind in ("gather", "permute", "scatter") and c.key != "psum_scatter"


def combines(c: Collective) -> bool:
    """Whether each of ``c``'s results combines a group of devices (the reductions)."""
    return c.kind in ("reduce", "normalise") or c.key == "psum_scatter"


def rows(out: CollectiveOutcome, labels: list[str]) -> gridhtml.Rows:
    """The picture's rows, as the Collectives page draws them: each device, its x before and
    y after, numpy's answer where y is wrong, and where each piece came from (or which
    devices each result combines). Device names (``labels``) are escaped here."""
    c, n, show = out.collective, out.n, collectiveruns.show_values
    names = [html.escape(label) for label in labels]
    grid = [
        ("device", [(names[d], d, f"{labels[d]}: position {d} on the axis") for d in range(n)]),
        (
            "x before",
            [
                (show(out.before[d]), d, f"device {d} starts with {show(out.before[d])}")
                for d in range(n)
            ],
        ),
        (
            "y after",
            [
                (show(out.after[d]), None, f"device {d} ends with {show(out.after[d])}")
                for d in range(n)
            ],
        ),
    ]
    if collectiveruns.differs_from_numpy(out):
        tip = "the mathematically right result, from numpy"
        grid.append(("numpy expects", [(show(out.expected[d]), None, tip) for d in range(n)]))
    if shows_sources(c):
        tip = "which device each piece came from: the collective's definition, checked by value"
        grid.append(("came from", [(gridhtml.chips(out.sources[d]), None, tip) for d in range(n)]))
    elif combines(c):
        where = group_of(out)
        grid.append(
            (
                "combines",
                [
                    (
                        gridhtml.chips(where[d]),
                        None,
                        f"device {d}'s result combines devices {where[d]}",
                    )
                    for d in range(n)
                ],
            )
        )
    return grid
