"""A pod compile as a notebook view: the slice's chips in their hosts, the figures, and every
collective (``pmapviz.compiled(f, *args, topology=...)`` and ``pmapviz.pod_sweep(...)``).

HTML without Plotly (a notebook view is self-contained): each host a box of its chips at their
coordinates, each chip colored by the group of the first collective with several groups.
"""

from __future__ import annotations

from pmapviz.core.base.palette import text_colour
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View, escape
from pmapviz.core.drawing.podshapes import drawn_slices, drawn_words
from pmapviz.core.pods import commmodel
from pmapviz.core.pods.commmodel import MODEL_NAME
from pmapviz.core.pods.podreport import PodReport, fmt_gib, fmt_seconds

_WHERE = {"ICI": "inside each slice", "DCN": "between slices"}
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
        *(
            []
            if r.optimal_s is not None or r.roofline_s is None
            else [
                {
                    "what": "compute + HBM, estimated",
                    "value": fmt_seconds(r.roofline_s) + " (roofline estimate, not libtpu's)",
                    "from": r.roofline_how,
                }
            ]
        ),
        {"what": "communication time", "value": fmt_seconds(r.comm_s), "from": MODEL_NAME},
        {
            "what": "one step, both added",
            "value": fmt_seconds(r.total_s),
            "from": "the compiler's estimate + the model (no overlap assumed)",
        },
        {"what": "compile", "value": f"{r.compile_s:.2f} s", "from": "this machine's libtpu"},
    ]


