"""``pmapviz.plan`` for a notebook: what ``jax.pmap`` does with given shapes, as the explorer page
shows it, from shapes alone.

:func:`plan` runs :func:`pmapviz.core.planning.planning.plan` and returns a
:class:`pmapviz.core.drawing.notebookviews.View`
of the verdict (OK, or each problem with its fix), the pmap call, a card per input and output split
as JAX splits it (:func:`pmapviz.core.planning.pmapplacement.plan_layouts`: JAX's
``devices_indices_map``, or index arithmetic when planning for more devices than this process has),
the table of what each device holds and computes, and, for a catalog example, the runnable
``jax.pmap`` script. The plan itself stays reachable: ``view.ok``, ``view.problems``,
``view.leaves`` are the
:class:`pmapviz.core.planning.planning.Plan`'s (the view's ``source``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from pmapviz.core.base import pytrees, valueparse
from pmapviz.core.base.valuetext import fmt_shape, fmt_tree
from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import arrayhtml, notebookviews
from pmapviz.core.drawing.notebookviews import View, escape
from pmapviz.core.expressions import functions
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning, pmapplacement, scenarios
from pmapviz.core.planning.planning import Plan
from pmapviz.features.explorer import codegen

MAIN_WIDTH_PX = 820  # about the width of a notebook's output column, as the page's main column
HTML_TABLE_ROWS = 64  # rows of the per-device table drawn in the HTML (all are in the data)
TEXT_DEVICE_LINES = 8  # devices listed in the text form


class _Default:
    """The default of in_axes / out_axes: 0, or a catalog example's own."""

    def __repr__(self) -> str:
        return "0 (a catalog example: its own)"


DEFAULT: Any = _Default()


# ---------------------------------------------------------------- what the caller gave
def unknown_function(name: str) -> str:
    """The message for a name that is not in the catalog: every valid name, and the nearest."""
    names = list(functions.BY_KEY)
    near = difflib.get_close_matches(str(name), names, n=2, cutoff=0.5)
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return (
        f"Unknown function {str(name)[:40]!r}: a name must be one of the catalog's examples "
        f"({', '.join(names)}), or pass your own function.{hint}"
    )


# names people reach for that the catalog spells otherwise: "dot" is the dot of two vectors
ALIASES = {"dot": "vdot"}


def function_for(f: Any) -> tuple[Any, str]:
    """``(what planning takes, its name)``: a catalog example by name (its
    :class:`pmapviz.core.expressions.functions.Program`), a Program, or a callable; ValueError
    otherwise."""
    if isinstance(f, str):
        key = ALIASES.get(f, f)
        if key not in functions.BY_KEY:
            raise ValueError(unknown_function(f))
        return functions.get(key), key
    if isinstance(f, Program):
        return f, f.key
    if callable(f):
        return f, str(getattr(f, "__name__", type(f).__name__))
    raise ValueError(
        f"f is a {type(f).__name__}: give a function, or the name of a catalog example "
        f"({', '.join(functions.BY_KEY)})."
    )


def device_count(devices: Any = None, n_devices: Any = None) -> int:
    """The device count to plan for: ``devices=`` (or its older spelling ``n_devices=``),
    1 to ``scenarios.MAX_PLAN_DEVICES``; None: this process's devices."""
    if devices is not None and n_devices is not None and devices != n_devices:
        raise ValueError(
            f"devices={devices!r} and n_devices={n_devices!r} disagree: give one of them."
        )
    given = n_devices if devices is None else devices
    if given is None:
        return devicefacts.facts().local_count
    if isinstance(given, bool):
        raise ValueError(f"devices={given!r}: give a whole number of devices, e.g. devices=8.")
    return valueparse.parse_int(given, "devices", 1, scenarios.MAX_PLAN_DEVICES)


def settings_for(
    fn: Any, shapes: Sequence | None, in_axes: Any, out_axes: Any, n: int
) -> tuple[list, Any, Any]:
    """``(shapes, in_axes, out_axes)`` with the defaults filled in: a catalog example's own
    shapes (its mapped axes sized to ``n`` devices) and axes, else in_axes and out_axes 0."""
    example = isinstance(fn, Program)
    if in_axes is DEFAULT:
        in_axes = tuple(fn.default_in_axes) if example else 0
    if out_axes is DEFAULT:
        out_axes = fn.default_out_axes if example else 0
    if shapes is None:
        if not example:
            raise ValueError(
                "shapes: give one shape per argument of f, e.g. [(8, 3), (8, 3)] "
                "(only a catalog example has shapes of its own)."
            )
        return functions.sized_shapes(fn, n), in_axes, out_axes
    if isinstance(shapes, (str, bytes)) or not isinstance(shapes, (list, tuple)):
        raise ValueError(f"shapes {shapes!r:.60}: give a list of shapes, e.g. [(8, 3), (8, 3)].")
    if shapes and all(isinstance(d, int) for d in shapes):
        raise ValueError(
            f"shapes {tuple(shapes)} is one shape: give a list with one shape per argument, "
            f"e.g. [{tuple(shapes)}] for a function of one argument."
        )
    return list(shapes), in_axes, out_axes


