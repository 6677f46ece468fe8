"""The three modes built from a program's parts: the mesh's axis types, the arguments'
shardings, and shard_map's per-device view, each read back from JAX."""

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, PartitionSpec

from pmapviz.features.meshes.meshspecs import Mesh
from pmapviz.features.types import typedmodes
from pmapviz.features.types.typedmodes import ProgramParts

MESH = Mesh((2, 4), ("data", "model"))


def _parts():
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    w = jax.ShapeDtypeStruct((16, 8), jnp.float32)
    return ProgramParts(
        lambda a, b: a @ b,
        lambda a, b: jax.lax.psum(a @ b, "model"),
        (x, w),
        ((None, "model"), ("model", None)),
        PartitionSpec(),
        {"auto": "A", "explicit": "E", "manual": "M"},
    )


@pytest.mark.parametrize(
    "mode, kind",
    [("auto", AxisType.Auto), ("explicit", AxisType.Explicit), ("manual", AxisType.Explicit)],
)
def test_each_mode_has_its_mesh_and_places_the_arguments(mode, kind):
    program = typedmodes.build(_parts(), MESH, mode)
    assert program.mesh.axis_types == (kind, kind)
    assert dict(program.mesh.shape) == {"data": 2, "model": 4}
    assert [a.sharding.spec for a in program.args] == [
        PartitionSpec(None, "model"),
        PartitionSpec("model", None),
    ]
    assert program.code == {"auto": "A", "explicit": "E", "manual": "M"}[mode]


def test_types_follow_the_mode():
    def out_type(mode):
        p = typedmodes.build(_parts(), MESH, mode)
        with jax.set_mesh(p.mesh):
            return str(jax.jit(p.fn).trace(*p.args).jaxpr.jaxpr.outvars[0].aval.str_short(True))

    assert out_type("auto") == "f32[8,8]"  # Auto: no sharding in the type
    with pytest.raises(Exception, match="Contracting dimensions are sharded"):
        out_type("explicit")  # the contracted dimension is split: JAX asks for out_sharding
    assert out_type("manual") == "f32[8,8]"  # psum over model: the same on every device


def test_a_pytree_argument_takes_its_spec_on_every_leaf():
    tree = {
        "a": jax.ShapeDtypeStruct((8, 2), jnp.float32),
        "b": jax.ShapeDtypeStruct((8,), jnp.int32),
    }
    m = typedmodes.jax_mesh(Mesh((8,), ("i",)), "explicit")
    (placed,) = typedmodes.placed(m, (tree,), (("i",),))
    assert {k: v.sharding.spec for k, v in placed.items()} == {
        "a": PartitionSpec("i"),
        "b": PartitionSpec("i"),
    }


def test_unknown_modes_and_words():
    with pytest.raises(ValueError, match="auto, explicit, manual"):
        typedmodes.check_mode("implicit")
    assert typedmodes.mesh_words(MESH, "manual") == (
        "data=2 x model=4, Explicit axes, Manual inside shard_map"
    )
    assert typedmodes.specs_tuple(((("data",)),)) == "(P('data'),)"
    assert typedmodes.specs_tuple((("data", None), ())) == "(P('data', None), P())"
    assert "carry no sharding" in typedmodes.WORDS["auto"]
