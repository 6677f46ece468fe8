"""``pmapviz.pod_sweep(...)``: one program compiled for TPU slices from 4 to 256 chips, as a
notebook view: the compiler's estimate (compute + HBM) and the communication model per size.

``program`` is a built-in program's name (``"train"``, ``"dot"``, ``"psum"``) or a function with
its arguments, read as ``pmapviz.compiled(f, *args, topology=...)`` reads them. With
``slices=[1, 2, 4, 8]``, a built-in program on that many slices of ``slice_topology``
("v5e:4x4") joined over the data-center network instead: where DCN starts to dominate (models,
labelled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmapviz.core.drawing import notebookviews, podview
from pmapviz.core.drawing.notebookviews import View
from pmapviz.core.pods import dcnmodel, podcompile, podsweep, podtopology, tpuchips
from pmapviz.features.compiled import podfunctions
from pmapviz.features.pods import podsettings, slicelesson


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
    slices: list[int] | None = None,
    slice_topology: str = podsettings.SWEPT_SLICE,
) -> View:
    """``program`` compiled for every offered ``generation`` slice from ``min_chips`` to
    ``max_chips`` chips; ValueError with the fix for what cannot be compiled. A function is
    laid on each slice as ``pmapviz.compiled`` lays it (``in_axes`` for a plain f; a jitted
    f's own shardings or ``in_specs``), every change said in its row's report. ``slices``:
    the built-in program on each count of ``slice_topology`` instead (:func:`slice_sweep_view`)."""
    notebookviews.ready()
    if slices is not None:
        if not isinstance(program, str) or program not in podsettings.PROGRAMS:
            raise ValueError(
                f"slices= sweeps a built-in program ({', '.join(podsettings.PROGRAMS)}) so far; "
                "your own function compiles for one slice."
            )
        return slice_sweep_view(podsettings.program(program, batch), slice_topology, slices)
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


def slice_sweep_view(program, one: str, counts: list[int]) -> View:
    """``program`` on each of ``counts`` slices of ``one`` ('v5e:4x4'), as a view: a row per count
    (compute + HBM, the ICI and DCN models, the bytes over DCN, DCN's share), where DCN
    starts to dominate, why data parallelism goes across slices, and the DCN model's source;
    ValueError with the fix for a bad count or slice."""
    if not counts or any(not isinstance(n, int) or isinstance(n, bool) for n in counts):
        raise ValueError(f"slices={counts!r}: give whole numbers of slices, e.g. [1, 2, 4, 8].")
    try:
        for n in counts:  # every count checked before any compile, in the target's words
            tpuchips.parse_topology(f"{n} x {one}", "slices=", multislice=True)
        reports = podsweep.slice_sweep(program, one, list(counts))
    except (ValueError, podcompile.PodError, podtopology.PodUnavailable) as err:
        raise ValueError(str(err)) from None
    rows = podsweep.slice_rows(reports)
    gen = tpuchips.GENERATIONS[reports[0].generation]
    said = [podsweep.dcn_dominates(rows), slicelesson.why_data_parallel(rows, gen.name)]
    said.append(f"DCN time is a model: {dcnmodel.DCN_MODEL}; {dcnmodel.dcn_words(gen)}.")
    said = [line for line in said if line]
    body = notebookviews.table(rows, "the slice sweep") + "".join(
        notebookviews.paragraph(line) for line in said
    )
    text = "\n".join([" | ".join(f"{k}: {v}" for k, v in r.items()) for r in rows] + said)
    data = {"rows": rows, "said": said, "reports": [r.to_dict() for r in reports]}
    title = f"{reports[0].title or reports[0].label} on {counts[0]} to {counts[-1]} slices of {one}"
    return View(title, body, text, data)