# ---------------------------------------------------------------- the public call
def plan(
    f: Callable | str | Program,
    shapes: Sequence | None = None,
    in_axes: Any = DEFAULT,
    out_axes: Any = DEFAULT,
    devices: int | None = None,
    dtypes: str | Sequence[str] | None = None,
    axis_name: str | None = "i",
    n_devices: int | None = None,
) -> View:
    """What ``jax.pmap(f, in_axes, out_axes, axis_name)`` does with arguments of ``shapes``
    on ``devices`` devices, from shapes alone (nothing is allocated), as a view: the verdict and
    each problem's fix, every input and output split over the devices, what each device holds
    (``to_frame()``), and the code. ``f``: a function, or a catalog example's name (``"vdot"``,
    ``"batched_dot"``, ...; then ``shapes`` and the axes default to its own). ``devices`` (or
    ``n_devices``) may exceed this process's devices: planning for a bigger machine. The view reads
    on as its :class:`pmapviz.core.planning.planning.Plan`: ``.ok``, ``.problems``.
    Raises ValueError for a name, shape list, device count or axis name that is not one."""
    notes = notebookviews.ready()
    fn, name, p = planned(
        f, shapes, in_axes, out_axes, dtypes, axis_name, device_count(devices, n_devices)
    )
    return view(p, fn, name, devicefacts.facts().local_count, notes)


def planned(f, shapes, in_axes, out_axes, dtypes, axis_name, n: int) -> tuple:
    """``(fn, name, plan)``: a notebook's arguments read as :func:`plan` reads them (a
    function or a catalog name, its shapes and axes defaulting to the example's own), planned
    for ``n`` devices; ValueError with the fix for what is not usable."""
    fn, name = function_for(f)
    if axis_name is not None:
        axis_name = valueparse.parse_axis_name(axis_name)
    shapes, in_axes, out_axes = settings_for(fn, shapes, in_axes, out_axes, n)
    try:
        p = planning.plan(fn, shapes, in_axes, out_axes, axis_name, n, dtypes)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"shapes {shapes!r:.80} or dtypes {dtypes!r:.40} are not usable ({err}): give "
            "one shape per argument, e.g. [(8, 3), (8, 3)], and one dtype or one per argument."
        ) from err
    return fn, name, p


def view(p: Plan, fn: Any, name: str, local: int, notes: Sequence[str] = ()) -> View:
    """The view of plan ``p`` of ``fn`` (named ``name``) on a process with ``local``
    devices; ``notes``: what setting up the devices said."""
    inputs, outputs = pmapplacement.plan_layouts(p) if p.ok else ([], [])
    rows = pmapplacement.device_rows(p, inputs, outputs) if p.ok else []
    verdict = "OK" if p.ok else "NOT OK"
    return View(
        title=f"jax.pmap plan of {name} on {p.n_devices} device(s): {verdict}",
        body=plan_html(p, fn, inputs, outputs, rows, local, notes),
        text=plan_text(p, fn, name, inputs, outputs, rows, local),
        data=plan_data(p, inputs, outputs, rows, local),
        source=p,
    )


# ---------------------------------------------------------------- words
def elsewhere_line(p: Plan, local: int) -> str:
    """What a plan for more (or fewer) devices than this process has means; '' when equal."""
    if p.n_devices == local:
        return ""
    how = (
        "each device's block is computed by index arithmetic (tested against JAX's "
        "devices_indices_map), on devices named device 0, device 1 and so on"
        if p.devices_used > local
        else "the blocks are read from JAX's shardings on this process's devices"
    )
    return (
        f"Planned for {p.n_devices:,} devices from the shapes alone; this process has "
        f"{local}: {how}. Running it needs a machine with that many devices."
    )


