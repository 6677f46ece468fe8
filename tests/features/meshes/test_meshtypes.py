"""Axis types read from JAX: every type the Meshes page shows equals ``jax.typeof`` of the same
array placed by plain JAX code here (``jax.device_put`` on ``jax.make_mesh`` / ``Mesh(...)``),
every refusal equals the plain call's own exception."""

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import Mesh as JaxMesh
from jax.sharding import PartitionSpec as P

from pmapviz.features.meshes import meshtypes
from pmapviz.features.meshes.meshspecs import Mesh

KIND = {"auto": AxisType.Auto, "explicit": AxisType.Explicit, "manual": AxisType.Explicit}
ARGS = (("x", (8, 16), ("data", None)), ("w", (16, 12), (None, "model")))


def _outside(types):
    """The types a mesh has outside shard_map (Manual as Explicit)."""
    return tuple("explicit" if t == "manual" else t for t in types)


def _placed_type(shape, names, types, spec, gshape) -> str:
    """str(jax.typeof(x)) of a real array placed by plain JAX (types: as make_mesh takes)."""
    devs = jax.devices()[: int(np.prod(shape))]
    m = jax.make_mesh(shape, names, devices=devs, axis_types=tuple(KIND[t] for t in types))
    x = jax.device_put(np.zeros(gshape, np.float32), NamedSharding(m, P(*spec)))
    return str(jax.typeof(x))


def _inside_type(shape, names, types, spec, gshape, axes) -> str:
    """jax.typeof of the block jax.shard_map hands f, eager, on a real placed array."""
    devs = jax.devices()[: int(np.prod(shape))]
    m = jax.make_mesh(shape, names, devices=devs, axis_types=tuple(KIND[t] for t in types))
    x = jax.device_put(np.zeros(gshape, np.float32), NamedSharding(m, P(*spec)))
    only = tuple(
        None if e is None else e if e in axes else None for e in spec
    )  # single-name entries here
    seen = []

    def f(b):
        seen.append(str(jax.typeof(b)))
        return b

    with jax.set_mesh(m):
        jax.shard_map(f, in_specs=P(*only), out_specs=P(*only), axis_names=set(axes))(x)
    return seen[-1]


@pytest.mark.parametrize(
    "types",
    [("explicit", "explicit"), ("auto", "auto"), ("explicit", "auto"), ("manual", "explicit")],
)
def test_every_type_is_jax_typeof_of_a_plain_placement(types):
    mesh = Mesh((2, 4), ("data", "model"), types)
    found = meshtypes.read(mesh, ARGS)
    assert found.make_mesh_default == tuple(
        t.name.lower() for t in jax.make_mesh((2, 4), ("data", "model")).axis_types
    )
    plain = JaxMesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    assert found.mesh_default == tuple(t.name.lower() for t in plain.axis_types)
    axes = mesh.manual or mesh.names
    for row, (_, gshape, spec) in zip(found.args, ARGS, strict=True):
        assert row.yours == _placed_type((2, 4), mesh.names, types, spec, gshape)
        assert row.make_mesh == _placed_type(
            (2, 4), mesh.names, found.make_mesh_default, spec, gshape
        )
        x = jax.device_put(np.zeros(gshape, np.float32), NamedSharding(plain, P(*spec)))
        assert row.mesh_default == str(jax.typeof(x))
        assert row.per_device == _inside_type((2, 4), mesh.names, types, spec, gshape, axes)
    distinct = {_outside(types), found.make_mesh_default, found.mesh_default}
    assert len(found.unplaced) == len(distinct)  # one run per distinct set of types
    assert {_outside(r.types) for r in found.unplaced} == distinct
    # the trap itself, in JAX's own printing: Explicit carries the sharding, Auto does not
    assert found.args[0].make_mesh == "float32[8@data,16]"
    assert found.args[0].mesh_default == "float32[8,16]"


def _eager_refusal(types, spec, gshape) -> str:
    """The plain eager call the page reads: shard_map on an array not placed by spec."""
    m = jax.make_mesh(
        (2, 4),
        ("data", "model"),
        devices=jax.devices()[:8],
        axis_types=tuple(KIND[t] for t in types),
    )
    try:
        with jax.set_mesh(m):
            jax.shard_map(lambda b: b, in_specs=P(*spec), out_specs=P(*spec))(
                np.zeros(gshape, np.float32)
            )
    except ValueError as err:
        return str(err).strip().splitlines()[0]
    return ""


def test_shard_map_on_an_unplaced_array_is_refused_under_explicit_axes_in_jaxs_words():
    found = meshtypes.read(Mesh((2, 4), ("data", "model")), ARGS)
    assert found.unplaced_name == "x" and found.unplaced_spec == ("data", None)
    runs = {r.label: r for r in found.unplaced}
    assert list(runs) == ["your axis types = jax.make_mesh", "Mesh(...)"]  # one run per types
    for r in found.unplaced:
        assert r.refused == _eager_refusal(r.types, ("data", None), (8, 16))
    made = runs["your axis types = jax.make_mesh"]
    assert "does not match the specs of the input" in made.refused
    # the fix JAX names, run: reshard first, then each device gets its block
    m = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    seen = []

    def f(b):
        seen.append(str(jax.typeof(b)))
        return b

    with jax.set_mesh(m):
        x = jax.reshard(np.zeros((8, 16), np.float32), P("data", None))
        jax.shard_map(f, in_specs=P("data", None), out_specs=P("data", None))(x)
    assert made.fix_per_device == seen[-1] and not made.fix_refused
    auto = runs["Mesh(...)"]
    assert not auto.refused and auto.per_device == "float32[4,16]{V:data}"


def test_a_manual_axis_is_refused_by_set_mesh_in_jaxs_words():
    found = meshtypes.read(Mesh((2, 4), ("data", "model"), ("manual", "explicit")), ARGS)
    m = jax.make_mesh(
        (2, 4),
        ("data", "model"),
        devices=jax.devices()[:8],
        axis_types=(AxisType.Manual, AxisType.Explicit),
    )
    with pytest.raises(ValueError) as err, jax.set_mesh(m):
        pass
    assert found.manual_refused == str(err.value).strip().splitlines()[0]
    assert found.shard_map_axes == ("data",)
    labels = [r.label for r in found.unplaced]  # Manual is Explicit outside: make_mesh's types
    assert labels == ["your axis types = jax.make_mesh", "Mesh(...)"]
    no_manual = meshtypes.read(Mesh((2, 4), ("data", "model")), ARGS)
    assert no_manual.manual_refused == "" and no_manual.shard_map_axes == ("data", "model")


def test_a_mesh_bigger_than_this_process_is_read_on_an_abstract_mesh():
    found = meshtypes.read(Mesh((4, 4), ("data", "model")), ARGS)
    assert found.abstract
    # a type names axes, not their sizes: the same as on a 2x4 mesh of real devices
    for row, (_, gshape, spec) in zip(found.args, ARGS, strict=True):
        assert row.yours == _placed_type((2, 4), ("data", "model"), ("explicit",) * 2, spec, gshape)
    assert found.args[0].per_device == "float32[2,16]{V:data}"  # 8 rows over data=4


def test_every_spec_replicated_runs_no_unplaced_case():
    found = meshtypes.read(Mesh((8,), ("data",)), (("x", (8,), ()),))
    assert found.unplaced_name is None and found.unplaced == ()
    assert found.args[0].yours == "float32[8]"
