"""The Meshes page's view for notebooks: a named mesh and where each array's blocks go under
``NamedSharding(mesh, PartitionSpec)``, before anything runs.

``mesh((2, 4), ("data", "model"), {"x": ((8, 16), ("data", None))})`` checks every array with
:func:`pmapviz.features.meshes.meshspecs.problems` (what JAX would refuse, each with a fix: shown as
problem boxes, not raised), places the others with
:func:`pmapviz.features.meshes.meshplacement.place` (read from JAX's ``devices_indices_map`` on this
process's devices; planned by index arithmetic for a mesh bigger than this process) and draws them
as the page does (:mod:`pmapviz.features.meshes.meshgrids`).
"""

from __future__ import annotations

from typing import Any

from pmapviz.core.base.valueparse import SettingError, parse_shape
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import gridhtml, notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.features.meshes import meshgrids, meshplacement, meshspecs, meshtypes
from pmapviz.features.meshes.meshspecs import Entry, Mesh, spec_text

MAX_ARRAYS = 16
MAX_LISTED = 64  # devices listed per array in the text; data has every one


def mesh(shape: Any, axis_names: Any, arrays: Any, axis_types: Any = None) -> View:
    """Where each array's blocks go on a named mesh, as the Meshes page draws it, and each
    array's type under the mesh's axis types as ``jax.typeof`` prints it.

    ``shape``: the mesh's axis sizes, ``(2, 4)`` or ``"2x4"``; ``axis_names``: one name per
    axis, ``("data", "model")`` or ``"data, model"``; ``axis_types``: one per axis,
    ``("explicit", "auto")``, ``"explicit, auto"`` or ``jax.sharding.AxisType`` members (None:
    Explicit for every axis, as ``jax.make_mesh`` gives; Manual is read inside
    ``jax.shard_map``); ``arrays``: a dict ``{name: (global
    shape, spec)}`` or a list of ``(global shape, spec)`` pairs (named ``argument 1``, ...).
    A shape is a tuple of ints or text (``"8, 16"``); a spec is a tuple of entries (None, an
    axis name or a tuple of names), a ``jax.sharding.PartitionSpec``, text
    (``"P('data', None)"``) or None (``P()``: replicated).

    What JAX would refuse (an unknown axis, an axis used twice, a spec longer than the rank,
    an indivisible dimension) is shown as a problem box with its fix and listed in
    ``data["problems"]``; text that cannot be read raises ``ValueError`` with the parser's
    message. ``data``: ``mesh`` (the sizes), ``axis_names``, ``devices``, ``planned`` (True
    when the mesh has more devices than this process: placed by index arithmetic),
    ``notes``, ``problems``, ``arrays`` (per name: ``shape``, ``spec``, ``local_shape``,
    ``replicated_over``, ``rows``, and, read from JAX, ``type`` and ``per_device_type``: inside
    ``jax.shard_map`` over the Manual axes, every axis when none is) and ``rows`` (every
    array's, each with ``array``), a row per device in mesh order: ``device`` (its id),
    ``coords``, ``index``; ``axis_types``: the mesh's, and ``jax.make_mesh``'s and
    ``Mesh(...)``'s defaults as read from JAX."""
    notes = notebookviews.ready()
    m = _mesh(shape, axis_names, axis_types)
    named = _arrays(arrays)
    here = len(devicefacts.local_devices_for_work())
    fine = [(n, s, p) for n, s, p in named if not meshspecs.problems(m, s, p, n)]
    typed = meshtypes.read(m, fine)
    types = {t.name: t for t in typed.args}
    sections = [_section(m, name, shp, spec, types.get(name)) for name, shp, spec in named]
    data = {
        "mesh": m.shape,
        "axis_names": m.names,
        "axis_types": {
            "mesh": m.axis_types,
            "jax.make_mesh": typed.make_mesh_default,
            "Mesh": typed.mesh_default,
        },
        "devices": m.devices,
        "planned": m.devices > here,
        "notes": list(notes),
        "problems": [p for _, _, d in sections for p in d["problems"]],
        "arrays": {name: d for (name, _, _), (_, _, d) in zip(named, sections, strict=True)},
        "rows": [
            {"array": name, **r}
            for (name, _, _), (_, _, d) in zip(named, sections, strict=True)
            for r in d["rows"]
        ],
    }
    intro = [notebookviews.paragraph(n) for n in notes] + [
        notebookviews.paragraph(_types_words(typed))
    ]
    if m.devices > here:
        intro.append(notebookviews.paragraph(_planned_words(m, here)))
    title = f"Mesh {m.text()} ({m.devices} device{'s' if m.devices != 1 else ''})"
    lines = [_types_words(typed)] + ([_planned_words(m, here)] if m.devices > here else [])
    text = "\n".join([*lines, *(t for _, t, _ in sections)])
    return View(title, "".join(intro + [b for b, _, _ in sections]), text, data)


