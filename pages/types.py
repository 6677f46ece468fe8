"""Types: sharding in every value. One program (the Meshes page's f, an explorer function, the
training step, the seed's dot) in the three modes JAX teaches: every equation of its jaxpr with
its type as JAX prints it, the split axes coloured, and the communication the compiled program
has for each equation."""

import streamlit as st

from pmapviz.core.ui import presenter, shell, url_state
from pmapviz.features.types.ui import conflict_view, types_form, types_view

shell.ensure_routed()

report = shell.device_report()

st.title("Types: sharding in every value")
slot = presenter.picture_slot()  # presenter mode: the typed program's grid first
st.markdown(
    "JAX types say how every value is split. Under a mesh with **Explicit** axes "
    "(`jax.make_mesh`'s default) `f32[64@data,16]` is split over the mesh axis `data` along "
    "its first dimension; with **Auto** axes (`jax.sharding.Mesh(...)`'s default) the types "
    "carry no sharding and the compiler chooses; in **Manual** mode (`jax.shard_map`) each "
    "device sees its own block, and `{V:data}` marks a value that differs along `data`. "
    "Every type below is JAX's own text (`jax.typeof`); every collective is read from the "
    "compiled program. Nothing is allocated: the arguments are shapes."
)

source, modes = types_form.show(report.count)
url_state.share_link("types")
if source is not None:
    types_view.show(source, modes, slot)

found = conflict_view.show(report.count)  # sharding conflicts, played (its own section)
types_form.save_link(report.count, also=found)
