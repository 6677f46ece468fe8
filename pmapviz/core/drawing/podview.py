"""A pod compile as a notebook view: the slice's chips in their hosts, the figures, and every
collective (``pmapviz.compiled(f, *args, topology=...)`` and ``pmapviz.pod_sweep(...)``).

HTML without Plotly (a notebook view is self-contained): each host a box of its chips at their
coordinates, each chip colored by the group of the first collective with several groups.
"""

from __future__ import annotations

from pmapviz.core.base.palette import text_colour
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View, escape
from pmapviz.core.pods import commmodel
from pmapviz.core.pods.commmodel import MODEL_NAME
from pmapviz.core.pods.podreport import PodReport, fmt_gib, fmt_seconds

_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D")


def figures(r: PodReport) -> list[dict]:
    """The report's figures as (what, value, from where) rows."""
    at = r.at_batch()
    batch = (
        []
        if r.batch is None
        else [
            {
                "what": "batch",
                "value": f"{r.batch:,} {r.batch_words}"
                + ("" if r.asked_batch in (None, r.batch) else f" ({r.asked_batch:,} asked)"),
                "from": "the lowered program's arguments",
            }
        ]
    )
    return [
        {"what": "slice", "value": r.summary, "from": "libtpu's topology"},
        {"what": "program", "value": r.label, "from": "the lowered program's arguments"},
        *batch,
        {"what": "memory per device" + at, "value": r.fit_words(), "from": "memory_analysis()"},
        {
            "what": "FLOPs per device" + at,
            "value": f"{r.flops or 0:,.0f}",
            "from": "cost_analysis()",
        },
        {
            "what": "bytes accessed per device" + at,
            "value": f"{r.bytes_accessed or 0:,.0f}",
            "from": "cost_analysis()",
        },
        {
            "what": "compute + HBM time",
            "value": fmt_seconds(r.optimal_s)
            + ("" if r.optimal_s is not None else " (libtpu has no cost model for it)"),
            "from": "cost_analysis()['optimal_seconds']",
        },
        {"what": "communication time", "value": fmt_seconds(r.comm_s), "from": MODEL_NAME},
        {
            "what": "one step, both added",
            "value": fmt_seconds(r.total_s),
            "from": "the compiler's estimate + the model (no overlap assumed)",
        },
        {"what": "compile", "value": f"{r.compile_s:.2f} s", "from": "this machine's libtpu"},
    ]


def collective_rows(r: PodReport) -> list[dict]:
    """One row per collective: kind, shape, bytes, groups, hosts crossed, modelled time."""
    return [
        {
            "kind": c.kind,
            "shape": c.shape,
            "bytes per device": fmt_gib(c.bytes),
            "groups": f"{len(c.groups)} of {c.group_size}",
            "devices in each group": groups_text(c.groups, c.kind == "collective-permute"),
            "crossing hosts": c.crossing,
            "time (model)": fmt_seconds(c.model_s),
            "span": c.model_how,
            "compiler's algorithm": c.algorithm or "(none named)",
            "source": c.source_line or "",
        }
        for c in r.collectives
    ]


def groups_text(groups: tuple[tuple[int, ...], ...], pairs: bool = False, limit: int = 120) -> str:
    """'0 1 2 3 | 4 5 6 7' (pairs: '0->1 | 1->2'), cut at ``limit`` characters."""
    text = " | ".join(("->" if pairs else " ").join(map(str, g)) for g in groups)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def chip_html(r: PodReport) -> str:
    """Each host a box of its chips at their coordinates, each chip labelled with its device
    ids (hover: coordinates and host) and coloured by its group in the first collective that
    has groups, with one line saying what it shows: large enough for a projector."""
    coll = next((c for c in r.collectives if len(c.groups) > 1), None) or next(
        (c for c in r.collectives if c.groups), None
    )
    said = f"{r.summary}" + (
        f"; {coll.kind} {coll.shape} in {len(coll.groups)} group(s) of {coll.group_size}, "
        f"{coll.crossing} crossing hosts"
        if coll
        else "; no collective"
    )
    return slice_html(r.chips, said, coll.groups if coll else ())


def slice_html(chips, said: str, groups: tuple[tuple[int, ...], ...] = ()) -> str:
    """The slice's ``chips`` (:class:`~pmapviz.core.pods.podtopology.Chip`) in their hosts,
    coloured by ``groups``, over the line ``said``: drawn from the topology alone before a
    compile, and from the report after it (:func:`chip_html`)."""
    color = {d: _COLORS[k % len(_COLORS)] for k, g in enumerate(groups) for d in g}
    by_coords: dict[tuple, list] = {}
    for chip in chips:
        by_coords.setdefault(chip.coords, []).append(chip)
    hosts: dict[int, list] = {}
    for coords, on in sorted(by_coords.items(), key=lambda kv: (kv[1][0].host, kv[0])):
        hosts.setdefault(on[0].host, []).append((coords, on))
    n = len(by_coords)
    size = 40 if n <= 16 else 28 if n <= 64 else 12
    boxes = [_host_box(host, on, color, size) for host, on in hosts.items()]
    line = f"<div style='font-size:13px;color:#57606a;margin:2px 3px 6px'>{escape(said)}</div>"
    return f"<div role='img' aria-label='{escape(said)}'>{''.join(boxes)}{line}</div>"


