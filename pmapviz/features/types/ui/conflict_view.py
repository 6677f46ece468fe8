"""Sharding conflicts, played: a section of the Types page. An operation whose operand specs you
pick under Explicit axes (seeded from the link, through the settings layer), the operands' blocks
drawn on the mesh, JAX's verdict (a refusal explained in plain words first, JAX's own words folded
after), and every legal resolution compiled and compared in one table: collectives, bytes and
memory per device (and, with a TPU slice, the compiler's time and the communication model), the
best marked, each row the one line of code it is. Presenter mode: the operands' picture first."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import queues
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.budgets import memorymodel
from pmapviz.core.pods import commmodel, podtarget
from pmapviz.core.pods.podreport import fmt_seconds
from pmapviz.core.ui import grids, pod_report, presenter, recompute, tables, url_state
from pmapviz.features.meshes import meshgrids, meshplacement
from pmapviz.features.types import conflicts, conflictsettings
from pmapviz.features.types.conflictsettings import Case

P = "cf_"  # widget keys: P + the URL key
INTRO = (
    "Under **Explicit** axes (`jax.make_mesh`'s default) every array's type says how it is "
    "split, and JAX refuses an operation whose result it cannot type without guessing. Pick the "
    "operands' specs: JAX's own verdict comes from a real trace, then every legal way to write "
    "it (`out_sharding=`, `jax.reshard` of one operand) is compiled and compared. Nothing runs: "
    "the compiler is asked, not a formula."
)
OPS = {"matmul": "a @ b (matmul)", "einsum": "einsum", "add": "a + b (add)"}


def show(n: int, slot=None) -> dict[str, str]:
    """The section for a server of ``n`` devices. ``slot``: where the picture goes in presenter
    mode (default: the top of this section). Returns the section's URL query, for the page to
    write into the link beside its own (``url_state.save(..., also=...)``)."""
    st.subheader("Sharding conflicts, played")
    if slot is None and presenter.presenting():
        slot = st.container()  # above the words and the form: the picture first
    st.markdown(INTRO)
    case, topology = form(n)
    with presenter.picture(slot):
        picture(case)
    found = _study(case, topology)
    if found is not None:
        verdict(found)
        table(found)
    return url_state.query(P, conflictsettings.schema(n))


def form(n: int) -> tuple[Case, str]:
    """The widgets (seeded from the link; a bad value: one line and its default), and the
    checked case with the target; bad text gets one line each and the defaults' case."""
    s = conflictsettings
    schema = s.schema(n)
    url_state.load(P, schema)
    with st.container(border=True):
        c = st.columns([2, 2, 3])
        again = {"on_change": _example, "args": (n,)}  # a new operation starts from a conflict
        c[0].selectbox(
            "Operation", s.OPERATIONS, key=P + "c_op", format_func=lambda k: OPS.get(k, k), **again
        )
        einsum = st.session_state.get(P + "c_op") == "einsum"
        c[1].selectbox(
            "einsum's subscripts", s.SUBSCRIPTS, key=P + "c_eq", disabled=not einsum, **again
        )
        c[2].radio(
            "Mesh (Explicit axes)",
            s.mesh_kinds(n),
            key=P + "c_mesh",
            format_func=lambda k: s.mesh_label(k, n),
            horizontal=True,
        )
        w = st.columns(4)
        shape_help = "the global shape: sizes separated by commas, like 64, 32"
        spec_help = "how it is split: a PartitionSpec like P('d', None), or P() for whole"
        w[0].text_input("a's shape", key=P + "c_a", max_chars=60, help=shape_help)
        w[1].text_input("a's spec", key=P + "c_pa", max_chars=200, help=spec_help)
        w[2].text_input("b's shape", key=P + "c_b", max_chars=60, help=shape_help)
        w[3].text_input("b's spec", key=P + "c_pb", max_chars=200, help=spec_help)
        d = st.columns([1, 3])
        d[0].selectbox("dtype", s.DTYPES, key=P + "c_dt")
        with d[1]:
            pod_report.target_picker(P + podtarget.KEY, label="Also compile for")
    texts = {f.key: st.session_state.get(P + f.key, f.default) for f in schema.fields}
    values, case, errors = s.values_or_defaults(texts, n)
    url_state.show_errors(errors)
    return case, values[podtarget.KEY]


def _example(n: int) -> None:
    """The operands' boxes set to the new operation's example conflict (a widget's callback)."""
    state = st.session_state
    start = conflictsettings.example(state[P + "c_op"], state[P + "c_eq"], n)
    state.update({P + key: text for key, text in start.items()})


def picture(case: Case) -> None:
    """a's and b's blocks on the mesh, one device-aligned grid (each block read from
    ``NamedSharding.devices_indices_map``): a row per operand (per operand and row of the mesh
    on two axes)."""
    what = conflictsettings.operation_text(case.op, case.eq)
    said, rows = [], []
    for name, shape, spec in zip("ab", case.shapes, case.specs, strict=True):
        p = meshplacement.place(case.mesh, shape, spec)
        said.append(
            f"{name} {fmt_shape(shape)} split by {conflictsettings.p_text(spec)}: each device "
            f"holds {fmt_shape(p.local_shape)}"
        )
        grid = meshgrids.mesh_rows(p)
        if len(case.mesh.shape) == 1:
            rows.append((name, [cell for _, cells in grid for cell in cells]))
        else:
            rows += [(f"{name} · {label}", cells) for label, cells in grid]
    st.markdown(f"**{what}** on the mesh {case.mesh.text()}: " + "; ".join(said) + ".")
    grids.show(rows, f"{what} on the mesh {case.mesh.text()}: " + "; ".join(said))