def verdict_line(p: Plan) -> str:
    """The explorer's verdict in one sentence: what each device runs, or how many problems."""
    if not p.ok:
        k = len(p.problems)
        return f"Not valid: pmap would reject this ({k} problem{'s' * (k != 1)}, each with a fix)."
    local_args = ", ".join(f"{leaf.name} {fmt_shape(leaf.local_shape)}" for leaf in p.leaves)
    return (
        f"Valid. pmap uses {p.devices_used:,} of the {p.n_devices:,} devices; each runs f on "
        f"{local_args} and returns {fmt_tree(p.per_device_out_shapes)}. Result: "
        f"{fmt_tree(p.out_shapes)} {fmt_tree(p.out_dtypes)}."
    )


def plan_notes(p: Plan) -> list[str]:
    """The plan's notes, and why out_axes=None is safe where it is."""
    notes = list(p.notes)
    if p.ok and p.out_axes is None:
        notes.append(
            "out_axes=None is safe here: the output is the same on every device (it comes "
            "from a collective), so pmap returns one copy."
        )
    return notes


def array_line(a: dict[str, Any], ok: bool) -> str:
    """One entry of :func:`arrays` in words: 'input x (8, 3) float32 split on axis 0 -> each
    device (3,)' (a plan with problems: its in_axes as given)."""
    out, axis = a["kind"] == "output", a["axis"]
    if not ok:
        how = f"in_axes={pytrees.fmt_prefix(a['in_axes'])}"
    elif axis is None:
        how = "the same on every device" if out else "not split: every device gets all"
    else:
        how = f"device axis at {axis}" if out else f"split on axis {axis}"
    shape = tuple(a["shape"]) if isinstance(a["shape"], list) else a["shape"]
    local = a["per_device_shape"]
    each = "" if local is None else f" -> each device {fmt_tree(tuple(local))}"
    return f"{a['kind']} {a['name']} {fmt_tree(shape)} {a['dtype']} {how}{each}"


def _entry(kind: str, name: str, shape, dtype: str, axis, given, local) -> dict[str, Any]:
    return {
        "kind": kind,
        "name": name,
        "shape": list(shape) if isinstance(shape, tuple) else shape,
        "dtype": str(dtype),
        "axis": axis,  # the split axis (normalised); None: not split, or not known yet
        "in_axes": given,  # as given (an output: its out_axes)
        "per_device_shape": None if local is None else list(local),
    }


def arrays(p: Plan, inputs: list, outputs: list) -> list[dict[str, Any]]:
    """Every input and output: name, shape, dtype, axis, in_axes as given, per-device shape,
    input or output (a plan with problems: its arguments as far as the checks got, no
    outputs)."""
    if p.ok:
        given = [leaf.given_axis for leaf in p.leaves] + list(p.out_leaf_axes)
        lays = [("input", lay) for lay in inputs] + [("output", lay) for lay in outputs]
        return [
            _entry(kind, lay.name, lay.shape, lay.dtype, lay.split_axis, g, lay.local_shape)
            for (kind, lay), g in zip(lays, given, strict=True)
        ]
    if p.leaves:
        return [
            _entry("input", lf.name, lf.shape, lf.dtype, lf.axis, lf.given_axis, lf.local_shape)
            for lf in p.leaves
        ]
    return [
        _entry("input", a.name, a.shape_tree, a.dtype, None, a.in_axes, None) for a in p.arguments
    ]


def plan_data(p: Plan, inputs: list, outputs: list, rows: list, local: int) -> dict[str, Any]:
    """The view's data: the verdict, the devices, every array, the problems and the rows."""
    found = arrays(p, inputs, outputs)
    return {
        "ok": p.ok,
        "devices": p.n_devices,
        "devices_used": p.devices_used,
        "local_devices": local,
        "planned_elsewhere": p.n_devices != local,
        "call": codegen.pmap_call(p, compact=True),
        "inputs": [a for a in found if a["kind"] == "input"],
        "outputs": [a for a in found if a["kind"] == "output"],
        "problems": [{"code": q.code, "message": q.message, "fix": q.fix} for q in p.problems],
        "notes": plan_notes(p),
        "rows": [dict(r) for r in rows],
    }