def _host_box(host: int, chips: list, color: dict, size: int) -> str:
    """One host: a grid of its chips at their coordinates (z-planes stacked down)."""
    xs = sorted({c[0] for c, _ in chips})
    ys = sorted({(c[2], c[1]) for c, _ in chips})
    cells = []
    for c, on in chips:
        ids = ", ".join(str(ch.id) for ch in on)
        fill = color.get(on[0].id, "#cfd8e3")
        label = escape(ids) if size >= 28 else ""
        cells.append(
            f"<div title='device {escape(ids)} at {escape(c)}, host {host}' style='grid-column:"
            f"{xs.index(c[0]) + 1};grid-row:{ys.index((c[2], c[1])) + 1};width:{size}px;"
            f"height:{size}px;background:{fill};color:{text_colour(fill)};border-radius:4px;"
            f"display:flex;align-items:center;justify-content:center;font-size:12px'>"
            f"{label}</div>"
        )
    return (
        "<div style='display:inline-block;border:1px solid #8c959f;border-radius:6px;"
        "padding:4px;margin:3px;vertical-align:top'>"
        f"<div style='font-size:12px'>host {host}</div><div style='display:grid;gap:3px'>"
        + "".join(cells)
        + "</div></div>"
    )


def report_view(r: PodReport) -> View:
    """The view of one compile for a slice."""
    body = (
        "".join(notebookviews.notice_box(line) for line in (*r.change_lines(), *r.notes))
        + chip_html(r)
        + notebookviews.heading("What the compiled program says")
        + notebookviews.table(figures(r), "figures")
        + notebookviews.heading("The collectives XLA emitted, on the slice's chips")
        + (
            notebookviews.table(collective_rows(r), "collectives")
            or notebookviews.paragraph("None: every chip works on its own block.")
        )
        + notebookviews.code_block(r.code, "the program")
    )
    data = r.to_dict()
    data["rows"] = collective_rows(r)
    return View(f"{r.label} on {r.topology}", body, "\n".join(r.lines()), data, r)


def sweep_rows(reports: list[PodReport]) -> list[dict]:
    """One row per slice: chips, hosts, the estimate, the model, the links the model gave the
    slowest collective ('line x line (2 links)'), the total, fits."""
    first = reports[0].total_s if reports else None
    return [
        {
            "topology": r.topology,
            "chips": len({c.coords for c in r.chips}),
            "hosts": len({c.host for c in r.chips}),
            **({} if r.batch is None else {"batch compiled": batch_text(r)}),
            "compute + HBM": fmt_seconds(r.optimal_s),
            "communication (model)": fmt_seconds(r.comm_s),
            "links (model)": commmodel.link_words(commmodel.links_used(r)) or "n/a",
            "total": fmt_seconds(r.total_s),
            "speed-up": f"{first / r.total_s:.2f}x" if first and r.total_s else "n/a",
            "memory": r.fit_words(),
        }
        for r in reports
    ]


def batch_text(r: PodReport) -> str:
    """'10,000,128 (10,000,000 asked, rounded up to divide 256)', or the batch alone."""
    if r.asked_batch in (None, r.batch):
        return f"{r.batch:,}"
    why = "the largest that fits" if r.refusal else f"rounded up to divide {r.mesh_axes[0][1]}"
    return f"{r.batch:,} ({r.asked_batch:,} asked, {why})"


def sweep_switches(reports: list[PodReport]) -> list[str]:
    """Where the model's links change from one slice to the next, a sentence each, written
    from the reports' own links and communication (:func:`commmodel.switches`)."""
    rows = [
        {"topology": r.topology, "communication_s": r.comm_s, **commmodel.links_used(r)}
        for r in reports
    ]
    return commmodel.switches(rows, fmt_seconds)


def sweep_view(reports: list[PodReport]) -> View:
    """The view of one program swept over slice sizes."""
    rows, said = sweep_rows(reports), sweep_switches(reports)
    label = (reports[0].title or reports[0].label) if reports else "nothing"
    text = "\n".join([" | ".join(f"{k}: {v}" for k, v in row.items()) for row in rows] + said)
    data = {"rows": rows, "switches": said, "reports": [r.to_dict() for r in reports]}
    body = (
        notebookviews.paragraph(
            "compute + HBM: the compiler's estimate; communication: " + MODEL_NAME
        )
        + notebookviews.table(rows, "the sweep")
        + "".join(notebookviews.paragraph(line) for line in said)
    )
    return View(
        f"{label}: one step from {rows[0]['chips']} to {rows[-1]['chips']} chips"
        if rows
        else label,
        body,
        text,
        data,
    )
