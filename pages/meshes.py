"""Meshes & PartitionSpecs: today's API, jax.make_mesh and NamedSharding, on a named mesh:
which device (at which mesh coordinates) holds which block of each argument."""

import streamlit as st

from pmapviz.core.ui import presenter, shell, url_state
from pmapviz.features.meshes import meshplacement
from pmapviz.features.meshes.ui import mesh_form, mesh_own, mesh_run, mesh_types, mesh_view

shell.ensure_routed()

report = shell.device_report()

st.title("Meshes & PartitionSpecs")
slot = presenter.picture_slot()  # presenter mode: the first argument's mesh grid first
st.markdown(
    "`pmap` maps one axis over a list of devices. Today's JAX names the devices' axes instead: "
    "`jax.make_mesh((2, 4), ('data', 'model'))`, and a `PartitionSpec` per array says which "
    "mesh axes split which dimension (`NamedSharding(mesh, P('data', None))`). Every block "
    "below is read from `NamedSharding.devices_indices_map`; nothing is allocated."
)

mesh, args = mesh_form.show(report.count)
url_state.share_link("meshes")
mesh_view.mesh_note(mesh, report.count)
if mesh_view.problems(mesh, args):
    st.stop()
placed = [meshplacement.place(mesh, shape, spec) for _, shape, spec in args]
mesh_view.show(placed, [name for name, _, _ in args], slot)
mesh_types.show(mesh, args)
mesh_own.show(mesh, args, report.count)
mesh_own.on_slice(mesh, args, report.count)
mesh_run.show(report.count)
mesh_run.sweep(report.count)
