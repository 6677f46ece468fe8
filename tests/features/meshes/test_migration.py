"""pmapviz.features.meshes.migration: every valid pmap setting has a shard_map equivalent whose
specs and blocks are what JAX itself uses and hands f, and the two agree on the same values; where
shard_map's check_vma refuses what pmap accepted, that is reported, not raised."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning import pmapplacement
from pmapviz.core.planning.planning import plan
from pmapviz.features.meshes import meshsettings, migration
from tests.fakes import actions_held, host_budget

CASES = [  # key, shapes, in_axes, out_axes, axis_name
    ("double", [(8, 4)], (0,), 0, None),
    ("add", [(3, 8), (8, 3)], (1, 0), 1, None),
    ("matmul", [(4, 3, 5), (5, 2)], (0, None), 0, None),
    ("global_sum", [(5, 3)], (0,), None, "i"),
    ("normalise", [(8, 6)], (0,), 0, "dev"),
    ("batched_dot", [(8, 50, 3), (8, 50, 3)], (0, 0), 0, None),
]


def _plan(key, shapes, in_axes, out_axes, name):
    p = plan(
        functions.get(key), shapes, in_axes=in_axes, out_axes=out_axes, axis_name=name, n_devices=8
    )
    assert p.ok, p.problems
    return functions.get(key), p


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_specs_are_the_shardings_pmap_uses_and_blocks_what_shard_map_hands_f(case):
    program, p = _plan(*case)
    eq = migration.equivalent(p)
    assert eq.mesh.shape == (p.devices_used,) and eq.mesh.names == (p.axis_name or "i",)
    for r, leaf in zip(eq.inputs, p.leaves, strict=True):
        pm = pmapplacement.pmap_sharding(
            len(leaf.shape), leaf.axis, p.devices_used, eq.mesh.names[0]
        )
        ours = jax.sharding.NamedSharding(pm.mesh, P(*r.spec))
        assert ours.devices_indices_map(r.shape) == pm.devices_indices_map(r.shape)
        assert r.pmap_block == leaf.local_shape
    seen = []

    def probe(*blocks):
        seen.extend(b.shape for b in blocks)
        return blocks[0]

    m = jax.sharding.Mesh(np.array(jax.devices()[: p.devices_used]), eq.mesh.names)
    jax.eval_shape(
        jax.shard_map(
            probe,
            mesh=m,
            in_specs=tuple(P(*r.spec) for r in eq.inputs),
            out_specs=P(*eq.inputs[0].spec),
        ),
        *[jax.ShapeDtypeStruct(r.shape, jnp.float32) for r in eq.inputs],
    )
    assert seen == [r.shard_map_block for r in eq.inputs]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pmap_and_its_shard_map_agree_on_the_same_values(case):
    program, p = _plan(*case)
    res = migration.run_both(program, p)
    assert res.refused is None and res.agree, res
    assert res.pmap_shapes == (tuple(p.out_shapes),)


def test_a_tree_output_agrees_leaf_by_leaf():
    prog = expr.program("x, y", "{'s': x + y, 't': (x * 2, y.sum())}")
    p = plan(prog, [(8, 4), (8, 4)], in_axes=(0, 0), out_axes=0, n_devices=8)
    eq = migration.equivalent(p)
    assert [r.name for r in eq.outputs] == ["out['s']", "out['t'][0]", "out['t'][1]"]
    res = migration.run_both(prog, p)
    assert res.agree and res.pmap_shapes == ((8, 4), (8, 4), (8,))


def test_an_all_gather_pmap_accepts_with_out_axes_none_is_refused_by_shard_map():
    prog = expr.program("x", "lax.all_gather(x, 'i')")
    p = plan(prog, [(8, 4)], in_axes=(0,), out_axes=None, axis_name="i", n_devices=8)
    assert p.ok  # pmap takes it: every device holds the same gathered array
    res = migration.run_both(prog, p)
    assert not res.agree and "to='invarying'" in res.refused and "JAX says:" in res.refused
    assert res.pmap_shapes == ((8, 4),)
    assert any("out_axes=None" in n for n in migration.equivalent(p).notes)


def test_an_invalid_plan_has_no_equivalent():
    p = plan(functions.get("double"), [(8, 4)], in_axes=(0,), out_axes=None, n_devices=8)
    assert not p.ok
    with pytest.raises(ValueError, match="valid plan"):
        migration.equivalent(p)


def test_the_meshes_settings_parse_and_place_as_the_equivalent_says():
    program, p = _plan(*CASES[2])  # matmul: x mapped, w whole
    found = migration.meshes_settings(migration.equivalent(p), program, meshsettings.MAX_ARGS)
    values, errors = meshsettings.schema(8).parse(found)
    assert not errors, errors
    assert values["mesh"] == (4,) and values["s0"] == (4, 3, 5) and values["p0"] == ("i",)
    assert values["s1"] == (5, 2) and values["p1"] == () and values["s2"] is None
    assert (values["gf"], values["out"]) == ("x", ("i",))  # no devices to check f's body on
    assert values["t0"] == "explicit"  # as the shard_map script's jax.make_mesh
    own = migration.meshes_settings(migration.equivalent(p), program, meshsettings.MAX_ARGS, 8)
    assert (own["gf"], own["lf"], own["out"]) == ("x @ w", "x @ w", "P('i')")  # it checks
    many = expr.program("a, b, c, d", "a + b + c + d")
    p4 = plan(many, [(8, 2)] * 4, in_axes=(0, 0, 0, 0), n_devices=8)
    assert migration.meshes_settings(migration.equivalent(p4), many, meshsettings.MAX_ARGS) is None


def test_spec_rows_show_both_blocks_for_every_array():
    program, p = _plan(*CASES[0])
    rows = migration.spec_rows(migration.equivalent(p))
    assert [r["array"] for r in rows] == ["x", "out"]
    assert rows[0]["PartitionSpec"] == "P('i')" and rows[0]["pmap's block"] == "(4,)"
    assert rows[0]["shard_map's block"] == "(1, 4)"


def test_pmap_beside_shard_map_counts_what_f_makes_in_between():
    """The same outer product as the Timing lab's test: refused before any input exists."""
    from pmapviz.core.budgets import memoryestimates, memorymodel, memorypool

    prog = expr.program("x", "(jnp.einsum('a,b->ab', x, x) @ x).sum()")
    p = plan(prog, [(8, 4000)], n_devices=8)
    with host_budget(256 * 2**20):
        assert memorypool.budget().problem(memoryestimates.live_run_bytes(p, prog.key)) is None
        with pytest.raises(memorymodel.BudgetError, match="the memory budget is 268 MB"):
            migration.run_both(prog, p)
        assert actions_held() == []