def _planned_words(m: Mesh, here: int) -> str:
    return (
        f"The mesh has {m.devices} devices and this process {here}: the placement below is "
        "planned from shapes alone (index arithmetic, checked against JAX in tests)."
    )


def _types_words(typed: meshtypes.MeshTypes) -> str:
    """The mesh's axis types beside the two constructors' defaults, as read from JAX."""
    words = lambda ts: ", ".join(t.capitalize() for t in ts)  # noqa: E731
    return (
        f"Axis types {words(typed.mesh.axis_types)} (jax.make_mesh's default: "
        f"{words(typed.make_mesh_default)}; jax.sharding.Mesh(...)'s: "
        f"{words(typed.mesh_default)}). Per-device types are read inside jax.shard_map over "
        f"{', '.join(typed.shard_map_axes)}."
    )


# ---------------------------------------------------------------- reading the arguments
def _mesh(shape: Any, axis_names: Any, axis_types: Any = None) -> Mesh:
    """The mesh from its sizes, names and axis types, each given as a tuple or as text."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    text = "x".join(str(s) for s in shape) if isinstance(shape, tuple | list) else shape
    sizes = meshspecs.parse_mesh(text, "mesh shape")
    names = axis_names
    if isinstance(axis_names, tuple | list):
        names = ", ".join(str(n) for n in axis_names)
    types = axis_types
    if isinstance(axis_types, tuple | list):
        types = ", ".join(getattr(t, "name", str(t)) for t in axis_types)
    elif axis_types is not None and not isinstance(axis_types, str):
        types = getattr(axis_types, "name", str(axis_types))  # one AxisType for a 1-axis mesh
    parsed = meshspecs.parse_axis_types(types or "", len(sizes), "axis_types")
    return Mesh(sizes, meshspecs.parse_axis_names(names, len(sizes)), parsed)


def _arrays(arrays: Any) -> list[tuple[str, tuple[int, ...], tuple[Entry, ...]]]:
    """``[(name, global shape, spec)]`` from a dict or a list of ``(shape, spec)`` pairs."""
    if isinstance(arrays, dict):
        items = [(str(k), v) for k, v in arrays.items()]
    elif isinstance(arrays, list | tuple):
        items = [(f"argument {k + 1}", v) for k, v in enumerate(arrays)]
    else:
        raise ValueError(
            f"arrays is a {type(arrays).__name__}; give a dict {{name: (shape, spec)}}, like "
            "{'x': ((8, 16), ('data', None))}, or a list of (shape, spec) pairs."
        )
    if not items:
        raise ValueError(
            "arrays is empty: give at least one, like {'x': ((8, 16), ('data', None))}."
        )
    if len({k for k, _ in items}) != len(items):
        raise ValueError("arrays names two arrays alike; give each its own name.")
    if len(items) > MAX_ARRAYS:
        raise ValueError(f"arrays has {len(items)} arrays; at most {MAX_ARRAYS}.")
    out = []
    for name, pair in items:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise ValueError(
                f"{name} should be a (shape, spec) pair, like ((8, 16), ('data', None)); "
                f"it is {pair!r:.60}."
            )
        out.append((name, _shape(pair[0], name), _spec(pair[1], name)))
    return out


def _shape(shape: Any, name: str) -> tuple[int, ...]:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, tuple | list):
        shape = "(" + ", ".join(str(d) for d in shape) + ")"
    return parse_shape(shape, f"the shape of {name}")


def _spec(spec: Any, name: str) -> tuple[Entry, ...]:
    """A spec as entries: from text, a tuple or list, or a JAX PartitionSpec."""
    what = f"the spec of {name}"
    if spec is None:
        return ()
    if isinstance(spec, str):
        return meshspecs.parse_spec(spec, what)
    if type(spec).__module__.split(".")[0] in ("jax", "jaxlib"):  # a PartitionSpec
        spec = tuple(spec)
    if not isinstance(spec, tuple | list):
        raise SettingError(
            f"{what} is a {type(spec).__name__}; write it like ('data', None) or P('data', None)."
        )
    return tuple(_entry(e, what) for e in spec)


def _entry(e: Any, what: str) -> Entry:
    if e is None or isinstance(e, str):
        return e
    if isinstance(e, tuple | list) and all(isinstance(a, str) for a in e):
        return tuple(e)
    raise SettingError(
        f"{what}: {e!r:.40} is not an entry of a PartitionSpec; each entry is None, an axis "
        "name, or a tuple of axis names."
    )


# ---------------------------------------------------------------- one array
def _section(
    m: Mesh,
    name: str,
    shape: tuple[int, ...],
    spec: tuple[Entry, ...],
    typed: meshtypes.ArgTypes | None = None,
):
    """One array's HTML, text and data: its problems, or its types, grid and tiles."""
    head = f"{name}: {fmt_shape(shape)} {spec_text(spec)}"
    found = meshspecs.problems(m, shape, spec, name)
    if found:
        probs = [{"array": name, "code": p.code, "message": p.message, "fix": p.fix} for p in found]
        data = {"shape": shape, "spec": spec_text(spec), "problems": probs, "rows": []}
        body = notebookviews.heading(head) + "".join(
            notebookviews.problem_box(p.message, p.fix) for p in found
        )
        text = "\n".join([head, *(f"  problem: {p.message} Fix: {p.fix}" for p in found)])
        return body, text, data
    placed = meshplacement.place(m, shape, spec)
    rows = [
        {"device": b.device, "coords": b.coords, "index": _index(b.index)} for b in placed.blocks
    ]
    words = _words(placed)
    said = f" jax.typeof: {typed.yours}; each device's block: {typed.per_device}." if typed else ""
    data = {
        "shape": shape,
        "spec": spec_text(spec),
        "local_shape": placed.local_shape,
        "replicated_over": placed.replicated_over,
        "type": typed.yours if typed else None,
        "per_device_type": typed.per_device if typed else None,
        "problems": [],
        "rows": rows,
    }
    return _body(placed, name, head, words, said), _text(m, head, words + said, rows), data


