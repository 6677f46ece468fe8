"""The Meshes page's axis types: each argument's type as JAX prints it under the page's axis
types, under ``jax.make_mesh``'s and ``Mesh(...)``'s defaults and inside ``jax.shard_map``
(:mod:`pmapviz.features.meshes.meshtypes`), and ``jax.shard_map`` on an argument not yet
placed, run under each: JAX's refusal in its words and the fix it names, run."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import quote
from pmapviz.core.ui import tables
from pmapviz.features.meshes import meshcode, meshspecs, meshtypes


def _types(types: tuple[str, ...]) -> str:
    return ", ".join(t.capitalize() for t in types)


def show(mesh: meshspecs.Mesh, args: list) -> None:
    """The section: the two constructors' defaults, the types table, the un-placed run and a
    script that prints the same types."""
    found = meshtypes.read(mesh, args)
    shape, names = tuple(mesh.shape), tuple(mesh.names)
    st.subheader("Axis types: what JAX's types say")
    first = found.args[0] if found.args else None
    example = (
        f" Here {first.name} is `{first.make_mesh}` under the one and `{first.mesh_default}` "
        "under the other."
        if first
        else ""
    )
    st.markdown(
        f"`jax.make_mesh({shape}, {names})` gives its axes the types "
        f"**{_types(found.make_mesh_default)}**; `jax.sharding.Mesh(devices, {names})` gives "
        f"**{_types(found.mesh_default)}** (read from this JAX). Same devices, same blocks, "
        "different types: with an Explicit axis an array's type names the axes that split "
        f"it (`@{names[0]}`), and an operation whose sharding is ambiguous is refused until "
        "you say it; with Auto the type says nothing of sharding and the compiler chooses. "
        "Manual is what `jax.shard_map` makes of an axis: each device sees its own block, "
        f"varying over it (`{{V:...}}`).{example} Your axis types: "
        + ", ".join(f"{n}={t.capitalize()}" for n, t in zip(names, mesh.axis_types, strict=True))
        + "."
    )
    tables.static(meshtypes.table_rows(found))
    st.caption(
        "Each type is `str(jax.typeof(x))` of a float32 array of that shape placed by "
        "`NamedSharding(mesh, spec)` (a ShapeDtypeStruct: nothing is allocated); inside "
        "`jax.shard_map`, `jax.typeof` of the block it hands f."
        + (
            f" The mesh has {mesh.devices} devices and this server fewer: read on a "
            "`jax.sharding.AbstractMesh`."
            if found.abstract
            else ""
        )
    )
    if found.manual_refused:
        st.markdown(
            f"{', '.join(mesh.manual)} Manual: a mesh axis is Manual only inside "
            "`jax.shard_map`, so the mesh gives it Explicit and the last column is read inside "
            f"`jax.shard_map(..., axis_names={{{', '.join(repr(a) for a in mesh.manual)}}})`. "
            "Asked to `jax.set_mesh` a mesh with a Manual axis, JAX says:"
        )
        st.code(found.manual_refused, language=None, wrap_lines=True)
    _unplaced(found)
    st.download_button(
        "Download a script that prints these types",
        meshcode.types_script(mesh, args),
        file_name="mesh_types.py",
        mime="text/x-python",
        icon=":material/download:",
        key="me_types_export",
    )


def _unplaced(found: meshtypes.MeshTypes) -> None:
    """shard_map on the first argument with a split spec, not yet placed: a column per set of
    axis types, each with what JAX did."""
    if found.unplaced_name is None:
        return
    name, spec = found.unplaced_name, meshspecs.spec_text(found.unplaced_spec)
    st.markdown(
        f"**`jax.shard_map` on {quote(name)} before it is placed.** `with jax.set_mesh(mesh): "
        f"jax.shard_map(f, in_specs={spec}, out_specs={spec})(x)`, with x not yet placed by "
        f"that spec (a NumPy array, or one made under `jax.set_mesh` without a spec: `P()`):"
    )
    for col, run in zip(st.columns(len(found.unplaced)), found.unplaced, strict=True):
        with col:
            st.markdown(f"**{run.label}** ({_types(run.types)})")
            if not run.refused:
                st.markdown(
                    f":material/check_circle: **Runs**: shard_map places x itself; each device "
                    f"sees `{run.per_device}`."
                )
                continue
            st.markdown(":material/block: **Refused.** JAX says:")
            st.code(run.refused, language=None, wrap_lines=True)
            st.markdown(f"**Fix:** `x = jax.reshard(x, {spec})` first.")
            if run.fix_refused:
                st.markdown(f"JAX refuses that too: {quote(run.fix_refused, 300)}")
            else:
                st.caption(f"Run with it: each device sees `{run.fix_per_device}`.")
