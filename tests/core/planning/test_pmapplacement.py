"""Layouts come from JAX shardings; they must match real pmap inputs and outputs shard by shard."""

import jax
import numpy as np
import pytest

from pmapviz.core.expressions import functions
from pmapviz.core.planning import pmapplacement
from pmapviz.core.planning.planning import plan


def real_indices(array):
    return {str(s.device): tuple(s.index) for s in array.addressable_shards}


@pytest.mark.parametrize(
    "shape, in_axis, out_axis",
    [
        ((8, 3), 0, 0),
        ((3, 8), 1, 1),
        ((3, 8), 1, 0),
        ((5, 2, 4), 0, 2),
        ((4,), 0, 0),
        ((2, 6), 0, 1),
    ],
)
def test_output_layout_matches_real_pmap_shards(shape, in_axis, out_axis):
    p = plan(functions.get("double"), [shape], in_axes=in_axis, out_axes=out_axis, n_devices=8)
    assert p.ok
    _, (out_layout,) = pmapplacement.plan_layouts(p)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    y = jax.pmap(
        lambda v: v * 2, in_axes=in_axis, out_axes=out_axis, devices=jax.devices()[: p.devices_used]
    )(x)
    assert out_layout.shape == y.shape
    assert {pc.device: pc.index for pc in out_layout.pieces} == real_indices(y)
    # and the data each device holds is exactly the slice the layout names
    for s in y.addressable_shards:
        piece = next(pc for pc in out_layout.pieces if pc.device == str(s.device))
        np.testing.assert_array_equal(np.asarray(s.data), np.asarray(y)[piece.index])


def test_input_layout_is_what_each_device_receives():
    """Identity under pmap with out_axes = in_axes returns each device's input slice in place."""
    shape, ax = (3, 8, 2), 1
    p = plan(functions.get("double"), [shape], in_axes=ax, out_axes=ax, n_devices=8)
    (in_layout,), _ = pmapplacement.plan_layouts(p)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = jax.pmap(lambda v: v, in_axes=ax, out_axes=ax)(x)
    for s in y.addressable_shards:
        piece = next(pc for pc in in_layout.pieces if pc.device == str(s.device))
        np.testing.assert_array_equal(np.asarray(s.data), x[piece.index])
    assert in_layout.local_shape == (3, 2)


def test_broadcast_argument_is_whole_on_every_device():
    p = plan(functions.get("matmul"), [(4, 3, 5), (5, 2)], in_axes=(0, None), n_devices=8)
    (_, w), _ = pmapplacement.plan_layouts(p)
    assert w.split_axis is None and len(w.pieces) == 4
    assert all(pc.index == (slice(None), slice(None)) for pc in w.pieces)


def test_huge_shapes_are_laid_out_without_allocating():
    p = plan(functions.get("batched_dot"), [(8, 10**9, 3)] * 2, n_devices=8)
    (x, _), (out,) = pmapplacement.plan_layouts(p)
    assert x.pieces[3].index[0] == slice(3, 4) and out.shape == (8, 10**9)


def test_index_text():
    assert pmapplacement.index_text((slice(0, 2), slice(None))) == "[0:2, :]"
    assert pmapplacement.index_text((slice(3, 4, None),)) == "[3:4]"


def test_invalid_plan_has_no_layout():
    with pytest.raises(ValueError):
        pmapplacement.plan_layouts(plan(functions.get("double"), [(80, 2)], n_devices=8))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("shape, axis", [((8, 3), 0), ((3, 8, 2), 1), ((2, 8), None), ((8,), 0)])
def test_index_arithmetic_is_what_jax_gives(n, shape, axis):
    """Beyond this process's devices the layout is computed; it must equal JAX's own map."""
    shape = tuple(n if k == axis else d for k, d in enumerate(shape))
    sharding = pmapplacement.pmap_sharding(len(shape), axis, n)
    where = sharding.devices_indices_map(shape)
    real = [tuple(where[d]) for d in sharding.mesh.devices.flat]
    assert pmapplacement.pmap_indices(len(shape), axis, n) == real


