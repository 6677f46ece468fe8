"""Shared Streamlit widgets: the page list, the device panel and small page helpers.

This is the only module of ``pmapviz`` that imports Streamlit; everything else is plain core.
"""

from __future__ import annotations

import contextlib
import functools
import html
import threading
import time
from dataclasses import dataclass

import streamlit as st

from pmapviz import devicefacts, devices, memory, scenario, settings, turns, warmup
from pmapviz.palette import MONO_CSS, device_colour, text_colour
from pmapviz.scenario import Scenario, has_numpy_version


@dataclass(frozen=True)
class PageInfo:
    path: str
    title: str
    icon: str
    url_path: str
    blurb: str


PAGES = (
    PageInfo("pages/home.py", "Home", ":material/home:", "home",
             "What pmap does, your devices, and a live hello-pmap."),
    PageInfo("pages/explorer.py", "Shapes & sharding", ":material/grid_view:", "explorer",
             "Set shapes, in_axes and out_axes; see how pmap splits them."),
    PageInfo("pages/live.py", "Live outputs", ":material/play_circle:", "live",
             "Run pmap on real values, per device, checked against jit(vmap(f))."),
    PageInfo("pages/collectives.py", "Collectives", ":material/hub:", "collectives",
             "psum, all_gather, ppermute and friends, before and after, per device."),
    PageInfo("pages/timing.py", "Timing lab", ":material/timer:", "timing",
             "pmap vs vmap vs shard_map: compile, transfer and compute, and the floor."),
    PageInfo("pages/training.py", "Data-parallel training", ":material/model_training:",
             "training", "Sharded batches, replicated parameters, pmean of gradients."),
    PageInfo("pages/cluster.py", "Multi-process", ":material/lan:", "cluster",
             "jax.distributed on one machine: local versus global devices."),
    PageInfo("pages/compiled.py", "Compiled program", ":material/memory_alt:", "compiled",
             "The collectives XLA really emits, cost and memory, a per-device timeline."),
    PageInfo("pages/tour.py", "Guided tour", ":material/school:", "tour",
             "A step-by-step workshop path through pmap."),
)  # fmt: skip


_ROUTER = threading.local()  # per script thread: is app.py's router running this page?


@contextlib.contextmanager
def routing():
    """app.py runs the chosen page inside this, so :func:`ensure_routed` can tell."""
    _ROUTER.active = True
    try:
        yield
    finally:
        _ROUTER.active = False


def ensure_routed() -> None:
    """First line of every page: make sure the page runs inside app.py's router.

    A folder named ``pages/`` next to the main script makes Streamlit start each new server
    process in its legacy multipage mode, where ``/explorer`` runs ``pages/explorer.py``
    directly, skipping app.py (device set-up, panel, navigation). That happens to share links
    opened on a fresh server. When it does, switch the process to ``st.navigation`` mode, which
    app.py uses, and rerun: the same URL then goes through app.py.

    The test is this run's own (:func:`routing`), not Streamlit's process-wide flag: with two
    such links opened at once, the first page to get here clears the flag, and the second,
    started in the legacy mode too, used to read the cleared flag and run outside app.py
    (before app.py had set up the devices: JAX then started with the default count).
    """
    if getattr(_ROUTER, "active", False):
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.markdown(":material/hourglass_top: Starting pmapviz: JAX is setting up the devices…")
    time.sleep(0.15)  # sent to the browser before the rerun starts JAX, which holds the GIL
    st.rerun()


def page_menu() -> None:
    """The page list at the top of the sidebar (app.py's navigation is hidden, and so is
    Streamlit's list of the pages/ files, which a fresh server flashed on a deep link)."""
    for p in PAGES:
        st.sidebar.page_link(p.path, label=p.title, icon=p.icon)
    st.sidebar.divider()


def page_info(path: str) -> PageInfo:
    return next(p for p in PAGES if p.path == path)


