"""Run f both ways on a named mesh: the global view (``jax.jit`` with NamedSharding) and the
per-device view (``jax.shard_map`` with collectives over named axes), side by side, each
checked against one device (pmapviz.features.meshes.meshviews)."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.ui import recompute, shared_run, tables
from pmapviz.features.meshes import meshcode, meshexamples, meshspecs
from pmapviz.features.meshes.ui import mesh_own

KEY = "me_ex"


def show(n_devices: int) -> None:
    """The examples, their two codes, and a Run button that runs both and says whether each
    agrees with one device, with its output blocks and timing."""
    st.subheader("Ready examples, both ways")
    examples = {e.key: e for e in meshexamples.examples_for(n_devices)}
    key = st.selectbox("Example", list(examples), key=KEY, format_func=lambda k: examples[k].title)
    ex = examples[key]
    specs = ", ".join(meshspecs.spec_text(s) for s in ex.in_specs)
    st.markdown(
        f"Mesh {ex.mesh.text()}; inputs {ex.shapes} placed as {specs}; output "
        f"{meshspecs.spec_text(ex.out_spec)}. {ex.note}"
    )
    left, right = st.columns(2)
    left.markdown("**Global view**: `jax.jit` with `NamedSharding`")
    left.code(ex.global_code, language="python", wrap_lines=True)
    right.markdown("**Per-device view**: `jax.shard_map`, collectives over named axes")
    right.code(ex.local_code, language="python", wrap_lines=True)
    st.download_button(
        "Download both views as a script",
        meshcode.mesh_script(ex),
        file_name=f"mesh_{ex.key}.py",
        mime="text/x-python",
        icon=":material/download:",
        key="me_export",
    )
    go = st.button("Run both", icon=":material/play_arrow:", key="me_run")
    shared = shared_run.key("meshes", {"example": ex.key}, n_devices)
    if (entry := shared_run.kept(shared)) is None and go:  # else anyone's run of it, shared
        with recompute.working("Compiling and running both views..."):
            entry = shared_run.run(shared, lambda: meshexamples.run_example(ex))
    if entry is not None:
        shared_run.caption(entry)
        mesh_own.results_side_by_side(entry.value)


def sweep(n_devices: int) -> None:
    """Time the chosen example over every 2-D mesh shape of this server's devices."""
    examples = {e.key: e for e in meshexamples.examples_for(n_devices)}
    ex = examples.get(st.session_state.get(KEY), meshexamples.examples_for(n_devices)[0])
    shapes = ", ".join("x".join(map(str, s)) for s in meshexamples.sweep_shapes(ex.mesh.devices))
    if not st.button(
        f"Time it over mesh shapes ({shapes})", icon=":material/timer:", key="me_sweep"
    ):
        return
    with recompute.working("Compiling and timing both views on each mesh shape..."):
        rows = meshexamples.mesh_sweep(ex)
    st.caption(
        "Median of 5 warm calls each (block_until_ready); the collectives are what XLA "
        "emitted, read from the compiled HLO. On emulated CPU devices the shapes share "
        "the same cores, so the differences are the collectives' own cost."
    )
    tables.show(rows)