def _index(index: tuple[tuple[int, int], ...]) -> str:
    """A block's [start, stop) per dimension as the grid writes it: '[0:4, 0:16]'."""
    return "[" + ", ".join(f"{a}:{b}" for a, b in index) + "]"


def _words(placed: meshplacement.Placement) -> str:
    """What each device holds, and the axes (of more than one device) that copy it."""
    size = placed.mesh.size
    over = [a for a in placed.replicated_over if size[a] > 1]
    if placed.mesh.devices == 1:
        return f"The mesh's one device holds all of it, {fmt_shape(placed.local_shape)}."
    if over:
        rep = f"; replicated over {', '.join(over)}"
    else:
        rep = "; every device holds a different block"
    return f"Each device holds {fmt_shape(placed.local_shape)}{rep}."


def _body(placed: meshplacement.Placement, name: str, head: str, words: str, said: str = "") -> str:
    parts = [notebookviews.heading(head), notebookviews.paragraph(words + said)]
    parts.append(
        gridhtml.block_grid(
            meshgrids.mesh_rows(placed),
            f"{name} {fmt_shape(placed.shape)} placed by {spec_text(placed.spec)} on the mesh "
            f"{placed.mesh.text()}: {words}",
        )
    )
    if placed.shape:
        parts.append(notebookviews.paragraph(f"The tiles of {name}: which devices hold each:"))
        parts.append(
            gridhtml.block_grid(
                meshgrids.tile_rows(placed), f"the distinct blocks of {name} and their devices"
            )
        )
    return "".join(parts)


def _text(m: Mesh, head: str, words: str, rows: list[dict]) -> str:
    """The array for a terminal: heading and words, then a line per device."""
    lines = [f"{head}. {words}"]
    at = [", ".join(f"{n}={c}" for n, c in zip(m.names, r["coords"], strict=True)) for r in rows]
    width = max(len(a) for a in at)
    for r, a in list(zip(rows, at, strict=True))[:MAX_LISTED]:
        lines.append(f"  device {r['device']:<4} {a.ljust(width)}  {r['index']}")
    if len(rows) > MAX_LISTED:
        lines.append(f"  ... and {len(rows) - MAX_LISTED} more devices")
    return "\n".join(lines)