def device_report() -> devices.DeviceReport:
    """The devices of this server process (configured once, by app.py, before JAX started;
    what they are is read once, by :mod:`pmapviz.devicefacts`)."""
    return devices.describe(devices.applied_settings())


def _cell(text: str, position: int | None, tooltip: str = "", mono: bool = True) -> str:
    fill = "#EEEEEE" if position is None else device_colour(position)
    font = MONO_CSS + ";" if mono else ""
    return (
        f"<div title='{html.escape(tooltip or text, quote=True)}' style='background:{fill};"
        f"color:{text_colour(fill)};border-radius:6px;padding:8px 4px;text-align:center;"
        f"{font}font-size:0.95em;line-height:1.25;overflow:hidden'>{text}</div>"
    )


def block_grid(rows: list[tuple[str, list[tuple[str, int | None, str]]]], label: str) -> str:
    """A device-aligned grid as HTML: one row per label, one column per device; a picture
    (``role="img"``) that ``label`` describes to a screen reader.

    Each cell is ``(text, device position or None, tooltip)``; text is HTML-escaped by the
    caller's data (numbers and device names). Colour comes from the app's one device
    palette, and every cell also carries text, so colour is never the only cue. Plain
    HTML on purpose: it draws instantly (no chart library to load) and stays crisp when
    projected.
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
        parts.extend(_cell(text, pos, tip) for text, pos, tip in cells)
    parts.append("</div></div>")
    return "".join(parts)


def grid(rows: list[tuple[str, list[tuple[str, int | None, str]]]], label: str) -> None:
    """Draw :func:`block_grid` rows, a picture that ``label`` describes."""
    st.markdown(block_grid(rows, label), unsafe_allow_html=True)


def device_set_grid(report: devices.DeviceReport, per_row: int = 8) -> None:
    """Every device in mesh order, rows of ``per_row``, labelled and coloured from JAX."""
    n = report.count
    grid([(f"{start}-{min(n, start + per_row) - 1}",
           [(titled(d.label, f"id {d.id} · process {d.process_index}"), k,
             f"{d.label}: id {d.id}, process {d.process_index}, {d.kind}")
            for k, d in enumerate(report.devices[start : start + per_row], start)])
          for start in range(0, n, per_row)],
         f"The {n} devices of this server, in mesh order: "
         + ", ".join(report.labels[:16]) + (" ..." if n > 16 else ""))  # fmt: skip


def chips(positions: list[int | None]) -> str:
    """Small chips coloured by device position, each labelled with its number; '·' for none
    (for a cell of :func:`block_grid`)."""
    out = []
    for s in positions:
        if s is None:
            out.append("<span style='padding:0 4px;color:inherit'>·</span>")
        else:
            fill = device_colour(s)
            out.append(f"<span style='background:{fill};color:{text_colour(fill)};"
                       f"border-radius:3px;padding:0 4px;margin:1px'>{int(s)}</span>")  # fmt: skip
    return "".join(out)


def titled(title: str, detail: str) -> str:
    """A cell's text for :func:`block_grid`: a bold title over a small detail line (escaped)."""
    return f"<b>{html.escape(title)}</b><br><small>{html.escape(detail)}</small>"


def device_chips(report: devices.DeviceReport) -> str:
    """HTML chips, one per device, in the app's device palette, each labelled (not colour only)."""
    chips = []
    for k, d in enumerate(report.devices):
        fill = device_colour(k)
        chips.append(
            f"<span title='id {d.id}, process {d.process_index}' style='display:inline-block;"
            f"background:{fill};color:{text_colour(fill)};border-radius:4px;padding:1px 6px;"
            f"margin:1px;font-size:0.8em;font-family:monospace'>{d.label}·p{d.process_index}</span>"
        )
    return "".join(chips)