SPLITS = [  # key, shapes, in_axes, n_devices: the explorer's cases, the seed's on 3 devices
    ("double", [(3, 4)], (0,), 3),
    ("add", [(3, 8), (8, 3)], (1, 0), 8),  # x's mapped axis is its last: y's is merged
    ("matmul", [(4, 3, 5), (5, 2)], (0, None), 8),
    ("double", [(5, 2, 3)], (1,), 8),
    ("batched_dot", [(3, 3_333_333, 3)] * 2, (0, 0), 3),
]


@pytest.mark.parametrize("case", SPLITS, ids=[f"{c[0]}-{c[1][0]}" for c in SPLITS])
def test_the_direct_split_is_what_jax_gives_each_device_of_the_merged_array(case):
    """The caption's claim, checked: the input with its mapped axis merged into the next,
    placed by its in_specs on the plan's devices, gives each device pmap's block of it, with
    the same values (device j: slice j of the mapped axis); shard_map hands f that block."""
    key, shapes, in_axes, n = case
    p = plan(functions.get(key), shapes, in_axes=in_axes, n_devices=n)
    assert p.ok, p.problems
    found = migration.direct_split(migration.equivalent(p))
    leaf = next(lf for lf in p.leaves if lf.axis is not None and lf.axis + 1 < len(lf.shape))
    used = p.devices_used  # the mapped axis' length: the mesh pmap and shard_map use
    assert (found.name, found.devices, found.block) == (leaf.name, used, leaf.local_shape)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:used]), ("i",))
    seen = []
    jax.eval_shape(
        jax.shard_map(
            lambda b: seen.append(b.shape) or b,
            mesh=mesh,
            in_specs=P(*found.spec),
            out_specs=P(*found.spec),
        ),
        jax.ShapeDtypeStruct(found.merged, jnp.float32),
    )
    assert seen == [found.block]
    if math.prod(found.merged) > 10**6:  # the seed's: shapes only, nothing allocated
        return
    values = np.arange(math.prod(leaf.shape), dtype=np.float32).reshape(leaf.shape)
    placed = jax.device_put(
        values.reshape(found.merged), jax.sharding.NamedSharding(mesh, P(*found.spec))
    )
    for j, shard in enumerate(sorted(placed.addressable_shards, key=lambda s: s.device.id)):
        assert shard.data.shape == found.block
        np.testing.assert_array_equal(np.asarray(shard.data), np.take(values, j, axis=leaf.axis))
    words = found.words()
    assert f"{found.devices:,} devices a {fmt_shape(found.block)} block" in words
    assert f"one {fmt_shape(found.merged)} array" in words


def test_no_direct_split_where_every_mapped_axis_is_the_last():
    """x (8,) mapped on its only axis: shard_map would hand each device a (1,) block where
    pmap hands f a scalar, so the caption says nothing of a direct split."""
    p = plan(functions.get("double"), [(8,)], in_axes=(0,), n_devices=8)
    assert migration.direct_split(migration.equivalent(p)) is None
