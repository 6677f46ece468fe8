"""``pmapviz.pod_sweep(...)``: one program compiled for TPU slices from 4 to 256 chips, as a
notebook view: the compiler's estimate (compute + HBM) and the communication model per size.

``program`` is a built-in program's name (``"train"``, ``"dot"``, ``"psum"``) or a function with
its arguments, read as ``pmapviz.compiled(f, *args, topology=...)`` reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmapviz.core.drawing import notebookviews, podview
from pmapviz.core.drawing.notebookviews import View
from pmapviz.core.pods import podcompile, podsweep, podtopology
from pmapviz.features.compiled import podfunctions
from pmapviz.features.pods import podsettings


def pod_sweep(
    program: str | Callable = "train",
    *args: Any,
    generation: str = "v5e",
    min_chips: int = podsweep.MIN_CHIPS,
    max_chips: int = podsweep.MAX_CHIPS,
    batch: int = 0,
    in_axes: Any = 0,
    axis_name: str = "i",
    in_specs: Any = None,
) -> View:
    """``program`` compiled for every offered ``generation`` slice from ``min_chips`` to
    ``max_chips`` chips; ValueError with the fix for what cannot be compiled. A function is
    laid on each slice as ``pmapviz.compiled`` lays it (``in_axes`` for a plain f; a jitted
    f's own shardings or ``in_specs``), every change said in its row's report."""
    notebookviews.ready()
    if isinstance(program, str):
        if program not in podsettings.PROGRAMS:
            raise ValueError(
                f"program={program!r}: give one of {', '.join(podsettings.PROGRAMS)}, "
                "or a function and its arguments."
            )
        prog = podsettings.program(program, batch)
    else:
        prog = podfunctions.program_for(program, args, in_axes, 0, axis_name, in_specs)
    try:
        reports = podsweep.sweep(prog, generation, min_chips, max_chips)
    except (podcompile.PodError, podtopology.PodUnavailable) as err:
        raise ValueError(str(err)) from None
    return podview.sweep_view(reports)