def device_panel(report: devices.DeviceReport) -> None:
    """The sidebar panel shown on every page: the devices and what they are, the memory
    budgets (host, and device where the devices have their own), start-up, restart."""
    facts = report.facts
    with st.sidebar:
        st.markdown(f"### :material/memory: {report.count} devices")
        real = "emulated" if facts.emulated else "real"
        st.markdown(
            f"**Platform** `{report.platform}` ({real}) · **kind** `{report.device_kind}`  \n"
            f"**JAX** `{report.jax_version}` · **processes** {report.process_count}  \n"
            f"**Host CPU** {report.physical_cores} physical core(s), {report.logical_cpus} logical"
        )
        st.markdown(device_chips(report), unsafe_allow_html=True)
        st.caption("Each chip: device name · process index.")
        budget = memory.budget()
        pool = memory.admission(budget)
        reserved = tuple(c - f for c, f in zip(pool.capacity, pool.free(), strict=True))
        for line in memory.budget_lines(budget, devicefacts.device_memory(), reserved):
            st.caption(line)
        if facts.startup_s is not None and not facts.emulated:
            st.caption(f"Backend start-up (the first `device_put`): {facts.startup_s:.2f} s, "
                       "measured once and kept out of every timing.")  # fmt: skip
        for note in (*report.notes, *facts.hints):
            st.warning(note, icon=":material/warning:")
        if note := devicefacts.devices_note(facts):
            st.info(note, icon=":material/info:")
        st.markdown(devicefacts.say(facts, "restart"))
        n = st.number_input(
            "Devices for the restart command",
            min_value=devices.MIN_DEVICES,
            max_value=devices.MAX_DEVICES,
            value=report.requested.devices,
            step=1,
            key="restart_devices",
        )
        st.code(report.cpu_restart_command(int(n)), language="bash", wrap_lines=True)


def load_url_settings(prefix: str, schema: settings.Schema) -> None:
    """Seed this page's widget state (keys ``prefix + key``) once per session from the URL,
    through the settings layer: a value that does not parse is replaced by its default, with
    a visible note saying what was wrong (shown every run until the settings change)."""
    flag = f"_{prefix}loaded"
    if not st.session_state.get(flag):
        st.session_state[flag] = True
        texts, notes = schema.from_query(dict(st.query_params))
        for key, value in texts.items():
            f = schema.field(key)
            typed = f.parse(value, f.label)  # already checked by from_query
            st.session_state[prefix + key] = typed if isinstance(typed, list) else value
        st.session_state[f"_{prefix}notes"] = notes
    link_notes(st.session_state.get(f"_{prefix}notes", []))


def link_notes(notes: list[str]) -> None:
    for note in notes:
        st.warning(note, icon=":material/link_off:")


EXPLORER_KEY = "explorer_settings"  # plain dict, survives page switches (widget keys do not)


def explorer_scenario(n_devices: int) -> Scenario:
    """The explorer's current scenario, shared with the pages that run it: from this session
    (the explorer saves it), else from this page's URL (validated, with notes), else the
    defaults."""
    saved = st.session_state.get(EXPLORER_KEY)
    if saved:
        return Scenario.from_texts(saved, n_devices)
    texts, notes = scenario.schema(n_devices).from_query(dict(st.query_params))
    link_notes(notes)
    return Scenario.from_texts(texts, n_devices)


def show_errors(errors: list[str], icon: str = ":material/edit:") -> bool:
    """One error box per message; True when there were any (the caller usually stops)."""
    for e in errors:
        st.error(e, icon=icon)
    return bool(errors)


