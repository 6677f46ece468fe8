"""``pmapviz.compiled(f, *args)``: what XLA made of your function, as a notebook view.

Two ways to give ``f``, read the way the Compiled program page reads its programs:

- a plain callable, written as you would pmap it (``lambda x: jax.lax.psum(x, "i")``): it is
  compiled as ``jax.pmap(f, in_axes=..., out_axes=..., axis_name="i")`` over ``args``, whose
  mapped axis (``in_axes``, like pmap's: an int or None per argument) is the device axis, on
  the first devices of this process. This goes through
  :func:`pmapviz.core.running.programanalysis.analyse`,
  so the collectives, cost and memory are the page's own;
- anything with a ``.lower`` (``jax.jit(f)``, ``jax.pmap(f)``, a jitted ``shard_map``):
  lowered as it is with ``args`` (their shardings are the layout) and compiled once.

Nothing is run: only the shapes, dtypes (and, for ``.lower``, shardings) of ``args`` matter, so
``jax.ShapeDtypeStruct`` works as well as a jax or numpy array. The view lists the collectives XLA
emitted (parsed from ``compiled.as_text()`` by :mod:`pmapviz.core.xla.hlo`), the memory per device
(``compiled.memory_analysis()``), the cost (``compiled.cost_analysis()``) and the HLO itself.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from pmapviz.core.base.valuetext import first_line, fmt_bytes
from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import gridhtml, notebookviews, podview, programtables
from pmapviz.core.drawing.notebookviews import View, escape
from pmapviz.core.pods import compiledinputs, podcompile, podtopology
from pmapviz.core.running import programanalysis
from pmapviz.core.running.programanalysis import Analysis, Levels, Target, Variant
from pmapviz.core.xla.hlo import parse_hlo
from pmapviz.features.compiled import functionargs, podfunctions

MAX_HLO_CHARS = 100_000  # HLO shown in the view; data["hlo"] keeps all of it
MEMORY_WORDS = (
    ("argument_bytes", "arguments"),
    ("output_bytes", "output"),
    ("temp_bytes", "temporaries"),
    ("generated_code_bytes", "generated code"),
    ("alias_bytes", "aliased"),
    ("peak_bytes", "peak"),
)


def compiled(
    f: Callable,
    *args: Any,
    devices: int | None = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: str = "i",
    variants: bool = False,
    max_hlo_chars: int = MAX_HLO_CHARS,
    topology: str | None = None,
    in_specs: Any = None,
) -> View:
    """What XLA compiled for ``f`` over ``args``: the collectives it emitted, memory and cost
    per device, and the HLO text.

    A plain ``f`` is pmapped (``in_axes``, ``out_axes``, ``axis_name`` as pmap's; the mapped
    axis is the device count); an ``f`` with ``.lower`` (jit, pmap, shard_map) is lowered as
    it is. ``devices``, when given, is checked against the devices the program uses.
    ``variants=True`` (plain ``f`` only) also compiles the page's three alternatives
    (jit(vmap), jit over NamedSharding inputs, shard_map) and tables them. Raises ValueError
    with a fix for arguments that do not make a program.

    ``topology="v5e:4x4"`` compiles for that TPU slice instead, with libtpu on this machine
    (:mod:`pmapviz.features.compiled.podfunctions` says how ``f`` is laid on it): per-device
    memory against the chip's HBM, FLOPs, bytes, the compiler's estimate, every collective with
    its groups on the chips and the communication model's time. A jitted ``f`` keeps its
    arguments' own shardings, or takes ``in_specs`` (PartitionSpecs over one mesh axis named
    ``axis_name`` spanning the slice); where pmapviz has to change the program to compile it
    (a pmap's mapped axis re-laid to the slice's device count), a ``LayoutChanged`` warning and
    the view's first lines say what changed, and the call that compiles it unchanged. On several
    slices (``topology="2 x v5e:4x4"``) a jitted ``f``'s mesh is one slice's, with an axis
    ``'dcn'`` of the slice count added outermost and the first axis split over both; a plain
    ``f`` is pmapped over every slice's devices, and a note says what that is on a mesh."""
    notes = notebookviews.ready()
    if topology is not None:
        return _on_pod(f, args, in_axes, out_axes, axis_name, topology, in_specs)
    if in_specs is not None:
        raise ValueError(
            "in_specs lays a jitted f on a TPU slice (with topology=...). Fix: leave it out, "
            "or add topology='v5e:2x4'."
        )
    if hasattr(f, "lower"):
        analysis = _lowered(f, args)
    else:
        target = _target(f, args, in_axes, out_axes, axis_name)
        analysis = _analysed(target, variants)
    if devices is not None and devices != analysis.target.n:
        raise ValueError(
            f"devices={devices!r}, but {_name(f)} compiles for {analysis.target.n} device(s). "
            f"Fix: leave devices out, or give arguments whose mapped axis is {devices}."
        )
    return _view(analysis, notes, max_hlo_chars)


