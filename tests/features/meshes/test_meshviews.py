"""pmapviz.features.meshes.meshviews: a function run globally (jit with shardings) and per device
(shard_map)
agrees with one device; blocks land where meshplacement.place says."""

import jax
import numpy as np
import pytest

from pmapviz.features.meshes import meshexamples, meshplacement, meshviews
from pmapviz.features.meshes.meshspecs import Mesh


@pytest.fixture(scope="module")
def results():
    return {e.key: meshexamples.run_example(e, repeat=2) for e in meshexamples.EXAMPLES}


@pytest.mark.parametrize("key", [e.key for e in meshexamples.EXAMPLES])
def test_both_views_agree_with_one_device(results, key):
    example = meshexamples.EXAMPLE[key]
    glob, local = results[key]
    want = meshviews.one_device(example.global_fn, example.mesh, example.args())
    for r in (glob, local):
        assert r.shape == want.shape and r.dtype == "float32"
        assert r.max_abs_diff < 1e-4, r.summary()
        assert len(r.times_s) == 2 and r.median_s > 0
    assert (glob.view, local.view) == ("global", "per-device")


@pytest.mark.parametrize("key", [e.key for e in meshexamples.EXAMPLES])
def test_blocks_are_where_meshes_place_says(results, key):
    example = meshexamples.EXAMPLE[key]
    placed = meshplacement.place(example.mesh, results[key][0].shape, example.out_spec)
    where = {b.device: b.index for b in placed.blocks}
    for r in results[key]:
        assert len(r.blocks) == example.mesh.devices
        assert {b.shape for b in r.blocks} == {placed.local_shape}
        assert {b.device: b.index for b in r.blocks} == where


def test_a_wrong_local_function_is_caught():
    """Forgetting the psum leaves a partial sum on each device: the check sees it."""
    e = meshexamples.EXAMPLE["matmul_psum"]
    r = meshviews.run_per_device(
        lambda x, w: jax.lax.pmax(x @ w, "model"),
        e.mesh,
        e.args(),
        e.in_specs,
        e.out_spec,
        repeat=1,
        reference=e.global_fn,
    )
    assert r.max_abs_diff > 0.1


def test_too_few_devices_is_said():
    with pytest.raises(ValueError, match="needs 16 devices"):
        meshviews.run_global(lambda x: x, Mesh((4, 4), ("a", "b")), [np.ones(4)], [()], ())