def render_blocks(blocks: list, report: devices.DeviceReport) -> None:
    """Draw a list of :class:`pmapviz.tour.Block` (plain data made by the core); in presenter
    mode the pictures come first, the words after them."""
    if presenting():
        blocks = [b for b in blocks if b.picture] + [b for b in blocks if not b.picture]
    for b in blocks:
        if b.kind == "markdown":
            st.markdown(b.body)
        elif b.kind == "code":
            st.code(b.body, language=b.extra or None)
        elif b.kind in ("error", "info"):
            getattr(st, b.kind)(b.body, icon=":material/block:" if b.kind == "error"
                                else ":material/info:")  # fmt: skip
        elif b.kind == "table":
            dataframe(b.body)
        elif b.kind == "grid":
            st.markdown(block_grid(b.body, b.extra), unsafe_allow_html=True)
        elif b.kind == "chips":
            label = html.escape(f"The {report.count} devices of this server: "
                                + ", ".join(report.labels[:16]), quote=True)  # fmt: skip
            st.markdown(f"<div role='img' aria-label='{label}'>{device_chips(report)}</div>",
                        unsafe_allow_html=True)  # fmt: skip
        elif b.kind == "cards":
            _, plan, _ = Scenario.from_texts(b.body, report.count).plan(report.count)
            if plan is not None and plan.ok:
                plan_cards(plan, b.extra, "As JAX's NamedSharding places the arrays.")
        elif b.kind == "link":
            st.markdown(f":material/open_in_new: [{b.body}]({b.extra})")


def parsed(prefix: str, schema: settings.Schema, keys: list[str] | None = None) -> dict:
    """Typed values of this page's widgets (keys ``prefix + key``), parsed by the settings
    layer; on bad text, one message per field and the page stops there."""
    texts = {f.key: st.session_state.get(prefix + f.key, f.default) for f in schema.fields}
    values, errors = schema.parse(texts, keys)
    if show_errors(errors):
        st.stop()
    return values


def dataframe(data) -> None:
    """``st.dataframe`` without the index, full width, once pandas is fully imported: Streamlit
    imports it inside, and two sessions importing it at once raced (pmapviz.warmup)."""
    warmup.pandas()
    st.dataframe(data, hide_index=True, width="stretch")


def table(data) -> None:
    """``st.table``, once pandas is fully imported (as :func:`dataframe`)."""
    warmup.pandas()
    st.table(data)


def page_failed(err: BaseException) -> None:
    """What a person sees when a page meets an error nobody foresaw: one clear line and the
    exception's type, never a traceback or a server path (the log has the details)."""
    st.error(
        "This page ran into an unexpected problem and stopped. The server is fine and other "
        "pages keep working: change a setting, or open the page again from the sidebar.",
        icon=":material/error:",
    )
    with st.expander("Details"):
        st.code(type(err).__name__, language=None)