def _study(case: Case, topology: str) -> conflicts.Study | None:
    try:
        with recompute.working("Tracing the call and compiling each way to write it..."):
            return conflicts.study(case, topology)
    except (conflicts.ConflictError, memorymodel.BudgetError) as err:
        st.error(str(err), icon=":material/block:")
    except (queues.WaitTimeout, queues.Cancelled):
        st.warning(
            "The server is busy with other work; change a setting to try again in a moment.",
            icon=":material/hourglass_empty:",
        )
    return None


def verdict(found: conflicts.Study) -> None:
    """JAX's verdict: the result's type, or the refusal in plain words, JAX's words folded."""
    v, (a, b) = found.verdict, found.operand_types
    call = f"`{found.case.expression()}` for a `{a}` and b `{b}`"
    if v.accepted:
        st.success(
            f"JAX accepts {call}: the result's type is `{v.out_type}` (read from its trace). "
            "Below, the call as written beside every other legal way to write it.",
            icon=":material/check_circle:",
        )
        return
    st.warning(f"**JAX refuses {call}.** {v.explanation}", icon=":material/school:")
    with st.expander(f"JAX's own words ({v.said.name})"):
        st.code(v.said.text, language=None, wrap_lines=True)


def _moved_text(moved, unread=()) -> str:
    said = [f"{m.kind} {m.shape} ({m.groups} x {m.group_size})" for m in moved]
    said += [f"{u.partition(':')[0]} (unread)" for u in unread]
    return "; ".join(said) or "none"


def rows(found: conflicts.Study) -> list[dict]:
    """The table: one row per resolution, the best marked; with a slice, its columns too."""
    best, out = found.best(), []
    for k, r in enumerate(found.resolutions):
        row = {
            "": "★ best" if k == best else "",
            "code": r.code,
            "result (JAX's type)": r.out_type,
            "collective bytes / device": f"{r.sent_bytes:,}" + (" + unread" if r.unread else ""),
            "peak memory / device": f"{r.cost.peak_bytes:,}",
        }
        if found.topology:
            pod = r.pod
            row[f"TPU time ({found.topology})"] = (
                fmt_seconds(pod.optimal_s) if pod else "refused" if r.pod_error else "none"
            )
            row["communication (model)"] = fmt_seconds(pod.comm_s) if pod else ""
        row["collectives (groups x devices)"] = _moved_text(r.collectives, r.unread)
        if found.topology:
            row["TPU collectives"] = _moved_text(r.pod.collectives) if r.pod else ""
        out.append(row)
    return out


def table(found: conflicts.Study) -> None:
    """The resolutions compared, what each figure is, and the best as code."""
    if not found.resolutions:
        st.info("JAX accepts none of the choices tried.", icon=":material/info:")
        return
    tables.show(tables.frame(rows(found)))
    mesh = found.case.mesh
    st.caption(
        f"Each row compiled by `jax.jit(...).lower(...).compile()` on this server's "
        f"{len(found.devices)} devices (mesh {mesh.text()}), from abstract inputs: collectives "
        "from the compiled HLO, bytes = their operands on one device, memory = "
        f"`memory_analysis()` per device (arguments + output + temporaries). {found.best_rule()}."
        f" JAX refused {found.refused} other choice(s); {found.left_out} legal one(s) not compiled "
        f"(at most {conflicts.MAX_OUT} out_sharding specs and {conflicts.MAX_RESHARDS} reshards "
        "of each operand, the nearest first)."
    )
    unread = sorted({u for r in found.resolutions for u in r.unread})
    if unread:
        st.caption(
            "Collectives marked unread: pmapviz's HLO reader could not read their device groups "
            f"({'; '.join(unread)}), so their bytes are not counted, and a row with one is "
            "never marked best."
        )
    if found.pod_problem:
        st.info(found.pod_problem, icon=":material/memory:")
    elif found.topology:
        st.caption(
            f"On {found.topology} (mesh {found.pod_mesh.text()}), compiled by libtpu: its "
            f"`optimal_seconds` (compute and HBM only) and the communication: "
            f"{commmodel.MODEL_NAME}."
        )
    refused = [r for r in found.resolutions if r.pod_error]
    if refused:
        st.warning(
            f"libtpu refused {len(refused)} of the {len(found.resolutions)} on {found.topology}; "
            f"the first: {refused[0].pod_error}",
            icon=":material/block:",
        )
        with st.expander("Every refusal, in libtpu's words"):
            st.code("\n".join(r.pod_error for r in refused), language=None, wrap_lines=True)
    best = found.resolutions[found.best()]
    st.markdown("The best, as code:")
    st.code(best.code, language="python")