def plan_text(
    p: Plan, fn: Any, name: str, inputs: list, outputs: list, rows: list, local: int
) -> str:
    """The terminal form: verdict, the call, each array and its per-device shape, the problems
    with their fixes, the notes, and the first devices' slices."""
    lines = [verdict_line(p)]
    if isinstance(fn, Program):
        lines.append(f"f({', '.join(fn.arg_names)}) = {fn.body(p.axis_name)}   [{name}]")
    lines.append(codegen.pmap_call(p, compact=True))
    lines += [f"  {array_line(a, p.ok)}" for a in arrays(p, inputs, outputs)]
    for q in p.problems:
        lines += [f"  problem: {q.message}", f"    fix: {q.fix}"]
    lines += [f"  note: {note}" for note in plan_notes(p)]
    if elsewhere := elsewhere_line(p, local):
        lines.append(f"  {elsewhere}")
    for row in rows[:TEXT_DEVICE_LINES]:
        cells = list(row.items())
        lines.append(f"  {cells[0][1]}: " + "; ".join(f"{k} {v}" for k, v in cells[1:]))
    if len(rows) > TEXT_DEVICE_LINES:
        lines.append(f"  ... {len(rows) - TEXT_DEVICE_LINES:,} more devices: view.to_frame()")
    return "\n".join(lines)


# ---------------------------------------------------------------- HTML
def _status(text: str, ok: bool) -> str:
    """The verdict as the page's green (valid) or red (not valid) box (escaped)."""
    fill, edge = ("#dafbe1", "#1a7f37") if ok else ("#ffebe9", "#cf222e")
    return (
        f"<div role='status' style='background:{fill};border-left:4px solid {edge};"
        f"padding:6px 10px;margin:6px 0'>{escape(text)}</div>"
    )


def intro(elsewhere: bool) -> str:
    """The line above the cards: where the blocks come from (as the explorer says it)."""
    where = (
        "Computed by index arithmetic for the planned devices (tested against JAX's "
        "`devices_indices_map` on real ones); more than 32 blocks are drawn as groups."
        if elsewhere
        else "Read from JAX's `NamedSharding.devices_indices_map`, the sharding pmap gives "
        "its arrays; no array is allocated."
    )
    return (
        "Blocks are coloured by device (the same colours on every page) and labelled; hover "
        f"for the exact slice. {where} Axis lengths are drawn on a log scale."
    )


def cards(p: Plan, inputs: list, outputs: list, elsewhere: bool) -> str:
    """Every input, then every output, as the explorer's cards, in one section."""
    found = [
        *((lay, ax, False) for lay, ax in zip(inputs, p.leaf_axes, strict=True)),
        *((lay, ax, True) for lay, ax in zip(outputs, p.out_leaf_axes, strict=True)),
    ]
    per_row = min(4, len(found))
    grid = arrayhtml.cards_html(found, per_row, MAIN_WIDTH_PX // per_row - 16)
    return arrayhtml.section_html("How the arrays are split", grid, intro(elsewhere))


def device_table(p: Plan, inputs: list, outputs: list, rows: list) -> str:
    """What each device holds and computes: the page's table (its first
    ``HTML_TABLE_ROWS`` rows; every row is in ``to_frame()``)."""
    title = "What each device holds and computes"
    positions = [piece.position for piece in pmapplacement.used_pieces(p, inputs, outputs)]
    shown = rows[:HTML_TABLE_ROWS]
    more = len(rows) - len(shown)
    tail = (
        notebookviews.paragraph(f"... and {more:,} more devices: every row is in view.to_frame().")
        if more > 0
        else ""
    )
    return arrayhtml.section_html(
        title, arrayhtml.table_html(shown, title, positions[: len(shown)]) + tail
    )


def plan_html(
    p: Plan, fn: Any, inputs: list, outputs: list, rows: list, local: int, notes: Sequence[str]
) -> str:
    """The view's body: the setup notes, where it is planned, the call, the verdict with each
    problem's fix, and for a valid plan the cards, the device table and the script."""
    para = notebookviews.paragraph
    parts = [para(note) for note in notes]
    elsewhere = elsewhere_line(p, local)
    if elsewhere:
        parts.append(para(elsewhere))
    parts.append(code_block_call(p))
    parts.append(_status(verdict_line(p), p.ok))
    parts += [notebookviews.problem_box(q.message, q.fix) for q in p.problems]
    parts += [para(note) for note in plan_notes(p)]
    if not p.ok:
        return "".join(parts)
    parts.append(cards(p, inputs, outputs, p.devices_used > local))
    parts.append(device_table(p, inputs, outputs, rows))
    if isinstance(fn, Program):
        parts.append(notebookviews.heading("The code: jax.pmap"))
        parts.append(notebookviews.code_block(codegen.pmap_script(fn, p), "the jax.pmap script"))
    return "".join(parts)


def code_block_call(p: Plan) -> str:
    """The pmap call as the user would write it, as a code block."""
    return notebookviews.code_block(codegen.pmap_call(p, compact=True), "the jax.pmap call")
