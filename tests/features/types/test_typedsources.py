"""The programs pmapviz knows, as sources: a pmap-style target's global and per-device views,
the Meshes page's f, a Python function; their meshes and keys."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec

from pmapviz.core.running.programanalysis import Target
from pmapviz.features.meshes.meshownf import MeshF
from pmapviz.features.meshes.meshspecs import Mesh
from pmapviz.features.types import typedsources

LOCAL = "lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')"


def _target(n=8, axis_name="i", out_axes=0):
    x = jax.ShapeDtypeStruct((n, 4), jnp.float32)
    w = jax.ShapeDtypeStruct((4, 2), jnp.float32)
    return Target(
        "matmul",
        "jax.pmap(f)",
        lambda a, b: lax.psum(a @ b, "i"),
        (x, w),
        (0, None),
        out_axes,
        axis_name,
        n,
    )


def _types(source, mode):
    p = source.mode(mode)
    with jax.set_mesh(p.mesh):
        jaxpr = jax.jit(p.fn).trace(*p.args).jaxpr
    return [v.aval.str_short(True) for v in jaxpr.jaxpr.outvars]


def test_a_pmap_target_is_vmap_globally_and_pmap_s_shard_map_per_device():
    source = typedsources.from_target(_target(), ("t",))
    assert source.mesh == Mesh((8,), ("i",)) and source.key == ("t",)
    assert _types(source, "auto") == ["f32[8,2]"]
    assert _types(source, "manual") == ["f32[8@i,2]"]  # each device's row, put back
    parts = source.parts()
    assert [tuple(s) for s in parts.in_specs] == [("i",), ()]  # w unmapped: replicated
    assert "squeeze" in parts.code["manual"] and "in_axes=(0, None)" in parts.code["auto"]


def test_out_axes_none_is_replicated_in_manual():
    parts = typedsources.target_parts(_target(out_axes=None))
    assert parts.out_specs == PartitionSpec()


def test_a_target_without_axis_name_gets_the_mesh_axis_i():
    source = typedsources.from_target(_target(axis_name=None), None)
    assert source.mesh.names == ("i",)


def test_the_meshes_f_has_its_two_bodies():
    mesh = Mesh((2, 4), ("data", "model"))
    args = [("x", (8, 16), ("data", None)), ("w", (16, 8), (None, "model"))]
    f = MeshF("x, w", "x @ w", LOCAL, ("data", None))
    source = typedsources.from_mesh_f(mesh, args, f)
    assert source.key[0] == "mesh" and "x @ w" in source.label
    assert _types(source, "explicit") == ["f32[8@data,8@model]"]
    assert _types(source, "manual") == ["f32[8@data,8]"]
    assert "out_specs=P('data', None)" in source.parts().code["manual"]


def test_a_python_function_is_never_cached():
    f = lambda x: x * 2  # noqa: E731
    source = typedsources.from_function(
        f,
        (jax.ShapeDtypeStruct((8,), jnp.float32),),
        Mesh((8,), ("i",)),
        (("i",),),
        PartitionSpec("i"),
    )
    assert source.key is None
    assert _types(source, "explicit") == ["f32[8@i]"]