def _on_pod(f, args, in_axes, out_axes, axis_name, topology: str, in_specs) -> View:
    """The compile for a TPU slice, as a view (ValueError with the fix); every change pmapviz
    made to compile it is also a ``LayoutChanged`` warning, said before the view is drawn."""
    program = podfunctions.program_for(f, args, in_axes, out_axes, axis_name, in_specs)
    try:
        report = podcompile.compile_for(program, topology, multislice=True)
    except (podcompile.PodError, podtopology.PodUnavailable) as err:
        raise ValueError(str(err)) from None
    for line in report.change_lines():
        warnings.warn(line, compiledinputs.LayoutChanged, stacklevel=3)
    return podview.report_view(report)


# ---------------------------------------------------------------- building the program
def _name(f: Callable) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def _target(f: Callable, args: tuple, in_axes: Any, out_axes: Any, axis_name: str) -> Target:
    """The plain ``f`` as the page's pmap target, its arguments checked against the devices."""
    import jax

    if not args:
        raise ValueError("no arguments: pmap needs at least one array to split over devices.")
    structs = [jax.tree.map(functionargs.struct, a) for a in args]
    axes = functionargs.axes(in_axes, len(args))
    n = functionargs.mapped_size(structs, axes)
    have = len(devicefacts.local_devices_for_work())
    if n > have:
        raise ValueError(
            f"the mapped axis has {n:,} entries, one per device, but this process has "
            f"{devicefacts.facts().devices_phrase(have)}. Fix: give at most {have} along the "
            f"mapped axis (e.g. reshape to ({have}, -1)), or start with more devices "
            f"(PMAPVIZ_DEVICES={n} before JAX starts; restart the kernel)."
        )
    code = (
        f"jax.pmap({_name(f)}, in_axes={axes if len(axes) > 1 else axes[0]!r}, "
        f"out_axes={out_axes!r}, axis_name={axis_name!r})"
    )
    return Target(_name(f), code, f, tuple(structs), axes, out_axes, axis_name, n)


def _analysed(target: Target, variants: bool) -> Analysis:
    """The page's analysis of the pmapped target; a program JAX refuses is a ValueError."""
    try:
        return programanalysis.analyse(target, variants=variants)
    except Exception as err:  # noqa: BLE001 - JAX's refusal, said in one line with a fix
        raise ValueError(
            f"JAX could not compile {target.code}: {first_line(err)} Fix: check that f runs "
            f"under that pmap, e.g. that its collectives name axis {target.axis_name!r}."
        ) from err


def _lowered(f: Callable, args: tuple) -> Analysis:
    """``f.lower(*args).compile()`` read as the page reads a compilation."""
    import jax

    name = _name(f)
    try:
        t = time.perf_counter()
        lowered = f.lower(*args)
        done = lowered.compile()
        compile_s = time.perf_counter() - t
    except Exception as err:  # noqa: BLE001 - JAX's refusal, said in one line with a fix
        raise ValueError(
            f"JAX could not lower and compile {name} with these arguments: {first_line(err)} "
            "Fix: call it with arguments it accepts (shapes, dtypes and shardings)."
        ) from err
    text = done.as_text()
    report = parse_hlo(text)
    n = report.n_devices or 1
    rows = programanalysis.rows_for(report, n)
    cost = programanalysis.cost_of(done)
    try:
        jaxpr = str(jax.make_jaxpr(f)(*args))
    except Exception:  # noqa: BLE001 - the jaxpr is a nicety; the compiled program is the point
        jaxpr = ""
    shlo = lowered.as_text()
    levels = Levels(jaxpr, shlo, text, (), (), report.lines)
    code = f"{name}.lower(*args).compile()"
    target = Target(name, code, f, args, (), None, None, n)
    found = {"compiled": Variant("compiled", code, rows, report.unparsed, cost)}
    return Analysis(target, rows, report.unparsed, levels, cost, found, compile_s)


# ---------------------------------------------------------------- the view
def memory_lines(a: Analysis) -> list[str]:
    """The memory per device (``memory_analysis()``) as words, one part a line."""
    m = a.cost.memory_json()
    lines = [
        f"{word}: {fmt_bytes(m[key])}" + (f" ({m[key]:,} B)" if m[key] >= 1024 else "")
        for key, word in MEMORY_WORDS
    ]
    if m["peak_is_estimate"]:
        lines[-1] += " (estimated: arguments + output + temporaries - aliased)"
    return lines


