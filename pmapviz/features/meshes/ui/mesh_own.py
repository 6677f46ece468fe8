"""Your own f on the Meshes page's mesh and arguments: typed twice (the global view and the
per-device view) with the output's PartitionSpec, checked before anything runs
(pmapviz.features.meshes.meshownf.check), then run both ways side by side, each checked against one
device, with the collectives XLA emitted and each device's memory; and, with a TPU slice picked
(``?pod=v5e:4x4``), the global view compiled for that slice by libtpu (nothing runs)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.base.valuetext import fmt_bytes, fmt_shape
from pmapviz.core.budgets import memorymodel
from pmapviz.core.pods import podtarget
from pmapviz.core.ui import pod_report, queue_display, recompute, tables, url_state
from pmapviz.features.meshes import meshcode, meshownf, meshpods, meshsettings, meshspecs, meshviews
from pmapviz.features.meshes.ui.mesh_form import P

KEYS = ["args", "gf", "lf", "out"]


def form(n_devices: int) -> meshownf.MeshF:
    """The four boxes (seeded from the link by mesh_form); stops the page on bad text."""
    keep = {"persist_state": "session"}  # kept while a bad setting above stops the page early
    with st.container(border=True):
        a, b = st.columns([1, 3])
        a.text_input(
            "f's arguments",
            key=P + "args",
            max_chars=60,
            **keep,
            help="names, one per argument above, e.g. x, w",
        )
        b.text_input(
            "out_specs",
            key=P + "out",
            max_chars=200,
            **keep,
            help="the output's PartitionSpec: which mesh axes its blocks are laid out "
            "over, e.g. P('data', None)",
        )
        st.text_input(
            "Global view: f on the whole arrays (jax.jit with NamedSharding)",
            key=P + "gf",
            max_chars=500,
            **keep,
            help="an expression, e.g. x @ w",
        )
        st.text_input(
            "Per-device view: f on one device's blocks (jax.shard_map)",
            key=P + "lf",
            max_chars=500,
            **keep,
            help="collectives name mesh axes, e.g. "
            "lax.psum(x @ w, 'model') or lax.all_gather(y, 'model', axis=1, "
            "tiled=True, to='invarying')",
        )
    values = url_state.parsed(P, meshsettings.schema(n_devices), KEYS)
    return meshownf.MeshF(values["args"], values["gf"], values["lf"], values["out"])


def show(mesh: meshspecs.Mesh, args: list, n_devices: int) -> None:
    """The section: the boxes, the problems (each with its fix) or what JAX traced, and a Run
    button for both views."""
    st.subheader("Your own f, both ways")
    st.markdown(
        "Type f twice: once for the **whole arrays** (jit places the blocks and XLA "
        "adds the communication) and once for **one device's blocks** (shard_map; you "
        "write the communication as collectives over named axes). `out_specs` puts the "
        "per-device results back together. Both are checked before anything runs, "
        "then run and compared with the global f on one device."
    )
    f = form(n_devices)
    if mesh.devices > n_devices:
        st.info(
            f"The mesh has {mesh.devices} devices and this server {n_devices}: your f is "
            "traced and run on meshes this server has.",
            icon=":material/info:",
        )
        return
    checked = meshownf.check(mesh, args, f)
    for p in checked.problems:
        st.error(f"{p.message}\n\n**Fix:** {p.fix}", icon=":material/block:")
    if not checked.ok:
        return
    varying = ", ".join(checked.varying) or "no axis: every device computes the same"
    st.markdown(
        f"Traced by JAX: the global f returns {checked.dtype}"
        f"{fmt_shape(checked.global_out)}; the per-device f returns a "
        f"{fmt_shape(checked.local_out)} block on each device, varying over "
        f"{varying}; out_specs {meshspecs.spec_text(f.out_spec)} lays the blocks out as "
        f"the global f's shape."
    )
    g, loc = f.programs()
    st.download_button(
        "Download both views as a script",
        meshcode.mesh_own_script(mesh, args, g, loc, f.out_spec),
        file_name="mesh_your_f.py",
        mime="text/x-python",
        icon=":material/download:",
        key="me_own_export",
    )
    if st.button("Run your f both ways", icon=":material/play_arrow:", key="me_own_run"):
        _run(mesh, args, f, checked)


def on_slice(mesh: meshspecs.Mesh, args: list, n_devices: int) -> None:
    """The section "Your f on a TPU slice": the target picker and, with a slice picked, the
    global f over these arguments, laid on the mesh on the slice's chips, compiled by libtpu;
    a mesh of another size than the slice gets one line with the fix instead."""
    st.subheader("Your f on a TPU slice")
    st.markdown(
        "The global view of your f (`jax.jit` over `NamedSharding` on this mesh), compiled by "
        "the TPU compiler (libtpu) for a slice this machine does not have: **nothing runs**. "
        "The mesh keeps its axes and sizes, laid on the chips as `jax.make_mesh` would; on "
        "several slices (a link's `pod=2 x v5e:2x4`) it is one slice's mesh, with an axis "
        "`'dcn'` of the slice count added outermost."
    )
    with st.columns([2, 4])[0]:
        pod_report.target_picker(P + podtarget.KEY, more=podtarget.MULTISLICE)
    schema = meshsettings.schema(n_devices)
    topology = url_state.parsed(P, schema, [podtarget.KEY])[podtarget.KEY]
    if not topology:
        return
    shapes, specs = [s for _, s, _ in args], [p for _, _, p in args]
    problem = meshpods.fit_problem(mesh, topology)
    if problem := problem or meshpods.dcn_problem(mesh, shapes, specs, topology):
        st.info(problem, icon=":material/grid_on:")
        return
    f = url_state.parsed(P, schema, ["args", "gf"])
    try:
        program = meshpods.pod_program(mesh, shapes, specs, f["args"], f["gf"])
    except SettingError as err:  # the body or the names (ExprError is one)
        st.error(f"global f: {err}", icon=":material/block:")
        return
    compiled = pod_report.compile_report(program, topology)
    if compiled is not None:
        pod_report.show(compiled, "me_pod")


def _run(mesh: meshspecs.Mesh, args: list, f: meshownf.MeshF, checked) -> None:
    try:
        with recompute.working("Compiling and running both views..."):
            results = queue_display.queued(
                lambda on_wait: meshownf.run(mesh, args, f, checked, on_wait=on_wait),
                stop_key="me_own_stop",
            )
    except memorymodel.BudgetError as err:
        st.error(str(err), icon=":material/memory:")
        return
    if results is not None:
        results_side_by_side(results)


def results_side_by_side(results: tuple[meshviews.RunResult, meshviews.RunResult]) -> None:
    """Each view's verdict against one device and the collectives XLA emitted, in two
    columns; then each device's memorymodel, as XLA planned it, for both."""
    for col, res in zip(st.columns(2), results, strict=True):
        ok = res.agrees()
        (col.success if ok else col.error)(
            ("Agrees with one device. " if ok else "Differs from one device. ") + res.summary(),
            icon=":material/check_circle:" if ok else ":material/error:",
        )
        said = [c.sentence for c in res.collectives] or ["no collective: each device worked alone"]
        col.markdown(
            "**XLA emitted** (read from the compiled HLO, replica groups as mesh "
            "axes):\n" + "\n".join(f"- {line}" for line in said)
        )
    memory_table(results)


def memory_table(results) -> None:
    """Each view's memory per device, from its compiled program (nothing where none has it)."""
    rows = [
        {
            "view": r.view,
            **{part: fmt_bytes(n) for part, n in r.memory},
            "total": fmt_bytes(r.memory_total()),
        }
        for r in results
        if r.memory
    ]
    if rows:
        st.markdown(
            "**Memory on each device**, from the compiled program "
            "(`compiled.memory_analysis()`): its block of the arguments and of the "
            "output, and the temporaries XLA planned (the same on every device of an "
            "SPMD program)."
        )
        tables.static(rows)