def collective_rows(r: PodReport) -> list[dict]:
    """One row per collective: kind, shape, bytes, groups, hosts crossed, modelled time; on
    several slices also its network and the bytes each device sends over it (the model's)."""
    many = r.slices > 1
    return [
        {
            "kind": c.kind,
            **({"network": f"{c.network} ({_WHERE[c.network]})"} if many else {}),
            "shape": c.shape,
            "bytes per device": fmt_gib(c.bytes),
            **({"sent per device (model)": fmt_gib(c.moved_bytes)} if many else {}),
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


MOST_SLICES = 8  # slices the HTML picture draws in its one row, at most


def slice_html(chips, said: str, groups: tuple[tuple[int, ...], ...] = ()) -> str:
    """The slice's ``chips`` (:class:`~pmapviz.core.pods.podtopology.Chip`) in their hosts,
    coloured by ``groups``, over the line ``said``: drawn from the topology alone before a
    compile, and from the report after it (:func:`chip_html`)."""
    color = {d: _COLORS[k % len(_COLORS)] for k, g in enumerate(groups) for d in g}
    slices: dict[int, list] = {}
    for chip in chips:
        slices.setdefault(chip.slice, []).append(chip)
    keep = drawn_slices(len(slices), len(chips) // max(1, len(slices)), MOST_SLICES)
    if keep < len(slices):
        said += "; " + drawn_words(keep, len(slices))
        slices = {k: on for k, on in slices.items() if k < keep}
    line = f"<div style='font-size:13px;color:#57606a;margin:2px 3px 6px'>{escape(said)}</div>"
    if len(slices) == 1:
        body = "".join(_host_boxes(chips, color, len(slices)))
        return f"<div role='img' aria-label='{escape(said)}'>{body}{line}</div>"
    parts = [_slice_box(k, on, color, len(slices)) for k, on in sorted(slices.items())]
    link = (
        "<div style='align-self:center;text-align:center;color:#D55E00;font-weight:600;"
        "font-size:14px;margin:0 2px'>DCN<div style='border-top:5px solid #D55E00;"
        "width:32px'></div></div>"
    )
    return (
        f"<div role='img' aria-label='{escape(said)}'><div style='display:flex;"
        f"align-items:stretch;overflow-x:auto'>{link.join(parts)}</div>{line}</div>"
    )


def _host_boxes(chips, color: dict, n_slices: int) -> list[str]:
    """Each host of ``chips`` (one slice's) a box of its chips at their coordinates."""
    by_coords: dict[tuple, list] = {}
    for chip in chips:
        by_coords.setdefault(chip.coords, []).append(chip)
    hosts: dict[int, list] = {}
    for coords, on in sorted(by_coords.items(), key=lambda kv: (kv[1][0].host, kv[0])):
        hosts.setdefault(on[0].host, []).append((coords, on))
    n = len(by_coords) * n_slices  # chips drawn in all: smaller squares on larger targets
    size = 40 if n <= 16 else 28 if n <= 64 else 12 if n <= 256 else 7
    if n_slices > 2:  # several slices in one row: no ids on the chips (hover: each one's id)
        size = min(size, 12 if n <= 256 else 7)
    return [_host_box(host, on, color, size) for host, on in hosts.items()]


def _slice_box(k: int, chips, color: dict, n_slices: int) -> str:
    """One slice of a multislice target: its hosts in a dashed frame, 'slice k' on top."""
    hosts = len({c.host for c in chips})
    return (
        "<div style='display:inline-block;border:2px dashed #5B6573;border-radius:10px;"
        "padding:4px;margin:3px'><div style='font-size:14px;font-weight:600;margin:0 3px'>"
        f"slice {k} ({len(chips)} devices, {hosts} host{'s' if hosts != 1 else ''})</div>"
        + "".join(_host_boxes(chips, color, n_slices))
        + "</div>"
    )


def _host_box(host: int, chips: list, color: dict, size: int) -> str:
    """One host: a grid of its chips at their coordinates (z-planes stacked down)."""
    xs = sorted({c[0] for c, _ in chips})
    ys = sorted({(c[2], c[1]) for c, _ in chips})
    cells = []
    for c, on in chips:
        ids = ", ".join(str(ch.id) for ch in on)
        fill = color.get(on[0].id, "#cfd8e3")
        label = escape(ids) if size >= 28 else ""
        wide = max(size, 7 * len(ids) + 8) if label else size  # multislice ids: '100000'
        cells.append(
            f"<div title='device {escape(ids)} at {escape(c)}, host {host}' style='grid-column:"
            f"{xs.index(c[0]) + 1};grid-row:{ys.index((c[2], c[1])) + 1};width:{wide}px;"
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


def network_rows(r: PodReport) -> list[dict]:
    """On several slices: per network, the collectives on it, the bytes each device sends
    (the model's count) and the modelled time, written from the report's collectives."""
    sent = r.network_bytes()
    times = {"ICI": r.ici_s, "DCN": r.dcn_s}
    how = {"ICI": MODEL_NAME, "DCN": r.dcn_how or "DCN model"}
    return [
        {
            "network": f"{net} ({_WHERE[net]})",
            "collectives": ", ".join(c.kind for c in r.collectives if c.network == net) or "none",
            "sent per device": fmt_gib(sent.get(net, 0.0)),
            "time (model)": fmt_seconds(times[net]),
            "model": how[net],
        }
        for net in ("ICI", "DCN")
    ]


def phase_steps(phase: list) -> list[dict]:
    """One all-reduce across slices (:meth:`PodReport.phases`) as its phases: a send and its
    recv one phase, and what runs side by side one phase (a pytree's pieces sent together:
    '3 x send + recv', their shapes joined, their bytes and modelled times added); each with
    what, where, shape, bytes a device sends and the time."""
    steps: list[dict] = []
    for c in phase:
        if c.kind == "recv" and steps and steps[-1]["kind"] == "send":
            steps[-1]["pairs"] = True
            continue
        last = steps[-1] if steps else None
        if last is not None and last["kind"] == c.kind and last["network"] == c.network:
            last["count"] += 1
            last["shapes"].append(c.shape)
            last["moved"] += c.moved_bytes
            last["seconds"] += c.model_s
            continue
        steps.append(
            {
                "kind": c.kind,
                "count": 1,
                "pairs": False,
                "network": c.network,
                "shapes": [c.shape],
                "moved": c.moved_bytes,
                "seconds": c.model_s,
            }
        )
    return [_step_words(step) for step in steps]


def _step_words(step: dict) -> dict:
    what = step["kind"] + (" + recv" if step["pairs"] else "")
    return {
        "what": what if step["count"] == 1 else f"{step['count']} x {what}",
        "network": step["network"],
        "where": _WHERE[step["network"]],
        "shape": " + ".join(step["shapes"]),
        "sent": fmt_gib(step["moved"]),
        "time": fmt_seconds(step["seconds"]),
    }


def phases_html(r: PodReport) -> str:
    """Each all-reduce across slices drawn as its phases in order (boxes and arrows, DCN in
    orange), every figure from the report's collectives; '' where there is none."""
    out = []
    for k, phase in enumerate(r.phases(), start=1):
        boxes = []
        for n, step in enumerate(phase_steps(phase), start=1):
            edge = "#D55E00" if step["network"] == "DCN" else "#0072B2"
            boxes.append(
                f"<div style='border:3px solid {edge};border-radius:8px;padding:6px 10px;"
                f"min-width:190px;flex:1'><div style='font-size:17px;font-weight:600'>"
                f"{n}. {escape(step['what'])}</div><div style='font-size:15px;color:{edge};"
                f"font-weight:600'>{escape(step['network'])}: {escape(step['where'])}</div>"
                f"<div style='font-size:15px'>{escape(step['shape'])}; each device sends "
                f"{escape(step['sent'])}; {escape(step['time'])} (model)</div></div>"
            )
        arrow = "<div style='align-self:center;font-size:26px;margin:0 6px'>&rarr;</div>"
        said = f"all-reduce across slices {k} of {len(r.phases())}, as compiled"
        out.append(
            f"<div role='img' aria-label='{escape(said)}' style='display:flex;"
            f"flex-wrap:wrap;gap:4px;margin:6px 0'>{arrow.join(boxes)}</div>"
        )
    return "".join(out)


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