def fragment(body):
    """``st.fragment`` with app.py's last resort inside it: an error raised in a fragment is
    shown by Streamlit's fragment runner (a traceback) before app.py's ``try`` around the page
    could catch it, so the fragment gets the same one clear message itself."""

    @functools.wraps(body)
    def guarded(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except Exception as err:  # noqa: BLE001  (as in app.py)
            page_failed(err)

    return st.fragment(guarded)


def save_url_settings(prefix: str, names: list[str]) -> None:
    """Mirror the current settings into the URL, so that a copied link reproduces the view."""
    set_url({n: str(st.session_state[prefix + n]) for n in names if prefix + n in st.session_state})


def set_url(params: dict[str, str]) -> None:
    """Replace the URL's query parameters (keeping presenter mode) if they changed."""
    wanted = dict(params)
    if st.session_state.get("present"):
        wanted["present"] = "1"
    if dict(st.query_params) != wanted:
        st.query_params.from_dict(wanted)


PRESENTER_CSS = """
<style>
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { padding-top: 1rem; max-width: 100%; }
[data-testid="stMain"] h1 { font-size: 1.9rem; padding: 0 0 0.4rem 0; }
[data-testid="stHeader"], [data-testid="stCaptionContainer"],
[data-testid="stSidebarUserContent"] [data-testid="stNumberInput"],
[data-testid="stSidebarUserContent"] [data-testid="stCode"] { display: none; }

</style>
"""


def presenter_mode() -> bool:
    """Sidebar toggle (and ?present=1): a layout for a projector. The sidebar folds away,
    each page draws its picture first (see :func:`picture_slot`), type is larger and the fine
    print hidden. The device palette is colour-blind safe everywhere and every block carries
    its label."""
    if "present" not in st.session_state:
        st.session_state["present"] = settings.present(dict(st.query_params))
    on = st.sidebar.toggle("Presenter mode", key="present",
                           help="A layout for a projector: the picture first, the sidebar "
                           "folded, larger type, no fine print. Also ?present=1 in the "
                           "URL.")  # fmt: skip
    if on:
        st.set_page_config(initial_sidebar_state="collapsed")
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    return on


def presenting() -> bool:
    return bool(st.session_state.get("present"))


def picture_slot():
    """Where a page's main picture goes in presenter mode: right under the title, above the
    settings and the prose (a container to fill later); None otherwise (the picture stays
    where the page draws it). Pair with :func:`picture`."""
    return st.container() if presenting() else None


def picture(slot):
    """The container to draw the main picture in: the presenter's slot, or here."""
    return slot if slot is not None else st.container()


def share_link(url_path: str) -> None:
    """A "Share this view" button in the sidebar that opens a copyable link to exactly this
    view, the page and its settings. Lazy: the link is drawn only while it is open (opening it
    reruns the page), so an edit pays nothing for it, and a page whose edits rerun only a
    fragment (which may not write to the sidebar) still gets a link with its latest settings:
    the fragment keeps the URL's query up to date."""
    from urllib.parse import urlencode

    box = st.sidebar.popover("Share this view", icon=":material/link:", on_change="rerun",
                             key=f"share_{url_path}")  # fmt: skip
    if not box.open:
        return
    host = st.context.headers.get("Host", "127.0.0.1:8501") if st.context.headers else "localhost"
    scheme = "https" if str(st.context.url or "").startswith("https") else "http"
    path = "" if url_path == "home" else url_path
    query = urlencode(dict(st.query_params))
    with box:
        st.code(f"{scheme}://{host}/{path}" + (f"?{query}" if query else ""), language=None,
                wrap_lines=True)  # fmt: skip
        st.caption("Opening the link reproduces these settings.")


# ---------------------------------------------------------------- waiting for a turn (turns.py)
def queue_display(stop_key: str | None = None):
    """(on_wait, clear) for any wait in a queue (``turns.Turns``, ``turns.Pool``: the memory
    budget): a placeholder that shows the queue's message (the caller's place, what it waits
    for, what runs), with a Stop button when ``stop_key`` is given (any click reruns the page,
    which abandons the wait). Call ``clear()`` when done."""
    slot = st.empty()
    parts: dict = {}

    def on_wait(position: int, waited_s: float, message: str) -> None:
        if not parts:
            box = slot.container()
            parts["info"] = box.empty()
            if stop_key:
                box.button("Stop waiting", key=stop_key, icon=":material/stop:")
        parts["info"].info(message, icon=":material/hourglass_top:")

    return on_wait, slot.empty


# ---------------------------------------------------------------- end of waiting for a turn


# ---------------------------------------------------------------- what XLA compiled
def show_analysis(a, labels: list[str]) -> None:
    """A compiled pmap program (pmapviz.compiled.Analysis): the collectives XLA emitted beside
    the ring model, their groups and pairs on the devices, the program at three levels, and
    cost and memory per variant."""
    from pmapviz import charts, compiled

    st.caption(f"`{a.target.code}` on {a.target.n} device(s), compiled in "
               f"{a.compile_s * 1e3:,.0f} ms.")  # fmt: skip
    if a.unparsed:
        st.warning("Some collective lines of the HLO could not be read by this version of "
                   "pmapviz; they are shown as text instead of being guessed.",
                   icon=":material/help:")  # fmt: skip
        st.code("\n".join(f"{k}: {t}" for k, t, _ in a.unparsed), language=None)
    if not a.rows:
        st.info("XLA emitted no collective: every device computes on its own block.",
                icon=":material/info:")  # fmt: skip
    else:
        dataframe(warmup.pandas().DataFrame(compiled.table_rows(a.rows)))
        for r in a.rows:
            c = r.hlo
            if c.source_target_pairs:
                st.markdown(f"**{c.name}** ({c.kind}): source -> target pairs")
                fig = charts.permutation_figure(labels[: a.target.n], list(c.source_target_pairs))
                st.plotly_chart(fig, config={"displayModeBar": False}, key=f"perm_{c.name}")
            elif c.replica_groups and len(c.replica_groups) > 1:
                st.markdown(f"**{c.name}** ({c.kind}): replica groups")
                grid(
                    [
                        (
                            f"group {k}",
                            [(chips([d]), d, labels[d] if d < len(labels) else str(d)) for d in g],
                        )
                        for k, g in enumerate(c.replica_groups)
                    ],
                    f"{c.name} ({c.kind}) replica groups: "
                    + "; ".join(" ".join(map(str, g)) for g in c.replica_groups),
                )
    _show_levels(a)
    _show_variants(a)


def _show_levels(a) -> None:
    lv = a.levels
    for title, text, lines in (("jaxpr (pmap is jit of shard_map)", lv.jaxpr, lv.jaxpr_lines),
                               ("StableHLO, as lowered", lv.stablehlo, lv.stablehlo_lines),
                               ("HLO, as compiled by XLA", lv.hlo, lv.hlo_lines)):  # fmt: skip
        with st.expander(f"{title}: {len(text.splitlines()):,} lines, collectives on lines "
                         f"{', '.join(map(str, lines)) or 'none'}"):  # fmt: skip
            marked = "\n".join(f"{'>>' if k in lines else '  '} {k:>4} {line}"
                               for k, line in enumerate(text.splitlines(), 1))  # fmt: skip
            st.code(marked[:200_000], language=None)


def _show_variants(a) -> None:
    from pmapviz import compiled

    st.markdown("**The same computation, four ways** (per device; `bytes accessed` is each "
                "device's LOCAL memory traffic, not network bytes):")  # fmt: skip
    rows, notes = compiled.variant_table(a)
    dataframe(warmup.pandas().DataFrame(rows))
    for note in notes:
        st.info(note, icon=":material/info:")


def argument_widths(shape_text, axes_text) -> list[int]:
    """Column widths for one argument's shape, dtype and in_axes boxes: a pytree argument
    gets a wider in_axes box (its prefix is a dict or tuple too)."""
    from pmapviz.pytrees import is_tree_text

    tree = is_tree_text(shape_text) or is_tree_text(axes_text)
    return [4, 3, 3] if tree else [4, 3, 2]


MAIN_WIDTH_PX = 820  # the wide main column beside the sidebar on a 1280-pixel screen


def array_cards(cards: list[tuple], per_row: int, title: str, intro: str) -> None:
    """A section with one card per array (every leaf of a pytree argument, every output leaf):
    its name, shape, dtype, how it is split, and its block diagram; rows of ``per_row``. The
    heading, the ``intro`` line and every card are ONE ``st.html`` element (an edit redraws
    them all; each separate element costs the browser milliseconds). ``cards``: ``(layout,
    axis, is_output)``. Not cached: drawing them takes well under a millisecond, less than
    hashing them for a cache would."""
    from pmapviz import charts

    cards_html = charts.cards_html(cards, per_row, MAIN_WIDTH_PX // per_row - 16)
    st.html(charts.section_html(title, cards_html, intro))


def plan_cards(plan, title: str, intro: str) -> tuple[list, list]:
    """The arrays of a valid plan as cards (every input leaf, then every output leaf), split
    as JAX splits them; returns the layouts (inputs, outputs)."""
    from pmapviz import layout

    inputs, outputs = layout.plan_layouts(plan)
    cards = [
        *((lay, ax, False) for lay, ax in zip(inputs, plan.in_axes, strict=True)),
        *((lay, ax, True) for lay, ax in zip(outputs, plan.out_leaf_axes, strict=True)),
    ]
    array_cards(cards, min(4, len(cards)), title, intro)
    return inputs, outputs


HTML_TABLE_ROWS = 64  # up to this many rows: a static HTML table (one light element per edit)


def device_table(plan, inputs: list, outputs: list, title: str) -> None:
    """A section with one row per device of a valid plan (``layout.device_rows``). Up to
    ``HTML_TABLE_ROWS`` rows: its heading and a static HTML table as one element, each device
    marked with its colour (a dataframe, redrawn on an edit, cost the browser ~35 ms); more
    (a plan for a bigger machine): a heading and a scrollable, sortable dataframe."""
    from pmapviz import charts, layout

    rows = layout.device_rows(plan, inputs, outputs)
    positions = [p.position for p in layout.used_pieces(plan, inputs, outputs)]
    if len(rows) <= HTML_TABLE_ROWS:
        st.html(charts.section_html(title, charts.table_html(rows, title, positions)))
    else:
        st.subheader(title)
        dataframe(rows)


def show_live_result(res, plan, program, report: devices.DeviceReport) -> None:
    """A live run of the explorer's settings (a ``programs.LiveResult``): the verdict against
    jit(vmap(f)) and numpy, compile / transfer / compute, the reshape back, each device's
    blocks."""
    fmt_shape = settings.fmt_shape
    verdict = "PASS" if res.passed else "FAIL"
    st.markdown(f"#### pmap output {fmt_shape(res.out_shape)}")
    cols = st.columns(5)
    cols[0].metric("vs jit(vmap(f))", verdict, f"max |diff| {res.max_abs_diff:.2g}",
                   delta_color="off")  # fmt: skip
    cols[1].metric("Compile (trace + XLA)", f"{res.compile_s * 1e3:,.0f} ms")
    cols[2].metric("Transfer to devices", f"{res.transfer_s * 1e3:,.1f} ms")
    cols[3].metric("Compute (median)", f"{res.run_s * 1e3:,.2f} ms")
    cols[4].metric("jit(vmap) on 1 device", f"{res.reference_run_s * 1e3:,.2f} ms")
    tol = "exact" if res.rtol == 0 else f"rtol {res.rtol:g}"
    detail = (f"max |pmap - vmap| = {res.max_abs_diff:.3g}, max relative "
              f"{res.max_rel_diff:.3g} ({tol})")  # fmt: skip
    if res.numpy_max_abs_diff is not None:
        detail += f"; max |pmap - numpy| = {res.numpy_max_abs_diff:.3g}"
    elif not has_numpy_version(program):
        detail += "; there is no numpy version of this f, so jit(vmap(f)) is the only check"
    (st.success if res.passed else st.error)(
        f"**{verdict}**: pmap's result matches jit(vmap(f)) on one device. {detail}."
        if res.passed else f"**{verdict}**: pmap and jit(vmap(f)) differ. {detail}.",
        icon=":material/check_circle:" if res.passed else ":material/error:",
    )  # fmt: skip
    if res.reshape_back:
        a, b = res.reshape_back
        same = "the values match" if res.flat_equal else "the values DIFFER"
        st.markdown(f"**Reshape back:** `out.reshape{fmt_shape(b)}`: {fmt_shape(a)} -> "
                    f"{fmt_shape(b)}; compared with jit(vmap(f)) reshaped the same way, "
                    f"{same}.")  # fmt: skip
    st.caption(
        "Compile and transfer are measured once; compute is the median of 5 runs with "
        "inputs already placed, after a warm-up, timed with block_until_ready. "
        + devicefacts.speed_caveat(report.facts, plan.devices_used)
    )

    st.subheader("Per device")
    dataframe(res.rows)


def queued(action, stop_key: str | None = None):
    """``action(on_wait)`` with its place in any queue it waits in (the server's memory, a
    benchmark's turn) shown while it waits; None, with the reason shown, when the wait ended
    without its turn (a timeout, or Stop)."""
    on_wait, clear = queue_display(stop_key)
    try:
        return action(on_wait)
    except (turns.WaitTimeout, turns.Cancelled) as err:
        st.warning(str(err), icon=":material/hourglass_disabled:")
        return None
    finally:
        clear()


def show_timeline(tl, key: str) -> None:
    """A per-device timeline (``timeline.Timeline``), or why there is none."""
    from pmapviz import timecharts

    if not tl.lanes:
        st.warning(f"The trace holds {tl.calls_seen} call(s), but none reached every device "
                   "it mentions; trace the call again.", icon=":material/timeline:")  # fmt: skip
        return
    st.caption(f"Module `{tl.module or 'unknown'}`: {len(tl.lanes)} device lane(s), "
               f"{tl.calls_seen} call(s) in the trace, the last complete one shown.")  # fmt: skip
    st.plotly_chart(timecharts.timeline_figure(tl), key=key)


def show_dot_result(res) -> None:
    """The seed's example at full size (a ``dotproduct.DotResult``): shapes, the checks, the
    timings, each device's block and the two classic mistakes."""
    from pmapviz import dotproduct

    fmt_shape = settings.fmt_shape
    st.markdown(f"#### pmap output {fmt_shape(res.pmap_out_shape)} -> reshape -> "
                f"{fmt_shape(res.flat_shape)}")  # fmt: skip
    cols = st.columns(4 if res.device_peak_bytes is None else 5)
    cols[0].metric("max |pmap - vmap|", f"{res.max_abs_diff:.2g}",
                   "equal" if res.allclose else "DIFFERENT", delta_color="off")  # fmt: skip
    cols[1].metric("Compute (median)", f"{res.run_s * 1e3:,.1f} ms")
    cols[2].metric("jit(vmap) on 1 device", f"{res.vmap_run_s * 1e3:,.1f} ms")
    cols[3].metric("Host peak RSS (server)", f"{res.peak_rss_mb:,.0f} MB",
                   help="The server process's peak resident memory on the host since it "
                   "started (getrusage), not this run's alone.")  # fmt: skip
    if res.device_peak_bytes is not None:
        cols[4].metric("Device peak", f"{res.device_peak_bytes / 1e6:,.0f} MB",
                       help="The highest peak_bytes_in_use of the devices since the server "
                       "started, as the backend reports it (memory_stats).")  # fmt: skip
    st.markdown(
        f"{res.pairs:,} pairs: compile {res.compile_s * 1e3:,.0f} ms, transfer to {res.devices} "
        f"devices {res.transfer_s * 1e3:,.1f} ms, compute {res.run_s * 1e3:,.1f} ms (median of "
        f"{len(res.run_s_all)}). Reshape ({res.devices}, {res.block:,}) -> ({res.pairs:,},): "
        + ("**the values equal jit(vmap(dot))**" if res.allclose else "**values differ**")
        + f" (max |diff| {res.max_abs_diff:.2g}); numpy per block: max |diff| "
        f"{res.numpy_max_abs_diff:.2g}."
    )
    st.caption(dotproduct.transfer_note(res))
    table(res.per_device)
    with st.expander("If you forget the reshape", expanded=True):
        st.error(res.forgot_reshape_message, icon=":material/block:")
        st.markdown(
            f"pmap maps over axis 0, which would have {res.pairs:,} entries: one per device. "
            f"JAX itself reports this with a cryptic error at the first call; pmapviz catches it "
            f"from the shapes alone. Reshape to ({res.devices}, {res.block:,}, 3) first."
        )
    with st.expander("If you pmap `dot` without `vmap`", expanded=True):
        st.warning(
            f"`jax.pmap(jnp.vdot)(x, y)` runs, but gives shape "
            f"{fmt_shape(res.without_vmap_shape)}: one number per device, the dot product of the "
            f"whole ({res.block:,}, 3) blocks flattened, i.e. the **sum** of that device's "
            f"{res.block:,} dot products"
            + (" (checked: it equals the block sums)." if res.without_vmap_is_block_sums else ".")
            + " Each device gets a block of pairs, so it needs `vmap` to compute one dot "
            "product per pair.",
            icon=":material/warning:",
        )
    st.caption(f"The same code path: `python -m pmapviz dot --pairs {res.pairs} --devices "
               f"{res.devices} --json`.")  # fmt: skip