def test_a_bigger_machine_is_laid_out_by_arithmetic():
    p = plan(functions.get("matmul"), [(4096, 4, 5), (5, 2)], in_axes=(0, None), n_devices=4096)
    (x, w), (out,) = pmapplacement.plan_layouts(p)
    assert len(x.pieces) == len(w.pieces) == len(out.pieces) == 4096
    assert x.pieces[4095].device == "device 4095"
    assert x.pieces[17].index == (slice(17, 18), slice(None), slice(None))
    assert w.pieces[9].index_text == "[:, :]" and out.local_shape == (4, 2)


def test_layouts_carry_names_dtypes_shapes_and_device_positions():
    p = plan(
        functions.get("add"),
        [(3, 4), (4, 3)],
        in_axes=(1, 0),
        out_axes=0,
        n_devices=8,
        dtypes=["int32", "int32"],
    )
    (x, y), (out,) = pmapplacement.plan_layouts(p)
    assert (x.name, x.shape, x.dtype, x.split_axis) == ("x", (3, 4), "int32", 1)
    assert (y.name, y.shape, y.dtype, y.split_axis) == ("y", (4, 3), "int32", 0)
    assert (out.name, out.shape, out.dtype, out.split_axis) == ("out", (4, 3), "int32", 0)
    for lay in (x, y, out):
        assert [pc.position for pc in lay.pieces] == [0, 1, 2, 3]
        assert [pc.device for pc in lay.pieces] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    assert x.pieces[2].index == (slice(None), slice(2, 3)) and x.pieces[2].index_text == "[:, 2:3]"


def test_every_leaf_of_a_pytree_output_gets_its_own_layout():
    p = plan(
        lambda x, y: (x * 2, y + 1),
        [(4, 3), (4, 5)],
        out_axes=1,
        n_devices=8,
        dtypes=["float16", "int8"],
    )
    assert p.ok, p.problems
    _, outs = pmapplacement.plan_layouts(p)
    assert [(o.name, o.shape, o.dtype, o.split_axis) for o in outs] == [
        ("out[0]", (3, 4), "float16", 1),
        ("out[1]", (5, 4), "int8", 1),
    ]


def test_layouts_refuse_an_invalid_plan():
    with pytest.raises(ValueError, match="^only a valid plan has a layout$"):
        pmapplacement.plan_layouts(plan(functions.get("double"), [(80, 2)], n_devices=8))


def test_index_text_of_integer_and_stepped_indices():
    assert pmapplacement.index_text((2, slice(None))) == "[2, :]"
    assert pmapplacement.index_text((slice(None, 3), slice(1, None))) == "[:3, 1:]"
    assert pmapplacement.index_text(()) == "[]"


@pytest.mark.parametrize("n_used", [2, 4096])  # this machine, and a bigger one (arithmetic)
def test_array_layout_keeps_the_arrays_name_shape_and_dtype(n_used):
    lay = pmapplacement.array_layout("params['w']", (n_used, 3), "bfloat16", 0, n_used)
    assert (lay.name, lay.shape, lay.dtype, lay.split_axis) == (
        "params['w']",
        (n_used, 3),
        "bfloat16",
        0,
    )
    assert len(lay.pieces) == n_used and lay.local_shape == (3,)


def test_device_rows_name_each_devices_real_slices_and_block_shapes():
    """The explorer's per-device table: each row is what that device really holds (the shards
    of a real pmap output) and the shapes f really receives there (a traced pmap)."""
    p = plan(functions.get("add"), [(4, 6), (4, 6)], in_axes=(0, 0), out_axes=1, n_devices=8)
    inputs, outputs = pmapplacement.plan_layouts(p)
    rows = pmapplacement.device_rows(p, inputs, outputs)
    assert [r["device"] for r in rows] == [str(d) for d in jax.devices()[:4]]
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    seen = []
    y = jax.pmap(
        lambda a, b: (seen.append(a.shape), a + b)[1], out_axes=1, devices=jax.devices()[:4]
    )(x, x)
    truth = real_indices(y)
    for r in rows:
        assert r["out slice"] == pmapplacement.index_text(truth[r["device"]])
        assert r["x slice"] == r["y slice"]
        assert r["f receives"] == ", ".join([str(seen[0])] * 2)
        assert r["f returns"] == str(seen[0])
    assert list(rows[0]) == ["device", "x slice", "y slice", "f receives", "f returns", "out slice"]