def _grid(a: Analysis) -> str:
    """The page's picture of the program on every device (each cell's text escaped), and
    each collective's replica groups when there are several."""
    labels = devicefacts.facts().labels
    rows, label = programanalysis.program_grid(a, labels)
    safe = [(escape(name), [(escape(t), p, tip) for t, p, tip in cells]) for name, cells in rows]
    out = [gridhtml.block_grid(safe, label)]
    for r in a.rows:
        c = r.hlo
        if c.source_target_pairs or not c.replica_groups or len(c.replica_groups) < 2:
            continue
        groups = [
            (f"group {k}", [(gridhtml.chips([d]), d, _label(labels, d)) for d in g])
            for k, g in enumerate(c.replica_groups)
        ]
        said = "; ".join(" ".join(map(str, g)) for g in c.replica_groups)
        out.append(notebookviews.paragraph(f"{c.name} ({c.kind}): replica groups"))
        out.append(gridhtml.block_grid(groups, f"{c.name} ({c.kind}) replica groups: {said}"))
    return "".join(out)


def _label(labels: list[str], d: int) -> str:
    return labels[d] if d < len(labels) else str(d)


def _hlo_block(text: str, limit: int) -> str:
    """The HLO in a collapsible block (escaped), cut at ``limit`` characters with a note."""
    shown = text[:limit]
    cut = (
        notebookviews.paragraph(
            f"Showing the first {limit:,} of {len(text):,} characters; the view's "
            "data['hlo'] holds all of it."
        )
        if len(text) > limit
        else ""
    )
    lines = len(text.splitlines())
    return (
        f"<details style='margin:6px 0'><summary>HLO, as compiled by XLA ({lines:,} lines)"
        f"</summary>{cut}{notebookviews.code_block(shown, 'compiled HLO text')}</details>"
    )


def _body(a: Analysis, notes: tuple[str, ...], limit: int) -> str:
    """The view's HTML: notes, the picture, collectives, memory, cost, variants, HLO."""
    t = a.target
    parts = [notebookviews.paragraph(" ".join(notes))] if notes else []
    parts.append(
        notebookviews.paragraph(
            f"{t.code} on {t.n} device(s), compiled in {a.compile_s * 1e3:,.0f} ms. Nothing "
            "was run: every number below is read from the compiled program."
        )
    )
    parts.append(_grid(a))
    parts.append(notebookviews.heading("The collectives XLA emitted"))
    if a.rows:
        parts.append(
            notebookviews.table(programtables.table_rows(a.rows), "collectives XLA emitted")
        )
    else:
        parts.append(
            notebookviews.paragraph("XLA emitted no collective: every device computes alone.")
        )
    if a.unparsed:
        parts.append(
            notebookviews.paragraph("Collective lines this version of pmapviz could not read:")
        )
        parts.append(notebookviews.code_block("\n".join(f"{k}: {x}" for k, x, _ in a.unparsed)))
    parts.append(notebookviews.heading("Memory per device (compiled.memory_analysis())"))
    parts.append(notebookviews.code_block("\n".join(memory_lines(a)), "memory per device"))
    parts.append(notebookviews.heading("Cost per device (compiled.cost_analysis())"))
    parts.append(notebookviews.paragraph(_cost_words(a)))
    if len(a.variants) > 1:
        rows, said = programtables.variant_table(a)
        parts.append(notebookviews.heading("The same computation, four ways"))
        parts.append(notebookviews.table(rows, "variants"))
        parts.extend(notebookviews.paragraph(s) for s in said)
    parts.append(_hlo_block(a.levels.hlo, limit))
    return "".join(parts)


def _cost_words(a: Analysis) -> str:
    c = a.cost
    flops = "not given" if c.flops is None else f"{c.flops:,.0f}"
    moved = "not given" if c.bytes_accessed is None else f"{c.bytes_accessed:,.0f}"
    return (
        f"flops {flops}; bytes accessed {moved} (each device's local memory traffic, not "
        "network bytes)."
    )


def _view(a: Analysis, notes: tuple[str, ...], limit: int) -> View:
    """The analysis as a View: HTML, text and data."""
    text = [
        *programtables.summary_lines(a),
        "memory per device (memory_analysis):",
        *(f"  {line}" for line in memory_lines(a)),
        f"cost per device: {_cost_words(a)}",
        *notes,
    ]
    data = {
        "code": a.target.code,
        "devices": a.target.n,
        "rows": programtables.table_rows(a.rows),
        "collectives": [r.to_json() for r in a.rows],
        "memory": a.cost.memory_json(),
        "cost": a.cost.to_json(),
        "compile_s": a.compile_s,
        "hlo": a.levels.hlo,
        "notes": list(notes),
    }
    if len(a.variants) > 1:
        data["variants"] = programtables.variant_table(a)[0]
    title = f"What XLA compiled: {a.target.label}"
    return View(title, _body(a, notes, limit), "\n".join(text), data, a)
