"""A real ``jax.Array`` (or a pytree of them) drawn as its sharding really is, for notebooks.

``show(x)`` reads every number from the array itself, never from a plan: the sharding's
``devices_indices_map(x.shape)`` says which block of the global array each device holds, and
``x.addressable_shards`` the shape of the data each device of this process really has. A
``NamedSharding`` is drawn at its mesh coordinates; any other sharding (one device, or a
sharding without a mesh) as one row of devices sorted by id. No data is copied or moved: only
shapes, indices and devices are read. JAX is imported inside the functions: the argument is
already a ``jax.Array``, so JAX is already loaded when one is shown.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base.palette import device_colour, text_colour
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.drawing import gridhtml, notebookviews
from pmapviz.core.drawing.notebookviews import View, escape
from pmapviz.core.planning.pmapplacement import index_text

MAX_LISTED = 64  # devices listed in a section's table and text; data["rows"] has every one


@dataclass(frozen=True)
class _ShardHeld:
    """One device's block: the JAX device, its place (colour) and mesh coordinates, the index
    JAX gives it, and the shape of the data it holds here (None: in another process)."""

    device: Any
    position: int
    coords: tuple[int, ...] | None
    index: tuple
    shape: tuple[int, ...] | None

    @property
    def index_text(self) -> str:
        """The block as you would index the global array: '[0:2, :]'."""
        return index_text(self.index)


def show(x: Any, name: str = "x") -> View:
    """A view of ``x``, a ``jax.Array`` or a pytree of them (one section per leaf, named as you
    would index it: ``x['a']``, ``x[0]``), drawn as its sharding really is: the sharding in
    words, the device grid (at mesh coordinates for a ``NamedSharding``, else one row sorted by
    device id), the distinct blocks with the devices holding each, and a table per device.

    ``data``: ``name``, ``shape``, ``dtype``, ``sharding`` (``str`` of the sharding),
    ``summary`` (the words), ``mesh`` (``{axis: size}`` or None), ``not_here`` (ids of devices
    in other processes) and ``rows``: one per device of this process, ``{"device", "id",
    "index", "shape"}``, in mesh order (row-major over the mesh's devices) for a
    ``NamedSharding``, else in device-id order. For a pytree, ``data["leaves"]`` holds one
    such dict per leaf and ``rows`` all their rows, each with its leaf's name as ``array``.
    Raises ``ValueError`` for anything that is not a ``jax.Array`` or a pytree of them."""
    leaves = _leaves(x, str(name))
    if len(leaves) == 1 and leaves[0][1] is x:
        body, text, data = _section(x, str(name), titled=False)
        return View(_title(x, str(name)), body, text, data, source=x)
    parts = [_section(leaf, leaf_name, titled=True) for leaf_name, leaf in leaves]
    rows = [{"array": d["name"], **r} for _, _, d in parts for r in d["rows"]]
    data = {"name": str(name), "leaves": [d for _, _, d in parts], "rows": rows}
    title = f"{name}: a pytree of {len(leaves)} array{'s' if len(leaves) != 1 else ''}"
    text = "\n\n".join(
        f"{_title(leaf, n)}\n{t}" for (n, leaf), (_, t, _) in zip(leaves, parts, strict=True)
    )
    return View(title, "".join(b for b, _, _ in parts), text, data, source=x)


def _title(arr: Any, name: str) -> str:
    return f"{name}: {fmt_shape(tuple(arr.shape))} {arr.dtype}"


# ---------------------------------------------------------------- what was given
def _leaves(x: Any, name: str) -> list[tuple[str, Any]]:
    """``[(leaf name, array)]`` of ``x``: itself when it is one array, else its pytree's leaves
    in JAX's order; raises ValueError for anything else."""
    if "jax" not in sys.modules:  # no jax.Array can exist yet: do not start JAX to say so
        raise _not_an_array(x, name)
    import jax

    if isinstance(x, jax.Array):
        _check_concrete(x, name)
        return [(name, x)]
    flat, _ = jax.tree_util.tree_flatten_with_path(x)
    if not flat:
        raise ValueError(
            f"show() takes a jax.Array or a pytree of them; {name} holds no arrays ({_what(x)})."
        )
    out = []
    for path, leaf in flat:
        leaf_name = name + jax.tree_util.keystr(path)
        if not isinstance(leaf, jax.Array):
            within = f"{name} is {_what(x)} and " if path else ""
            raise _not_an_array(leaf, leaf_name, within)
        _check_concrete(leaf, leaf_name)
        out.append((leaf_name, leaf))
    return out


def _check_concrete(arr: Any, name: str) -> None:
    import jax

    if isinstance(arr, jax.core.Tracer):
        raise ValueError(
            f"{name} is a traced value (inside jax.jit, pmap, grad or vmap): where its blocks "
            "go is decided when the program compiles. Call show() on the result, outside the "
            "transformed function (inside it, jax.debug.inspect_array_sharding reports it)."
        )
    if arr.is_deleted():
        raise ValueError(
            f"{name} has been deleted (x.delete(), or donated to a jitted call): it has no "
            "blocks to show. Show the array that replaced it."
        )


def _what(x: Any) -> str:
    kind = type(x)
    where = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
    shape = getattr(x, "shape", None)
    of = f" of shape {fmt_shape(tuple(shape))}" if isinstance(shape, tuple) else ""
    said = f"{where}{kind.__qualname__}{of}"
    return f"{'an' if said[:1].lower() in 'aeiou' else 'a'} {said}"


def _not_an_array(x: Any, name: str, within: str = "") -> ValueError:
    hint = (
        f" Put it on the devices first: show(jax.device_put({name}))."
        if type(x).__module__.split(".")[0] == "numpy"
        else ""
    )
    return ValueError(
        f"show() takes a jax.Array or a pytree of them; {within}{name} is {_what(x)}.{hint}"
    )


# ---------------------------------------------------------------- the truth, from the array
def _mesh_of(arr: Any):
    """The sharding's concrete mesh for a ``NamedSharding`` (its devices at coordinates), else
    None."""
    import jax

    sharding = arr.sharding
    if isinstance(sharding, jax.sharding.NamedSharding):
        mesh = sharding.mesh
        return mesh if hasattr(mesh, "devices") else None
    return None


def _held(arr: Any, mesh) -> list[_ShardHeld]:
    """Every device's block, from ``devices_indices_map``, with the data shape of the shards
    this process holds (``addressable_shards``); mesh order, else by device id."""
    where = arr.sharding.devices_indices_map(tuple(arr.shape))
    here = {s.device: tuple(s.data.shape) for s in arr.addressable_shards}
    if mesh is not None:
        import numpy as np

        grid = mesh.devices
        placed = [(tuple(int(c) for c in at), grid[at]) for at in np.ndindex(*grid.shape)]
    else:
        placed = [(None, d) for d in sorted(where, key=lambda d: d.id)]
    return [
        _ShardHeld(dev, k, coords, tuple(where[dev]), here.get(dev))
        for k, (coords, dev) in enumerate(placed)
    ]


PMAP_AXIS = "_internal_pmap_axis_name"  # the mesh axis jax.pmap's outputs are sharded over


def _pmap_axis(spec: Any) -> str:
    """Which axis of a pmap output its devices split: where the pmap axis sits in the spec."""
    at = [k for k, e in enumerate(spec) if e is not None and PMAP_AXIS in _axes(e)]
    return str(at[0]) if at else "none (replicated)"


def _summary(arr: Any, mesh, held: list[_ShardHeld]) -> str:
    """The sharding in words: its kind, what each device holds, what is replicated."""
    sharding = arr.sharding
    kind = type(sharding).__name__
    if mesh is not None and tuple(mesh.axis_names) == (PMAP_AXIS,):
        head = (
            f"jax.pmap's output: {kind} over its own 1-D mesh of {mesh.devices.size} device(s) "
            f"(axis {PMAP_AXIS!r}), split along axis {_pmap_axis(sharding.spec)}"
        )
    elif mesh is not None:
        names = tuple(mesh.axis_names)
        head = f"{kind} over mesh {tuple(mesh.devices.shape)} {names} with {sharding.spec}"
    elif len(held) == 1:
        head = f"{kind} on {held[0].device}"
    else:
        head = f"{kind} over {len(held)} devices"
    shapes = sorted({h.shape for h in held if h.shape is not None})
    shapes = shapes or [tuple(sharding.shard_shape(tuple(arr.shape)))]  # none held here
    each = " or ".join(fmt_shape(s) for s in shapes)
    if len(held) == 1:
        return f"{head}; it holds all of it, shape {each}"
    return f"{head}; each device holds shape {each}; {_replication(arr, mesh, held)}"


def _replication(arr: Any, mesh, held: list[_ShardHeld]) -> str:
    distinct = len({h.index_text for h in held})
    if distinct == len(held):
        return "every device holds a different block"
    if mesh is not None:
        used = {a for e in arr.sharding.spec if e is not None for a in _axes(e)}
        over = [str(a) for a, n in mesh.shape.items() if a not in used and n > 1]
        if over:
            return f"replicated over {', '.join(over)}"
    if distinct == 1:
        return "replicated: every device holds all of it"
    return f"replicated: each block is on {len(held) // distinct} devices"


def _axes(entry: Any) -> tuple:
    return tuple(entry) if isinstance(entry, tuple | list) else (entry,)


# ---------------------------------------------------------------- drawing
def _grid_rows(held: list[_ShardHeld], mesh) -> gridhtml.Rows:
    """The device grid: a row per coordinate of the mesh's first axis (a 1-D mesh, or no
    mesh: one row), a cell per device with its id and block; grey where not in this process."""
    names = [str(a) for a in mesh.axis_names] if mesh is not None else []
    rows: dict[str, list] = {}
    for h in held:
        if len(names) >= 2:
            label = escape(f"{names[0]}={h.coords[0]}")
        else:
            label = escape(names[0]) if names else "devices"
        at = (
            " at " + ", ".join(f"{n}={c}" for n, c in zip(names, h.coords, strict=True))
            if names
            else ""
        )
        gone = "" if h.shape is not None else " (another process: its data is not here)"
        tip = f"{h.device}{at}: holds {h.index_text}{gone}"
        title = f"device {h.device.id}" + ("" if h.shape is not None else " (not here)")
        position = h.position if h.shape is not None else None
        rows.setdefault(label, []).append((gridhtml.titled(title, h.index_text), position, tip))
    return list(rows.items())


def _bounds(index: tuple, shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple(
        s.indices(n)[:2] if isinstance(s, slice) else (int(s), int(s) + 1)
        for s, n in zip(index, shape, strict=True)
    )


def _chip(h: _ShardHeld) -> str:
    """A small chip labelled with the device's id, in its colour in the grid (grey: not here)."""
    fill = device_colour(h.position) if h.shape is not None else "#EEEEEE"
    return (
        f"<span style='background:{fill};color:{text_colour(fill)};border-radius:3px;"
        f"padding:0 4px;margin:1px'>{int(h.device.id)}</span>"
    )


def _tile_rows(held: list[_ShardHeld], shape: tuple[int, ...]) -> gridhtml.Rows:
    """The distinct blocks, a row per range of the first dimension that is split, each with
    the devices holding it (more than one: the block is replicated)."""
    holders: dict[str, list[_ShardHeld]] = {}
    for h in held:
        holders.setdefault(h.index_text, []).append(h)
    bounds = {t: _bounds(hs[0].index, shape) for t, hs in holders.items()}
    split = [d for d in range(len(shape)) if len({b[d] for b in bounds.values()}) > 1]
    rows: dict[str, list] = {}
    for text in sorted(holders, key=lambda t: bounds[t]):
        if split:
            a, b = bounds[text][split[0]]
            label = f"rows {a}:{b}" if split[0] == 0 else f"dim {split[0]} {a}:{b}"
        else:
            label = "all"
        hs = holders[text]
        ids = [h.device.id for h in hs]
        cell = f"<small>{escape(text)}</small><br>{''.join(_chip(h) for h in hs)}"
        rows.setdefault(label, []).append((cell, None, f"held by devices {ids}"))
    return list(rows.items())


def _section(arr: Any, name: str, titled: bool) -> tuple[str, str, dict]:
    """One array's HTML, text and data."""
    mesh = _mesh_of(arr)
    held = _held(arr, mesh)
    words = _summary(arr, mesh, held)
    rows = [
        {"device": str(h.device), "id": h.device.id, "index": h.index_text, "shape": h.shape}
        for h in held
        if h.shape is not None
    ]
    missing = [h.device.id for h in held if h.shape is None]
    data = {
        "name": name,
        "shape": tuple(arr.shape),
        "dtype": str(arr.dtype),
        "sharding": str(arr.sharding),
        "summary": words,
        "mesh": {str(a): int(n) for a, n in mesh.shape.items()} if mesh is not None else None,
        "not_here": missing,
        "rows": rows,
    }
    body = _body(arr, name, held, mesh, words, rows, missing, titled)
    return body, _text(words, rows, missing), data


def _body(arr, name, held, mesh, words, rows, missing, titled) -> str:
    shape = tuple(arr.shape)
    parts = [notebookviews.heading(_title(arr, name))] if titled else []
    parts.append(notebookviews.paragraph(words + "."))
    if missing:
        parts.append(notebookviews.paragraph(_missing_words(held, missing)))
    where = "at its mesh coordinates" if mesh is not None else "sorted by id"
    parts.append(
        gridhtml.block_grid(
            _grid_rows(held, mesh),
            f"the devices holding {name} {fmt_shape(shape)}, {where}: each device's id and "
            f"the block it holds; {words}",
        )
    )
    parts.append(notebookviews.paragraph(f"The distinct blocks of {name} and who holds each:"))
    parts.append(gridhtml.block_grid(_tile_rows(held, shape), f"the distinct blocks of {name}"))
    parts.append(notebookviews.table(rows[:MAX_LISTED], f"each device's block of {name}"))
    if len(rows) > MAX_LISTED:
        parts.append(notebookviews.paragraph(f"... and {len(rows) - MAX_LISTED} more devices."))
    return "".join(parts)


def _missing_words(held: list[_ShardHeld], missing: list[int]) -> str:
    return (
        f"This process holds {len(held) - len(missing)} of the {len(held)} devices' blocks; "
        f"devices {missing} belong to other processes: their blocks are drawn from the "
        "sharding, their data is not here."
    )


def _text(words: str, rows: list[dict], missing: list[int]) -> str:
    """The section for a terminal (under its title): the words, then a line per device."""
    lines = [words]
    width_d = max((len(r["device"]) for r in rows), default=0)
    width_i = max((len(r["index"]) for r in rows), default=0)
    for r in rows[:MAX_LISTED]:
        lines.append(
            f"  {r['device'].ljust(width_d)}  {r['index'].ljust(width_i)}  {fmt_shape(r['shape'])}"
        )
    if len(rows) > MAX_LISTED:
        lines.append(f"  ... and {len(rows) - MAX_LISTED} more devices")
    if missing:
        lines.append(f"  not in this process: devices {missing}")
    return "\n".join(lines)
