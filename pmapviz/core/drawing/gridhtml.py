"""Device-aligned grids as HTML: one row per label, one coloured, labelled cell per device.

Plain HTML on purpose: it draws instantly (no chart library to load), stays crisp when
projected, and is the same in a page, a notebook (``_repr_html_``) and a saved file."""

from __future__ import annotations

import html

from pmapviz.core.base.palette import MONO_CSS, device_colour, text_colour
from pmapviz.core.base.valuetext import counted
from pmapviz.core.devices import devicefacts

Rows = list[tuple[str, list[tuple[str, int | None, str]]]]


def cell(text: str, position: int | None, tooltip: str = "", mono: bool = True) -> str:
    """One cell: ``text`` on the colour of device ``position`` (grey for none), with a tooltip."""
    fill = "#EEEEEE" if position is None else device_colour(position)
    font = MONO_CSS + ";" if mono else ""
    return (
        f"<div title='{html.escape(tooltip or text, quote=True)}' style='background:{fill};"
        f"color:{text_colour(fill)};border-radius:6px;padding:8px 4px;text-align:center;"
        f"{font}font-size:0.95em;line-height:1.25;overflow:hidden'>{text}</div>"
    )


def block_grid(rows: Rows, label: str) -> str:
    """A device-aligned grid as HTML: one row per label, one column per device; a picture
    (``role="img"``) that ``label`` describes to a screen reader.

    Each cell is ``(text, device position or None, tooltip)``; text is HTML-escaped by the caller's
    data (numbers and device names). Colour comes from the app's one device palette, and every cell
    also carries text, so colour is never the only cue. Plain HTML on purpose: it draws instantly
    (no chart library to load) and stays crisp when projected.
    """
    n = max(len(cells) for _, cells in rows)
    parts = [
        f"<div role='img' aria-label='{html.escape(label, quote=True)}' style='overflow-x:auto'>"
        "<div style='display:grid;gap:4px;align-items:center;"
        f"grid-template-columns:max-content repeat({n}, minmax(56px, 1fr));margin:4px 0 12px'>"
    ]
    for label, cells in rows:
        parts.append(
            f"<div style='font-weight:600;padding-right:8px;text-align:right'>{label}</div>"
        )
        parts.extend(cell(text, pos, tip) for text, pos, tip in cells)
    parts.append("</div></div>")
    return "".join(parts)


def chips(positions: list[int | None]) -> str:
    """Small chips coloured by device position, each labelled with its number; '·' for none
    (for a cell of :func:`block_grid`)."""
    out = []
    for s in positions:
        if s is None:
            out.append("<span style='padding:0 4px;color:inherit'>·</span>")
        else:
            fill = device_colour(s)
            out.append(
                f"<span style='background:{fill};color:{text_colour(fill)};"
                f"border-radius:3px;padding:0 4px;margin:1px'>{int(s)}</span>"
            )
    return "".join(out)


def titled(title: str, detail: str) -> str:
    """A cell's text for :func:`block_grid`: a bold title over a small detail line (escaped)."""
    return f"<b>{html.escape(title)}</b><br><small>{html.escape(detail)}</small>"


def device_rows(facts: devicefacts.Facts, per_row: int = 8) -> tuple[Rows, str]:
    """Every device of a set in mesh order, rows of ``per_row`` (a cell each: its name, id and
    process, as JAX reports them), and the picture's label."""
    devices, n = facts.devices, len(facts.devices)
    rows = [
        (
            f"{start}-{min(n, start + per_row) - 1}",
            [
                (
                    titled(d.label, f"id {d.id} · process {d.process_index}"),
                    k,
                    f"{d.label}: id {d.id}, process {d.process_index}, {d.kind}",
                )
                for k, d in enumerate(devices[start : start + per_row], start)
            ],
        )
        for start in range(0, n, per_row)
    ]
    names = ", ".join(d.label for d in devices[:16]) + (" ..." if n > 16 else "")
    return rows, f"The {n} devices of this process, in mesh order: {names}"


SHOWN = 16  # entries of a mapped axis drawn in full; more are drawn with a gap


def misfit_rows(labels: tuple[str, ...], entries: int, name: str = "x") -> tuple[Rows, str]:
    """A mapped axis of ``entries`` entries dealt to the devices named ``labels`` as pmap deals
    them (entry i to device i), the entries past the last device with none to go to; rows for
    :func:`block_grid`, and the picture's label. Long axes are drawn with a gap."""
    n = len(labels)
    every = range(entries)
    shown = list(every) if entries <= SHOWN else [*every[: SHOWN - 4], None, *every[-3:]]
    cells, devices = [], []
    for i in shown:
        if i is None:  # the entries between, not drawn
            gap = f"entries {SHOWN - 4} to {entries - 4}"
            cells.append(("…", None, gap))
            devices.append(("…", None, gap))
        elif i < n:
            cells.append((f"{name}[{i}]", i, f"entry {i} of axis 0 goes to {labels[i]}"))
            devices.append((html.escape(labels[i]), i, f"{labels[i]} holds {name}[{i}]"))
        else:
            cells.append((f"{name}[{i}]", None, f"entry {i} of axis 0: no device left for it"))
            devices.append(("none left", None, f"{counted(n, 'device')}: none for {name}[{i}]"))
    there = f"there {'is' if n == 1 else 'are'} {counted(n, 'device')}"
    label = (
        f"{name}'s axis 0 has {entries} entries and {there}: pmap gives entry i to device i, "
        f"and {name}[{n}]"
        + (f" to {name}[{entries - 1}] have" if entries > n + 1 else " has")
        + " no device to go to"
    )
    return [(f"{name}, axis 0", cells), ("device", devices)], label
