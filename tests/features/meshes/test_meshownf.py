"""pmapviz.features.meshes.meshownf: your own f on a mesh is checked before it runs exactly as JAX
would refuse it (shard_map's check_vma included), in the user's shapes; both views then run,
agree with one device, and report each device's memory as the compiled program plans it."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.budgets import memorymodel
from pmapviz.core.expressions import expr
from pmapviz.features.meshes import meshownf, meshplacement, meshviews
from pmapviz.features.meshes.meshspecs import Mesh

MESH = Mesh((2, 4), ("data", "model"))
ARGS = [("argument 1", (8, 16), ("data", None)), ("argument 2", (16, 16), (None, "model"))]
GATHER = "lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')"
DEFAULT = meshownf.MeshF("x, w", "x @ w", GATHER, ("data", None))


def _codes(c: meshownf.ViewsCheck) -> list[str]:
    return [p.code for p in c.problems]


def test_the_default_checks_and_every_shape_comes_from_jax():
    c = meshownf.check(MESH, ARGS, DEFAULT)
    assert c.ok, c.problems
    m = meshplacement.jax_mesh(MESH, jax.devices()[:8])
    xs = [
        jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(m, P(*sp))) for _, s, sp in ARGS
    ]
    with jax.set_mesh(m):
        want = jax.eval_shape(jax.jit(lambda x, w: x @ w), *xs)
    assert c.global_out == want.shape and c.dtype == "float32"
    assert c.local_out == (want.shape[0] // 2, want.shape[1])  # rows split over data only
    assert c.varying == ("data",)


# per-device bodies and out_specs, crossed: the check must refuse exactly what JAX refuses
BODIES = [
    "x @ w",
    "lax.psum(x @ w, 'model')",
    "lax.psum(x @ w, ('data', 'model'))",
    "lax.all_gather(x @ w, 'model', axis=1, tiled=True)",
    GATHER,
    "(x @ w).sum()",
    "lax.pmean((x @ w).sum(), 'data')",
    "x.sum(axis=0)",
]
SPECS = [
    (),
    ("data",),
    ("data", "model"),
    (None, "model"),
    (("data", "model"),),
    ("model", "data"),
    ("data", None, None),
]


def _jax_refuses(body: str, spec) -> bool:
    m = meshplacement.jax_mesh(MESH, jax.devices()[:8])
    f = expr.program("x, w", body).build()
    xs = [
        jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(m, P(*sp))) for _, s, sp in ARGS
    ]
    mapped = jax.shard_map(
        f, mesh=m, in_specs=tuple(P(*sp) for _, _, sp in ARGS), out_specs=P(*spec), check_vma=True
    )
    try:
        jax.eval_shape(mapped, *xs)
    except Exception:  # noqa: BLE001 - any refusal counts
        return True
    return False


@pytest.mark.parametrize("body", BODIES)
def test_out_specs_problems_are_exactly_the_ones_shard_map_refuses(body):
    for spec in SPECS:
        c = meshownf.check(MESH, ARGS, meshownf.MeshF("x, w", "x @ w", body, spec))
        ours = [code for code in _codes(c) if code != "shapes_differ"]  # about the global f
        assert bool(ours) == _jax_refuses(body, spec), (body, spec, c.problems)


def test_a_replication_claim_names_the_axis_and_both_fixes_work():
    bad = meshownf.MeshF(
        "x, w", "x @ w", "lax.all_gather(x @ w, 'model', axis=1, tiled=True)", ("data", None)
    )
    (p,) = meshownf.check(MESH, ARGS, bad).problems
    assert p.code == "claims_replication" and "`model`" in p.message
    assert "lax.psum(..., 'model')" in p.fix and "to='invarying'" in p.fix
    assert "P('data', 'model')" in p.fix  # the axis named in the first free dimension
    assert meshownf.check(MESH, ARGS, DEFAULT).ok  # to='invarying': the second fix


@pytest.mark.parametrize(
    ("f", "code", "words"),
    [
        (meshownf.MeshF("x", "x", "x", ("data",)), "arg_count", "2 shape(s)"),
        (meshownf.MeshF("x, w", "x @", "x", ("data",)), "expression", "global f: column"),
        (
            meshownf.MeshF("x, w", "lax.psum(x, 'data')", "x", ("data",)),
            "collective_in_global",
            "`data`",
        ),
        (meshownf.MeshF("x, w", "x @ w", "lax.psum(x @ w, 'mdl')", ()), "unknown_axis", "`mdl`"),
        (meshownf.MeshF("x, w", "x @ w", "x @ w", ("data", "modl")), "unknown_axis", "`modl`"),
        (meshownf.MeshF("x, w", "x @ w", "x @ w", ("data", "data")), "axis_twice", "`data`"),
        (
            meshownf.MeshF("x, w", "x @ w", "x @ w", ("data", "model", None)),
            "spec_too_long",
            "(4, 4)",
        ),
        (meshownf.MeshF("x, w", "x @ w", "x.T", (None, "data")), "shapes_differ", "(16, 8)"),
        (meshownf.MeshF("x, w", "x @ w", "x @ x", ("data",)), "local_trace", "x (4, 16)"),
        (meshownf.MeshF("x, w", "w @ x", "x", ("data",)), "global_trace", "x (8, 16)"),
    ],
)
def test_each_problem_is_said_in_the_users_shapes_with_a_fix(f, code, words):
    c = meshownf.check(MESH, ARGS, f)
    assert _codes(c) == [code], c.problems
    assert words in c.problems[0].message and c.problems[0].fix


def test_shard_map_hands_f_the_blocks_meshes_place_says():
    seen = {}

    def probe(x, w):
        seen["x"], seen["w"] = x.shape, w.shape
        return x

    m = meshplacement.jax_mesh(MESH, jax.devices()[:8])
    xs = [
        jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(m, P(*sp))) for _, s, sp in ARGS
    ]
    jax.eval_shape(
        jax.shard_map(
            probe, mesh=m, in_specs=(P("data", None), P(None, "model")), out_specs=P("data", None)
        ),
        *xs,
    )
    for name, (_, shape, spec) in zip("xw", ARGS, strict=True):
        assert seen[name] == meshplacement.place(MESH, shape, spec).local_shape


@pytest.fixture(scope="module")
def ran():
    return meshownf.run(MESH, ARGS, DEFAULT, meshownf.check(MESH, ARGS, DEFAULT), repeat=2)


def test_both_views_run_and_agree_with_one_device(ran):
    glob, local = ran
    want = meshviews.one_device(lambda x, w: x @ w, MESH, meshownf.values(ARGS))
    for r in ran:
        assert r.shape == want.shape and r.agrees(), r.summary()
    assert {b.shape for b in local.blocks} == {(4, 16)}  # the checked local output
    assert [c.axes for c in local.collectives] == [("model",)]  # the all_gather, as written
    assert glob.view == "global" and local.view == "per-device"


def test_memory_per_device_is_each_devices_blocks_as_the_compiled_program_plans(ran):
    for r in ran:
        parts = dict(r.memory)
        local_in = sum(
            4 * math.prod(meshplacement.place(MESH, s, sp).local_shape) for _, s, sp in ARGS
        )
        assert parts["arguments"] == local_in  # x's (4, 16) and w's (16, 4) blocks
        assert parts["output"] == 4 * math.prod(r.blocks[0].shape)
        assert r.memory_total() == sum(parts.values())


def test_run_refuses_settings_that_did_not_check():
    bad = meshownf.MeshF("x, w", "x @ w", "x @ w", ("data",))
    with pytest.raises(ValueError, match="check"):
        meshownf.run(MESH, ARGS, bad, meshownf.check(MESH, ARGS, bad))


def test_the_memory_estimate_covers_the_arrays_a_run_holds():
    c = meshownf.check(MESH, ARGS, DEFAULT)
    need = meshownf.run_bytes(MESH, ARGS, c)
    m = meshplacement.jax_mesh(MESH, jax.devices()[:8])
    xs = meshownf.values(ARGS)
    placed = [
        jax.device_put(a, NamedSharding(m, P(*sp))) for a, (_, _, sp) in zip(xs, ARGS, strict=True)
    ]
    held = sum(a.nbytes for a in xs) + sum(
        s.data.nbytes for a in placed for s in a.addressable_shards
    )
    out = 4 * math.prod(c.global_out)
    assert need.total - memorymodel.OVERHEAD >= held + 3 * out
    assert need.device >= sum(s.data.nbytes for a in placed for s in a.addressable_shards)


def test_values_are_float32_of_the_given_shapes_and_reproducible():
    a, b = meshownf.values(ARGS, seed=3), meshownf.values(ARGS, seed=3)
    assert [x.shape for x in a] == [s for _, s, _ in ARGS] and a[0].dtype == np.float32
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], meshownf.values(ARGS, seed=4)[0])


def test_a_huge_intermediate_is_counted_from_xlas_plan_before_anything_runs():
    args = [("x", (64, 64), ("data", None)), ("w", (64, 64), (None, "model"))]
    body = "jnp.sort(x[:, :, None] * w[None], axis=1).sum(axis=1)"  # sort materialises it
    f = meshownf.MeshF("x, w", body, body, ("data", "model"))
    c = meshownf.check(MESH, args, f)
    assert c.ok and c.global_out == (64, 64)
    temps = meshownf.planned_temps(MESH, meshownf.compile_views(MESH, args, f))
    assert temps >= 64**3 * 4  # the (64, 64, 64) float32 product, on one device or all
    plain = meshownf.run_bytes(MESH, args, c)
    assert meshownf.run_bytes(MESH, args, c, temps).total == plain.total + temps


def test_the_axis_types_decide_what_the_global_f_may_do_as_jax_decides_it():
    """x @ w with the contracted dimension split over model: Explicit axes refuse it (the
    plain call here raises the same words), Auto axes let the compiler choose and both views
    run and agree."""
    args = [("x", (8, 16), (None, "model")), ("w", (16, 12), ("model", None))]
    f = meshownf.MeshF("x, w", "x @ w", "lax.psum(x @ w, 'model')", ())
    refused = meshownf.check(MESH, args, f)
    m = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(m, P(None, "model")))
    w = jax.ShapeDtypeStruct((16, 12), jnp.float32, sharding=NamedSharding(m, P("model", None)))
    with pytest.raises(Exception) as err, jax.set_mesh(m):
        jax.eval_shape(jax.jit(lambda a, b: a @ b), x, w)
    assert _codes(refused) == ["global_trace"]
    assert str(err.value).splitlines()[0] in refused.problems[0].message
    assert "make the axes Auto" in refused.problems[0].fix
    auto = Mesh((2, 4), ("data", "model"), ("auto", "auto"))
    checked = meshownf.check(auto, args, f)
    assert checked.ok and checked.global_out == (8, 12)
    assert all(r.agrees() for r in meshownf.run(auto, args, f, checked, repeat=1))
